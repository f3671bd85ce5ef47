import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Watches the machine's batteries, records samples, and warns when the alarm is at risk.
///
/// Event-driven: udev add/change/remove events wake it; while (and only while) a system battery is
/// discharging it also samples every `poll_seconds` (60 s at the most often). On AC, or without a
/// battery, nothing is polled.
public final class BatteryMonitor: Service, Sendable, CustomStringConvertible {
    public var description: String { "BatteryMonitor" }
    enum Input: Sendable {
        case supply(PowerSupplyEvent)
        case poll
        case reload
    }

    private let source: any PowerSupplySource
    private let history: (any BatteryHistoryStore)?
    private let clock: any Scheduling
    private let configuration: ConfigurationHolder
    private let logger: Logger
    private let onReady: @Sendable () -> Void
    private let onEvaluated: @Sendable (BatteryStatus) -> Void
    /// Run when a periodic sample is due, before it runs: the agent reads back, in one go, the pages of code the
    /// last sample used (`ResidentPages.warm`), so the sample does not wait on the disk page by page.
    private let beforeSample: @Sendable () -> Void
    private let events: EventBus?
    private let powerOff: PowerOffPolicy
    private let night: NightWatch?
    private let inputs: AsyncStream<Input>
    private let continuation: AsyncStream<Input>.Continuation
    /// Samples closer together than this are not stored (a burst of uevents is one observation).
    private let minimumStoreInterval: TimeInterval = 30

    private let health: StoreHealth?

    public init(source: any PowerSupplySource, history: (any BatteryHistoryStore)?, clock: any Scheduling,
                configuration: ConfigurationHolder, logger: Logger, events: EventBus? = nil,
                powerOff: PowerOffPolicy = .upowerDefault, night: NightWatch? = nil,
                onReady: @escaping @Sendable () -> Void = {},
                onEvaluated: @escaping @Sendable (BatteryStatus) -> Void = { _ in },
                beforeSample: @escaping @Sendable () -> Void = {}, health: StoreHealth? = nil) {
        self.health = health
        self.beforeSample = beforeSample
        self.night = night
        self.events = events
        self.powerOff = powerOff
        self.source = source
        self.history = history
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        self.onReady = onReady
        self.onEvaluated = onEvaluated
        (inputs, continuation) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(512))
    }

    /// Re-evaluates with the current configuration (after a reload).
    public func reevaluate() {
        continuation.yield(.reload)
    }

    public func run() async throws {
        let continuation = self.continuation
        let events = source.events()
        let pump = Task {
            for await event in events { continuation.yield(.supply(event)) }
        }
        var state = MonitorState(estimatorConfiguration: .init())
        var supplies: [String: RawPowerSupply] = [:]
        do {
            for raw in try source.snapshot() { supplies[raw.name] = raw }
        } catch {
            logger.error("cannot read power supplies", metadata: ["error": "\(error)"])
        }
        if let history {
            do {
                let since = clock.now().addingTimeInterval(-state.estimator.configuration.window)
                state.estimator = DrainEstimator(samples: try history.samples(since: since),
                                                 configuration: state.estimator.configuration)
            } catch {
                logger.error("cannot read battery history", metadata: ["error": "\(error)"])
            }
        }
        var poller: Task<Void, Never>?
        defer {
            pump.cancel()
            poller?.cancel()
        }
        func updatePolling(_ needed: Bool) {
            if needed, poller == nil {
                let seconds = configuration.current.pollSeconds
                poller = Task { [clock, beforeSample] in
                    // Through the scheduling port: tests move a fake clock; a wall-clock step re-arms.
                    var next = clock.now().addingTimeInterval(TimeInterval(seconds))
                    while !Task.isCancelled {
                        switch await clock.sleep(until: next) {
                        case .due:
                            beforeSample()
                            continuation.yield(.poll)
                            next = clock.now().addingTimeInterval(TimeInterval(seconds))
                        case .clockChanged:
                            next = clock.now().addingTimeInterval(TimeInterval(seconds))
                        case .cancelled:
                            return
                        }
                    }
                }
            } else if !needed, let running = poller {
                running.cancel()
                poller = nil
            }
        }
        updatePolling(evaluate(supplies, &state))
        onReady()

        await withGracefulShutdownHandler {
            for await input in inputs {
                switch input {
                case .supply(.added(let raw)), .supply(.changed(let raw)):
                    supplies[raw.name] = raw
                case .supply(.removed(let name)):
                    supplies[name] = nil
                case .poll:
                    for name in supplies.keys {
                        supplies[name] = source.read(name: name)
                    }
                case .reload:
                    updatePolling(false) // restart with the new interval
                    state.lastNudge = nil
                }
                updatePolling(evaluate(supplies, &state))
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
    }

    struct MonitorState {
        var estimator: DrainEstimator
        var suspend = SuspendDetector()
        var announcedNoBattery = false
        var lastStatus: (SupplyStatus, Bool)?
        var lastStored: BatterySample?
        var lastNudge: Nudge.Severity??

        init(estimatorConfiguration: DrainEstimator.Configuration) {
            estimator = DrainEstimator(configuration: estimatorConfiguration)
        }
    }

    /// Folds the supplies into a state, records it, logs what changed. Returns whether to poll.
    private func evaluate(_ supplies: [String: RawPowerSupply], _ monitor: inout MonitorState) -> Bool {
        let now = clock.now()
        night?.awake(at: now)
        let state = PowerState(raw: Array(supplies.values))
        if monitor.suspend.resumedSinceLastCheck() {
            monitor.estimator.reset()
            logger.info("resumed from suspend: drain history restarted")
        }
        for reading in state.supplies where !reading.problems.isEmpty {
            logger.debug("power supply values ignored", metadata: [
                "supply": "\(DisplayText.escaped(reading.name))", "problems": "\(DisplayText.escaped(reading.problems.joined(separator: "; "), maxLength: 500))",
            ])
        }
        guard state.present, let sample = state.sample(at: now) else {
            if !monitor.announcedNoBattery {
                // The other supplies it did find (mains, a mouse) are named; with none at all, the line says so
                // instead of an empty `supplies=`.
                let others = state.supplies.map { DisplayText.escaped($0.name) }.joined(separator: ",")
                logger.notice("no system battery found: battery monitoring idles until one appears",
                              metadata: ["supplies": "\(others.isEmpty ? "none" : others)"])
                monitor.announcedNoBattery = true
            }
            monitor.lastStatus = nil
            return false
        }
        monitor.announcedNoBattery = false
        monitor.estimator.record(sample)
        let shouldStore = monitor.lastStored.map {
            now.timeIntervalSince($0.at) >= minimumStoreInterval || $0.onAC != sample.onAC || $0.status != sample.status
                || now < $0.at
        } ?? true
        if shouldStore, let history {
            do {
                try history.append(sample)
                monitor.lastStored = sample
                health?.succeeded()
            } catch {
                // With the agent's store health: told as a state (#51), not a line a minute.
                if let health {
                    health.failed(error, doing: "storing a battery sample", at: now)
                } else {
                    logger.error("cannot store battery sample", metadata: ["error": "\(error)"])
                }
            }
        }
        let status = BatteryStatus(state: state, drain: monitor.estimator.estimate(for: state), powerOff: powerOff,
                                   night: night?.outlook())
        var metadata: Logger.Metadata = [
            "level": "\(Int((state.level ?? 0).rounded()))",
            "status": "\(state.status.rawValue)",
            "onAC": "\(state.onAC)",
            "drainSource": "\(status.drain.source.rawValue)",
        ]
        if let drain = status.drain.percentPerHour { metadata["drainPercentPerHour"] = "\(drain.rounded(places: 2))" }
        if monitor.lastStatus.map({ $0 != (state.status, state.onAC) }) ?? true {
            logger.info("battery", metadata: metadata)
            monitor.lastStatus = (state.status, state.onAC)
        } else {
            logger.debug("battery", metadata: metadata)
        }
        if let alarm = configuration.current.alarm {
            let at = alarm.nextOccurrence(after: now, in: clock.timeZone)
            let forecast = status.alarmForecast(at: at, now: now)
            let severity = forecast.nudge?.severity
            if monitor.lastNudge != .some(severity) {
                if let nudge = forecast.nudge {
                    logger.warning("\(nudge.header): \(nudge.oneLine)", metadata: [
                        "alarm": "\(alarm)", "hoursUntil": "\(forecast.hoursUntil.rounded(places: 2))",
                    ])
                } else if monitor.lastNudge != nil, monitor.lastNudge != .some(nil) {
                    logger.info("battery will last until the alarm", metadata: ["alarm": "\(alarm)"])
                }
                monitor.lastNudge = .some(severity)
            }
        }
        events?.publish(.batteryReading(status, at: now))
        onEvaluated(status)
        return !state.onAC
    }
}
