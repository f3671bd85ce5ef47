import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle

/// The overnight re-check (#11 §3): at every battery reading the monitor publishes, each enabled alarm's
/// next occurrence is predicted again (with the live drain and the machine's power-off level), and when
/// its risk grows — safe → warning, safe or warning → critical — the `battery-nudge` feedback plays
/// (notification, sound, vibration per its settings): once per step, never twice for the same level of
/// the same occurrence; plugging in ends it and resets. The rules and the baseline are
/// `AlarmRiskTracker`'s. What was said is stored (`AlarmRiskRepository`), so a restart repeats nothing.
///
/// By the deadline (#52): with the machine's nights (the agent's readings carry them) the risk it follows is the
/// nudge decision's (`BatteryStatus.alarmForecast`): silence counts as safe, so an evening that sleep will save says
/// nothing, and the nudge plays when the alarm is at risk even asleep, the machine will not sleep, or the deadline
/// is within `NudgeDecision.margin`. For that last case one timer, through the scheduling port, decides again at the
/// earliest `deadline − margin` of the last reading; a new reading (a plug-in is one) sets it again, and a suspend
/// (`suspending()`, from the sleep guard) drops it until the next reading.
///
/// The guard (#52 §3, `DeadlineGuard`, `[battery] guard`): when an alarm's deadline comes and the machine is still
/// awake on its battery, the nudge plays again (once per occurrence); with `guard = "sleep"` the monitor then reads
/// logind's facts (`Guardian.facts`: idle, inhibitors, `CanSuspend`, the wake-up) and, when every session has been
/// idle `DeadlineGuard.idleFor`, notifies "Going to sleep to keep the 06:30 alarm: battery 31 %" and asks logind to
/// suspend. Until it may it decides again every `DeadlineGuard.retry` and at every reading; the log says each new
/// verdict once. The timer also waits for the earliest deadline itself.
public final class AlarmRiskMonitor: Service, Sendable, CustomStringConvertible {
    public var description: String { "AlarmRiskMonitor" }

    /// A timer that fires later than this after its instant (the machine slept through it unseen) decides nothing:
    /// the next reading does.
    public static let lateLimit: TimeInterval = 5 * 60

    private enum Input: Sendable {
        case reading(BatteryStatus, at: Date)
        case due(Date)
        case suspending
    }

    private let stream: AsyncStream<AgentEvent>
    private let inputs: AsyncStream<Input>
    private let input: AsyncStream<Input>.Continuation
    private let alarms: @Sendable () throws -> [Alarm]
    private let clock: any Scheduling
    private let logger: Logger
    private let load: @Sendable () throws -> [AlarmRiskTracker.Mark]
    private let save: @Sendable ([AlarmRiskTracker.Mark]) throws -> Void
    private let play: @Sendable (AlarmRiskTracker.Step) async -> Void
    private let guardMode: @Sendable () -> SleepGuardMode
    private let guardian: Guardian?

    /// What the guard does through the machine: read logind's facts, notify, suspend.
    public struct Guardian: Sendable {
        public var facts: @Sendable () async -> GuardFacts
        public var notify: @Sendable (_ text: String) async -> Void
        public var suspend: @Sendable () async throws -> Void
        /// Why the machine cannot wake itself for the alarm, or nil (for the line the log says at start).
        public var cannotWake: @Sendable () -> String?

        public init(facts: @escaping @Sendable () async -> GuardFacts, notify: @escaping @Sendable (_ text: String) async -> Void,
                    suspend: @escaping @Sendable () async throws -> Void, cannotWake: @escaping @Sendable () -> String? = { nil }) {
            self.facts = facts
            self.notify = notify
            self.suspend = suspend
            self.cannotWake = cannotWake
        }
    }

    /// Subscribes at once, so no reading published after this returns is missed.
    /// - Parameters:
    ///   - alarms: the alarms now (read at each reading: the command line changes them in another process).
    ///   - clock: the scheduling port (the timer at `deadline − margin`), and the time zone the alarms ring in (the
    ///     reading carries its instant).
    ///   - load, save: what has been said, kept across restarts.
    ///   - guardMode: `[battery] guard` now (read at each decision: a reloaded configuration counts).
    ///   - guardian: the machine's side of the guard (nil: the guard nudges at the deadline but never suspends).
    public init(events: EventBus, alarms: @escaping @Sendable () throws -> [Alarm], clock: any Scheduling, logger: Logger,
                load: @escaping @Sendable () throws -> [AlarmRiskTracker.Mark] = { [] },
                save: @escaping @Sendable ([AlarmRiskTracker.Mark]) throws -> Void = { _ in },
                guardMode: @escaping @Sendable () -> SleepGuardMode = { .off }, guardian: Guardian? = nil,
                play: @escaping @Sendable (AlarmRiskTracker.Step) async -> Void) {
        self.guardMode = guardMode
        self.guardian = guardian
        stream = events.subscribe()
        (inputs, input) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(EventBus.defaultBuffer))
        self.alarms = alarms
        self.clock = clock
        self.logger = logger
        self.load = load
        self.save = save
        self.play = play
    }

    /// The agent's: alarms and marks from the database, nudges through the feedback notifier. The alarms are read
    /// again only after a commit that may have changed them (`MarkedRead`): not after each battery sample.
    public convenience init(events: EventBus, database: DoseTapDatabase, clock: any Scheduling, logger: Logger,
                            feedback: FeedbackNotifier, guardMode: @escaping @Sendable () -> SleepGuardMode = { .off },
                            guardian: Guardian? = nil) {
        let marks = AlarmRiskRepository(database: database)
        let alarms = MarkedRead<[Alarm]>(database: database)
        self.init(events: events, alarms: { try alarms.value { try AlarmRepository(database: database).load().alarms } }, clock: clock,
                  logger: logger, load: { try marks.load() }, save: { try marks.save($0) }, guardMode: guardMode,
                  guardian: guardian) { step in
            await feedback.play(.batteryNudge, title: step.nudge.header, body: Self.body(step))
        }
    }

    /// The notification's body: which alarm, then the nudge (and the power-off fact).
    public static func body(_ step: AlarmRiskTracker.Step) -> String {
        "Alarm \(step.alarm.time) \"\(DisplayText.escaped(step.alarm.label, maxLength: 60))\": \(step.nudge.fullText)"
    }

    /// The machine is going to sleep (`PrepareForSleep(true)`): the timer at `deadline − margin` is dropped — asleep,
    /// the machine keeps its deadline — until the next reading after the resume sets it again.
    public func suspending() {
        input.yield(.suspending)
    }

    /// The risk the tracker follows: the decision's when one was made (silence is safe; nothing known yet is nil),
    /// else the forecast's (the seed's model alone).
    static func observedRisk(_ forecast: BatteryForecast) -> BatteryRisk? {
        guard let decision = forecast.decision else { return forecast.risk }
        if forecast.nudge != nil { return decision.prediction?.risk }
        return decision.why == .unknown ? nil : .safe
    }

    public func run() async throws {
        if let guardian {
            logger.info("the sleep guard: \(DeadlineGuard.summary(mode: guardMode(), cannotWake: guardian.cannotWake()).text)")
        }
        var tracker: AlarmRiskTracker
        do {
            tracker = AlarmRiskTracker(marks: try load())
        } catch {
            logger.error("cannot read what the alarm re-check already said; starting afresh", metadata: ["error": "\(error)"])
            tracker = AlarmRiskTracker()
        }
        let (stream, input) = (self.stream, self.input)
        let pump = Task {
            for await event in stream.cancelOnGracefulShutdown() {
                if case .batteryReading(let status, let now) = event { input.yield(.reading(status, at: now)) }
            }
            input.finish()
        }
        var timer: Task<Void, Never>?
        /// The instant the timer waits for: a `.due` for another (a timer a newer reading replaced) decides nothing.
        var armedAt: Date?
        defer {
            pump.cancel()
            timer?.cancel()
        }
        /// The last reading's battery and each enabled alarm's forecast there.
        var last: (status: BatteryStatus, forecasts: [(alarm: Alarm, occurrence: Date, forecast: BatteryForecast)])?
        var deadlineGuard = DeadlineGuard()
        /// The guard waits for the machine to be left idle (or unblocked): decide again after `DeadlineGuard.retry`.
        var guardWaits = false
        /// The last verdict logged, so each is said once.
        var saidVerdict: String?
        func arm(now: Date) {
            timer?.cancel()
            timer = nil
            var instants = last?.forecasts.compactMap({ $0.forecast.decision?.recheckAt }) ?? []
            if guardMode() != .off, let kept = last,
               let deadline = DeadlineGuard.nextDeadline(kept.forecasts.compactMap { $0.forecast.decision?.deadline }, now: now) {
                instants.append(deadline)
            }
            if guardWaits { instants.append(now.addingTimeInterval(DeadlineGuard.retry)) }
            armedAt = instants.min()
            guard let at = armedAt else { return }
            let clock = self.clock
            timer = Task {
                while true {
                    switch await clock.sleep(until: at) {
                    case .due: input.yield(.due(at)); return
                    case .clockChanged: continue // the same wall-clock instant
                    case .cancelled: return
                    }
                }
            }
        }
        func observe(_ forecasts: [(alarm: Alarm, occurrence: Date, forecast: BatteryForecast)], status: BatteryStatus, now: Date) async {
            let pluggedIn = status.state.onAC
            let observations = forecasts.map {
                AlarmRiskTracker.Observation(alarm: $0.alarm, occurrence: $0.occurrence, risk: Self.observedRisk($0.forecast), nudge: $0.forecast.nudge)
            }
            let before = tracker
            let steps = tracker.observe(observations, pluggedIn: pluggedIn)
            if tracker != before {
                // Kept before the nudge plays: a crash in between loses a nudge rather than repeating one.
                do { try save(tracker.marks) } catch {
                    logger.error("cannot keep what the alarm re-check said", metadata: ["error": "\(error)"])
                }
            }
            for step in steps {
                let why = forecasts.first { $0.alarm.id == step.alarm.id }?.forecast.decision
                logger.warning("\(step.nudge.header): \(Self.body(step))", metadata: [
                    "alarm": "\(step.alarm.id)", "occurrence": "\(step.occurrence)",
                    "nudgeWhy": "\(why?.why.rawValue ?? "-")",
                ])
                await play(step)
            }
            await guardDeadlines(forecasts, status: status, played: steps, now: now)
        }
        /// The guard (`DeadlineGuard`): the deadline nudge, then, with `guard = "sleep"`, the facts and the verdict.
        func guardDeadlines(_ forecasts: [(alarm: Alarm, occurrence: Date, forecast: BatteryForecast)], status: BatteryStatus,
                            played: [AlarmRiskTracker.Step], now: Date) async {
            let mode = guardMode()
            let entries = forecasts.compactMap { entry -> (key: DeadlineGuard.Key, deadline: AlarmDeadline)? in
                entry.forecast.decision.map { (DeadlineGuard.Key(alarm: entry.alarm.id, occurrence: entry.occurrence), $0.deadline) }
            }
            let plan = deadlineGuard.step(entries, onAC: status.state.onAC, mode: mode, now: now)
            guardWaits = false
            for key in plan.nudge {
                guard let entry = forecasts.first(where: { $0.alarm.id == key.alarm && $0.occurrence == key.occurrence }),
                      let nudge = entry.forecast.nudge else { continue }
                let step = AlarmRiskTracker.Step(alarm: entry.alarm, occurrence: entry.occurrence, nudge: nudge)
                logger.warning("the alarm's deadline has come and this machine is awake on its battery: \(nudge.header): \(Self.body(step))",
                               metadata: ["alarm": "\(entry.alarm.id)", "guard": "\(mode.rawValue)"])
                // The risk step just played says the same: not twice in a row.
                if !played.contains(where: { $0.alarm.id == key.alarm && $0.occurrence == key.occurrence }) { await play(step) }
            }
            guard plan.askFacts, let key = plan.guarding,
                  let entry = forecasts.first(where: { $0.alarm.id == key.alarm && $0.occurrence == key.occurrence }) else { return }
            guard let guardian else {
                say("the sleep guard cannot suspend this machine: no system bus (it keeps nudging)")
                return
            }
            let facts = await guardian.facts()
            let level = status.state.level.flatMap { $0.isFinite ? Int($0.rounded(.down)) : nil }
            let verdict = deadlineGuard.verdict(facts, mode: mode, alarm: "\(entry.alarm.time)", level: level, now: now)
            switch verdict {
            case .wait(let because):
                guardWaits = true
                say("the sleep guard waits: \(because)")
            case .never(let because):
                deadlineGuard.asked(key)
                say("the sleep guard will not suspend this machine: \(because)")
            case .suspend(let notification):
                deadlineGuard.asked(key)
                saidVerdict = nil
                logger.notice("the sleep guard: \(notification)", metadata: ["alarm": "\(entry.alarm.id)"])
                await guardian.notify(notification)
                do {
                    try await guardian.suspend()
                } catch {
                    let text = "DoseTap could not put this machine to sleep (\(DisplayText.escaped("\(error)", maxLength: 300))): "
                        + "plug it in or suspend it to keep the \(entry.alarm.time) alarm"
                    logger.error("the sleep guard: \(text)")
                    await guardian.notify(text)
                }
            }
        }
        func say(_ line: String) {
            guard line != saidVerdict else { return }
            saidVerdict = line
            logger.notice("\(line)")
        }
        for await next in inputs {
            switch next {
            case .reading(let status, let now):
                let current: [Alarm]
                do {
                    current = try alarms()
                } catch {
                    logger.error("cannot read the alarms for the battery re-check", metadata: ["error": "\(error)"])
                    continue
                }
                let forecasts = current.compactMap { alarm -> (alarm: Alarm, occurrence: Date, forecast: BatteryForecast)? in
                    guard let next = alarm.nextOccurrence(after: now, in: clock.timeZone) else { return nil }
                    return (alarm, next, status.alarmForecast(at: next, now: now))
                }
                last = (status, forecasts)
                await observe(forecasts, status: status, now: now)
                arm(now: now)
            case .due(let at):
                let now = clock.now()
                guard at == armedAt, let kept = last else { continue }
                armedAt = nil
                guard now.timeIntervalSince(at) <= Self.lateLimit else {
                    logger.info("the battery re-check's timer came late (the machine slept?): waiting for the next reading",
                                metadata: ["due": "\(at.rfc3339(in: clock.timeZone))"])
                    last = nil
                    continue
                }
                // No new reading: each alarm decided again from the deadline the last one found.
                let forecasts = kept.forecasts.map {
                    (alarm: $0.alarm, occurrence: $0.occurrence, forecast: kept.status.alarmForecast($0.forecast, decidedAt: now))
                }
                last = (kept.status, forecasts)
                await observe(forecasts, status: kept.status, now: now)
                arm(now: now)
            case .suspending:
                timer?.cancel()
                timer = nil
                armedAt = nil
                last = nil
                guardWaits = false
                saidVerdict = nil
                deadlineGuard.suspending()
            }
        }
    }
}
