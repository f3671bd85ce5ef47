import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Usage alerts in the agent (#13): every battery reading (the power supplies after each battery-monitor
/// evaluation, a button's cell when it reports) goes through `AlertRules` with the source's stored state;
/// an alert is recorded with its state in one transaction, then played as `usage-alert` (critical shown
/// as critical) with a "Snooze 1h" button. When a snooze ends, whatever still exceeds fires at once (a
/// timer on the scheduling port). No timer otherwise: readings drive it.
public final class AlertService: Service, Sendable, CustomStringConvertible {
    public var description: String { "AlertService" }

    /// The tag and button of an alert's notification.
    public static let notificationTag = "usage-alert"
    public static let snoozeAction = (key: "alerts-snooze-1h", label: "Snooze 1h")

    private let database: DoseTapDatabase
    private let events: EventBus
    private let clock: any Scheduling
    private let logger: Logger
    private let deliver: @Sendable (_ level: AlertLevel, _ message: String) async -> Void
    private let snoozeTimer = Mutex<Task<Void, Never>?>(nil)
    /// The settings, overrides and states as last read, kept until a commit may have changed them (not after
    /// each battery sample: `MarkedRead`).
    private let stored: MarkedRead<Stored>
    private struct Stored: Sendable {
        var settings: AlertSettings
        var overrides: [String: AlertSourceOverride]
        var states: [String: AlertSourceState]
    }
    private let commands: @Sendable () -> [AlertCommandSource]
    private let runner: (any CommandRunner)?

    /// - Parameters:
    ///   - commands: the `[[alerts.command]]` sources now (read again after each reload of config.toml),
    ///     each run every `interval` seconds by `runner`.
    ///   - deliver: plays one alert (the agent: `FeedbackNotifier`, event `usage-alert`).
    public init(database: DoseTapDatabase, events: EventBus, clock: any Scheduling, logger: Logger,
                commands: @escaping @Sendable () -> [AlertCommandSource] = { [] }, runner: (any CommandRunner)? = nil,
                deliver: @escaping @Sendable (_ level: AlertLevel, _ message: String) async -> Void) {
        self.commands = commands
        self.runner = runner
        self.database = database
        stored = MarkedRead(database: database)
        self.events = events
        self.clock = clock
        self.logger = logger
        self.deliver = deliver
    }

    /// The agent's delivery: the feedback path, with the Snooze 1h button.
    public static func feedbackDelivery(_ feedback: FeedbackNotifier) -> @Sendable (AlertLevel, String) async -> Void {
        { level, message in
            await feedback.play(.usageAlert, title: message, body: "", buttons: [snoozeAction], critical: level == .critical,
                                tag: notificationTag)
        }
    }

    public func run() async throws {
        let stream = events.subscribe()
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        defer { snoozeTimer.withLock { $0?.cancel() } }
        armSnooze(wake)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in wakes { await self.reconsider() }
                }
                if let runner = self.runner {
                    group.addTask { await self.followCommands(runner: runner) }
                }
                group.addTask {
                    for await event in stream {
                        switch event {
                        case .batteryReading(let status, _):
                            let readings = AlertSourceReading.from(supplies: status.state.supplies, buttonLevels: [:])
                            await self.observe(readings)
                        case .buttonBattery(let name, let level):
                            await self.observe([AlertSourceReading(name: "button:\(name)", kind: .button, usage: 100 - min(100, max(0, level)))])
                        case .settingsChanged:
                            self.armSnooze(wake)
                            await self.reconsider()
                        default:
                            break
                        }
                    }
                }
                // The event loop ends only with the bus or the service; the command loops run until then.
                while await group.next() != nil, !Task.isCancelled {}
                group.cancelAll()
            }
        }
    }

    /// The snooze's end, on the scheduling port: look again then.
    private func armSnooze(_ wake: AsyncStream<Void>.Continuation) {
        let until = try? AlertRepository(database: database).settings().snoozedUntil
        let clock = self.clock
        let task: Task<Void, Never>? = until.flatMap { until in
            until > clock.now() ? Task { if await clock.sleep(until: until) == .due { wake.yield() } } : nil
        }
        snoozeTimer.withLock { timer in
            timer?.cancel()
            timer = task
        }
    }

    /// The command sources, started again whenever a reload of config.toml changed them.
    private func followCommands(runner: any CommandRunner) async {
        let reloads = events.subscribe()
        var current = commands()
        var loops = current.map { command in Task { await self.follow(command, runner: runner) } }
        defer { loops.forEach { $0.cancel() } }
        for await event in reloads {
            guard case .configurationReloaded = event else { continue }
            let fresh = commands()
            guard fresh != current else { continue }
            loops.forEach { $0.cancel() }
            current = fresh
            loops = current.map { command in Task { await self.follow(command, runner: runner) } }
            logger.notice("alert commands reloaded", metadata: ["commands": "\(current.map { DisplayText.escaped($0.name) }.joined(separator: ", "))"])
        }
    }

    /// A command source: run now, then every `interval` seconds (on the scheduling port). A run that fails,
    /// prints no usable number or is killed at its timeout is a failed read (unreadable after 3).
    func follow(_ command: AlertCommandSource, runner: any CommandRunner) async {
        while !Task.isCancelled {
            var usage: Double?
            do {
                let output = try await runner.output(of: command.argv, timeout: TimeInterval(command.timeout))
                if let remaining = AlertCommandSource.remaining(in: output) {
                    usage = 100 - remaining
                } else {
                    logger.notice("alert command printed no percentage (0…100) first", metadata: [
                        "source": "\(DisplayText.escaped(command.name))", "output": "\(DisplayText.escaped(output, maxLength: 80))",
                    ])
                }
            } catch {
                logger.notice("alert command failed", metadata: ["source": "\(DisplayText.escaped(command.name))", "error": "\(error)"])
            }
            await observe([AlertSourceReading(name: command.name, kind: .command, usage: usage)])
            if await clock.sleep(for: TimeInterval(command.interval)) == .cancelled { return }
        }
    }

    /// One cycle of each source read: the rules, the state and history written, the alerts played.
    public func observe(_ readings: [AlertSourceReading]) async {
        await evaluate(readings.map { ($0.name, $0.usage) }, countsAsRead: true)
    }

    /// The sources' last usages again (a snooze ended, the thresholds changed): what now exceeds fires;
    /// nothing counts as a failed read.
    public func reconsider() async {
        let states = (try? AlertRepository(database: database).states()) ?? [:]
        let known = states.filter { !$0.value.isUnreadable }.compactMap { name, state in state.usage.map { (name: name, usage: Optional($0)) } }
        await evaluate(known.sorted { $0.name < $1.name }, countsAsRead: false)
    }

    private func evaluate(_ readings: [(name: String, usage: Double?)], countsAsRead: Bool) async {
        let repository = AlertRepository(database: database)
        let now = clock.now()
        let settings: AlertSettings
        let overrides: [String: AlertSourceOverride]
        var states: [String: AlertSourceState]
        do {
            let read = try stored.value {
                Stored(settings: try repository.settings(), overrides: try repository.overrides(), states: try repository.states())
            }
            (settings, overrides, states) = (read.settings, read.overrides, read.states)
        } catch {
            logger.error("cannot read the alert settings; no usage alert until they can be read", metadata: ["error": "\(error)"])
            return
        }
        let snoozed = settings.isSnoozed(at: now)
        for (name, usage) in readings {
            let own = overrides[name] ?? AlertSourceOverride()
            guard own.enabled else { continue }
            let thresholds = (try? own.effective(settings.thresholds)) ?? settings.thresholds
            var state = states[name] ?? AlertSourceState()
            let before = state
            let outcome = AlertRules.observe(usage: usage, state: &state, thresholds: thresholds, snoozed: snoozed)
            if !countsAsRead {
                // A last usage seen again is not a read: the count of failed reads stays as it was.
                state.failures = before.failures
                state.reportedUnreadable = before.reportedUnreadable
            }
            if outcome.becameUnreadable {
                logger.warning("battery unreadable for 3 cycles: no usage alert for it until it reads again",
                               metadata: ["source": "\(DisplayText.escaped(name))"])
            }
            let record = outcome.alert.map { AlertRecord(at: now, source: name, usage: usage ?? 100, level: $0) }
            guard state != before || record != nil else { continue }
            do {
                try repository.record(name, state: state, alert: record)
            } catch {
                logger.error("cannot record the usage alert: not played now, it fires at the next reading", metadata: ["error": "\(error)"])
                continue
            }
            states[name] = state
            if let record {
                let message = settings.template(record.level).render(source: DisplayText.escaped(name), usage: record.usage, level: record.level)
                // The feedback path logs it (event usage-alert) with the sound and vibration it plays.
                await deliver(record.level, message)
            }
        }
    }
}
