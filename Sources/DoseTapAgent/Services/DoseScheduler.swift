import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Rings each reminder of the night once, when due, and closes a night that got neither Dose 2 nor a
/// skip. Wakes only when something is due or the database changed (the command line wrote to it):
/// no polling. After a restart it rebuilds the plan from the log and fires what is due, once.
public final class DoseScheduler: Service, Sendable, CustomStringConvertible {
    public var description: String { "DoseScheduler" }

    struct State {
        var knownSession: UUID?
        var knownDose2 = false
        var knownSnoozes = 0
    }

    private let repository: DoseRepository
    private let clock: any Scheduling
    private let notifier: any Notifier
    private let logger: Logger
    private let startedAt: Date
    private let databaseChanges: AsyncStream<Void>?
    private let events: EventBus?
    private let loop: PlanningLoop
    private let state = Mutex(State())
    /// A night closed this long after its close by a running agent is "window_expired"; later (the agent
    /// was not running, or the machine slept), "device_powered_off".
    private let closeTolerance: TimeInterval = 120

    /// - Parameter notifier: posts the reminders; told first when a night is scheduled (`Notifier.nightScheduled`).
    public init(repository: DoseRepository, clock: any Scheduling, notifier: any Notifier, logger: Logger,
                databaseChanges: AsyncStream<Void>?, events: EventBus? = nil) {
        self.events = events
        self.repository = repository
        self.clock = clock
        self.notifier = notifier
        self.logger = logger
        self.databaseChanges = databaseChanges
        startedAt = clock.now()
        loop = PlanningLoop(clock: clock)
    }

    /// Look again now (a write this process made, a test).
    public func poke() {
        loop.poke()
    }

    public func run() async throws {
        // A dose recorded in this process (a button, a notification): plan again at once.
        await loop.run(databaseChanges: databaseChanges, events: events, replanOn: { event in
            if case .doseRecorded = event { return true }
            return false
        }, plan: { tick() })
    }

    /// One pass: fire what is due, close the night when it is over, and say when to look again.
    @discardableResult
    public func tick() -> Date? {
        let now = clock.now()
        let zone = clock.timeZone
        do {
            let log = try repository.recentLog(now: now)
            guard let session = log.sessions.last else { return nil }
            describeChanges(session, now: now)
            var fired = try repository.firedReminders(session: session.id)
            let (fire, superseded) = ReminderPlanner.due(session, fired: fired, now: now)
            if let fire {
                notifier.post(ReminderPlanner.notification(for: fire, session: session, now: now))
            }
            let done = (fire.map { [$0] } ?? []) + superseded
            try repository.markFired(done, at: now)
            fired.formUnion(done)
            if session.dose2 == nil, session.skip == nil, now >= session.windowClosesAt {
                let onTime = startedAt <= session.windowClosesAt && now.timeIntervalSince(session.windowClosesAt) < closeTolerance
                let reason: SkipReason = onTime ? .windowExpired : .devicePoweredOff
                switch try repository.submit(DoseInput(command: .autoSkip(reason), source: .agent, issuedAt: now), now: now, timeZone: zone) {
                case .recorded:
                    logger.notice("night closed without Dose 2", metadata: ["reason": "\(reason.rawValue)", "night": "\(session.nightDate)"])
                case .refused(let refusal, _):
                    logger.debug("night not closed", metadata: ["reason": "\(refusal.message)"])
                }
            }
            return ReminderPlanner.nextDue(session, fired: fired, now: now)
        } catch {
            logger.error("cannot read the dose log; retrying in a minute", metadata: ["error": "\(error)"])
            return now.addingTimeInterval(60)
        }
    }

    private func describeChanges(_ session: NightSession, now: Date) {
        let clockText = ClockText(timeZone: clock.timeZone)
        state.withLock { s in
            if s.knownSession != session.id {
                s.knownSession = session.id
                s.knownDose2 = session.dose2 != nil
                s.knownSnoozes = session.snoozes.count
                if session.isActive(at: now) {
                    notifier.nightScheduled(session: session.id)
                    logger.info("night scheduled", metadata: [
                        "night": "\(session.nightDate)", "opens": "\(clockText.time(session.windowOpensAt))",
                        "reminder": "\(clockText.time(session.reminderAt))", "closes": "\(clockText.time(session.windowClosesAt))",
                    ])
                }
                return
            }
            if session.snoozes.count != s.knownSnoozes {
                s.knownSnoozes = session.snoozes.count
                logger.info("reminder snoozed", metadata: ["reminder": "\(clockText.time(session.reminderAt))"])
            }
            if (session.dose2 != nil) != s.knownDose2 {
                s.knownDose2 = session.dose2 != nil
                logger.info(s.knownDose2 ? "Dose 2 recorded: reminders cancelled" : "Dose 2 undone: reminders back")
            }
        }
    }
}
