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
/// No timer of its own: readings drive it (udev changes, and the monitor's poll while discharging).
public final class AlarmRiskMonitor: Service, Sendable, CustomStringConvertible {
    public var description: String { "AlarmRiskMonitor" }

    private let stream: AsyncStream<AgentEvent>
    private let alarms: @Sendable () throws -> [Alarm]
    private let clock: any WallClock
    private let logger: Logger
    private let load: @Sendable () throws -> [AlarmRiskTracker.Mark]
    private let save: @Sendable ([AlarmRiskTracker.Mark]) throws -> Void
    private let play: @Sendable (AlarmRiskTracker.Step) async -> Void

    /// Subscribes at once, so no reading published after this returns is missed.
    /// - Parameters:
    ///   - alarms: the alarms now (read at each reading: the command line changes them in another process).
    ///   - clock: for the time zone the alarms ring in (the reading carries its instant).
    ///   - load, save: what has been said, kept across restarts.
    public init(events: EventBus, alarms: @escaping @Sendable () throws -> [Alarm], clock: any WallClock, logger: Logger,
                load: @escaping @Sendable () throws -> [AlarmRiskTracker.Mark] = { [] },
                save: @escaping @Sendable ([AlarmRiskTracker.Mark]) throws -> Void = { _ in },
                play: @escaping @Sendable (AlarmRiskTracker.Step) async -> Void) {
        stream = events.subscribe()
        self.alarms = alarms
        self.clock = clock
        self.logger = logger
        self.load = load
        self.save = save
        self.play = play
    }

    /// The agent's: alarms and marks from the database, nudges through the feedback notifier. The alarms are read
    /// again only after a commit that may have changed them (`MarkedRead`): not after each battery sample.
    public convenience init(events: EventBus, database: DoseTapDatabase, clock: any WallClock, logger: Logger,
                            feedback: FeedbackNotifier) {
        let marks = AlarmRiskRepository(database: database)
        let alarms = MarkedRead<[Alarm]>(database: database)
        self.init(events: events, alarms: { try alarms.value { try AlarmRepository(database: database).load().alarms } }, clock: clock,
                  logger: logger, load: { try marks.load() }, save: { try marks.save($0) }) { step in
            await feedback.play(.batteryNudge, title: step.nudge.header, body: Self.body(step))
        }
    }

    /// The notification's body: which alarm, then the nudge (and the power-off fact).
    public static func body(_ step: AlarmRiskTracker.Step) -> String {
        "Alarm \(step.alarm.time) \"\(DisplayText.escaped(step.alarm.label, maxLength: 60))\": \(step.nudge.fullText)"
    }

    public func run() async throws {
        var tracker: AlarmRiskTracker
        do {
            tracker = AlarmRiskTracker(marks: try load())
        } catch {
            logger.error("cannot read what the alarm re-check already said; starting afresh", metadata: ["error": "\(error)"])
            tracker = AlarmRiskTracker()
        }
        for await event in stream.cancelOnGracefulShutdown() {
            guard case .batteryReading(let status, let now) = event else { continue }
            let current: [Alarm]
            do {
                current = try alarms()
            } catch {
                logger.error("cannot read the alarms for the battery re-check", metadata: ["error": "\(error)"])
                continue
            }
            let observations = current.compactMap { alarm -> AlarmRiskTracker.Observation? in
                guard let next = alarm.nextOccurrence(after: now, in: clock.timeZone) else { return nil }
                let forecast = status.forecast(at: next, now: now)
                return .init(alarm: alarm, occurrence: next, risk: forecast.risk, nudge: forecast.nudge)
            }
            let before = tracker
            let steps = tracker.observe(observations, pluggedIn: status.state.onAC)
            if tracker != before {
                // Kept before the nudge plays: a crash in between loses a nudge rather than repeating one.
                do { try save(tracker.marks) } catch {
                    logger.error("cannot keep what the alarm re-check said", metadata: ["error": "\(error)"])
                }
            }
            for step in steps {
                logger.warning("\(step.nudge.header): \(Self.body(step))", metadata: [
                    "alarm": "\(step.alarm.id)", "occurrence": "\(step.occurrence)",
                ])
                await play(step)
            }
        }
    }
}
