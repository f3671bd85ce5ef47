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
        /// The reminders of the current night this agent fired or found fired: each fires once per due instant,
        /// whatever the store says (#51: a store that could not record one made it fire again at every look).
        var firedHere: Set<Reminder> = []
        /// Fired (or made pointless) here but not recorded yet, with when: written when the store can be.
        var unsaved: [Reminder: Date] = [:]
        /// The log as last read: the plan when the store cannot be read.
        var lastLog: DoseLog?
        /// When to try the store again while it fails.
        var retryAt: Date?
        /// Entries dated in the future this agent logged (once each).
        var announcedSetAside: Set<UUID> = []
    }

    private let repository: DoseRepository
    private let clock: any Scheduling
    private let notifier: any Notifier
    private let logger: Logger
    private let health: StoreHealth
    private let startedAt: Date
    private let databaseChanges: AsyncStream<Void>?
    private let events: EventBus?
    private let loop: PlanningLoop
    private let state = Mutex(State())
    /// The reminders fired but not recorded, copied where a restart finds them (#51); nil: not copied.
    private let kept: KeptFile<[Reminder: Date]>?
    /// A night closed this long after its close by a running agent is "window_expired"; later (the agent
    /// was not running, or the machine slept), "device_powered_off".
    private let closeTolerance: TimeInterval = 120

    /// - Parameters:
    ///   - notifier: posts the reminders; told first when a night is scheduled (`Notifier.nightScheduled`).
    ///   - health: where a store that cannot be written is reported (one for the whole agent); its own when nil.
    public init(repository: DoseRepository, clock: any Scheduling, notifier: any Notifier, logger: Logger,
                databaseChanges: AsyncStream<Void>?, events: EventBus? = nil, health: StoreHealth? = nil,
                kept: KeptFile<[Reminder: Date]>? = nil) {
        self.kept = kept
        self.events = events
        self.repository = repository
        self.clock = clock
        self.notifier = notifier
        self.logger = logger
        self.health = health ?? StoreHealth(folder: repository.database.folder, logger: logger)
        self.databaseChanges = databaseChanges
        startedAt = clock.now()
        loop = PlanningLoop(clock: clock)
    }

    /// Look again now (a write this process made, a test).
    public func poke() {
        loop.poke()
    }

    /// Reminders fired here whose record is not written yet (a store that cannot be written).
    public var unsavedReminders: Int { state.withLock { $0.unsaved.count } }

    public func run() async throws {
        // Reminders an earlier run fired and could not record (#51): fired, so not fired again; recorded when they can be.
        let (earlier, problem) = kept?.load() ?? (nil, nil)
        if let problem { logger.warning("the reminders kept by an earlier run are lost: \(problem)") }
        if let earlier, !earlier.isEmpty {
            state.withLock { s in
                s.unsaved.merge(earlier) { mine, _ in mine }
                s.firedHere.formUnion(earlier.keys)
            }
            logger.notice("reminders fired before the agent restarted, not yet recorded, are kept again", metadata: ["reminders": "\(earlier.count)"])
        }
        // The store can be written again: the reminders fired meanwhile are recorded now, not at the back-off.
        health.whenRecovered { [weak self] in
            self?.state.withLock { $0.retryAt = nil }
            self?.poke()
        }
        // A dose recorded in this process (a button, a notification): plan again at once.
        await loop.run(databaseChanges: databaseChanges, events: events, replanOn: { event in
            if case .doseRecorded = event { return true }
            return false
        }, plan: {
            let next = tick()
            keepCopy()
            return next
        })
        keepCopy()
    }

    /// Copies the reminders fired but not recorded where the next start finds them (removed once none is left).
    private func keepCopy() {
        let unsaved = state.withLock { $0.unsaved }
        if let problem = kept?.save(unsaved.isEmpty ? nil : unsaved) { logger.warning("\(problem)") }
    }

    /// One pass: fire what is due, close the night when it is over, and say when to look again. A store that
    /// cannot be read or written changes neither what fires nor how often: the plan comes from the log as last
    /// read, each reminder fires once, and what could not be recorded is written when the store can be — tried
    /// again on `StoreTrouble`'s back-off, not at once.
    @discardableResult
    public func tick() -> Date? {
        let now = clock.now()
        let zone = clock.timeZone
        let log: DoseLog
        do {
            log = try repository.recentLog(now: now)
            state.withLock { $0.lastLog = log }
            setAside(log, now: now)
        } catch {
            let retry = health.failed(error, doing: "reading the dose log", at: now)
            guard let last = state.withLock({ $0.lastLog }) else { return retry }
            log = last
            state.withLock { $0.retryAt = retry }
        }
        guard let session = log.sessions.last else { return saveFired(now: now) }
        describeChanges(session, now: now)
        var fired = state.withLock { $0.firedHere }
        if let stored = try? repository.firedReminders(session: session.id) { fired.formUnion(stored) }
        let (fire, superseded) = ReminderPlanner.due(session, fired: fired, now: now)
        if let fire {
            notifier.post(ReminderPlanner.notification(for: fire, session: session, now: now))
        }
        let done = (fire.map { [$0] } ?? []) + superseded
        fired.formUnion(done)
        state.withLock { s in
            // Only this night's are kept once written; one not written yet is kept until it is.
            s.firedHere = fired.filter { $0.sessionID == session.id }
            for reminder in done { s.unsaved[reminder] = s.unsaved[reminder] ?? now }
        }
        var wake = [saveFired(now: now)]
        if session.dose2 == nil, session.skip == nil, now >= session.windowClosesAt {
            wake.append(closeNight(session, now: now, zone: zone))
        }
        wake.append(ReminderPlanner.nextDue(session, fired: fired, now: now))
        return wake.compactMap { $0 }.min()
    }

    /// Entries dated in the future (#51): remembered as set aside at once, so one dated tomorrow stays set aside
    /// when tomorrow comes, and logged once each. A store that cannot be written is tried again at the next read
    /// (the entry counts for nothing meanwhile: the rule is by date).
    private func setAside(_ log: DoseLog, now: Date) {
        let fresh = state.withLock { s in
            let fresh = log.setAside.filter { !s.announcedSetAside.contains($0.id) }
            s.announcedSetAside.formUnion(fresh.map(\.id))
            return fresh
        }
        for event in fresh {
            logger.warning("a dose log entry is dated in the future: set aside, it decides nothing",
                           metadata: ["entry": "\(SetAsideNotice.shortID(event.id))", "notice": "\(SetAsideNotice.sentence(event, now: now, in: clock.timeZone))"])
        }
        guard !log.newlySetAside.isEmpty else { return }
        do {
            try repository.rememberSetAside(log.newlySetAside, now: now, patience: .brief)
        } catch {
            logger.debug("cannot remember the entries dated in the future yet", metadata: ["error": "\(error)"])
        }
    }

    /// Writes the reminders fired but not recorded; returns when to try again while the store refuses.
    private func saveFired(now: Date) -> Date? {
        let (unsaved, retryAt) = state.withLock { ($0.unsaved, $0.retryAt) }
        guard !unsaved.isEmpty else { return nil }
        if let retryAt, now < retryAt { return retryAt }
        do {
            for (at, reminders) in Dictionary(grouping: unsaved.keys, by: { unsaved[$0]! }) {
                try repository.markFired(reminders, at: at, patience: .brief)
                state.withLock { s in for reminder in reminders { s.unsaved[reminder] = nil } }
            }
            state.withLock { $0.retryAt = nil }
            health.succeeded()
            return nil
        } catch {
            let retry = health.failed(error, doing: "recording the reminders fired", at: now)
            state.withLock { $0.retryAt = retry }
            return retry
        }
    }

    /// The night got neither Dose 2 nor a skip: recorded as skipped by the agent. Returns when to try again if the
    /// store refused.
    private func closeNight(_ session: NightSession, now: Date, zone: TimeZone) -> Date? {
        if let retryAt = state.withLock({ $0.retryAt }), now < retryAt { return retryAt }
        let onTime = startedAt <= session.windowClosesAt && now.timeIntervalSince(session.windowClosesAt) < closeTolerance
        let reason: SkipReason = onTime ? .windowExpired : .devicePoweredOff
        do {
            switch try repository.submit(DoseInput(command: .autoSkip(reason), source: .agent, issuedAt: now), now: now, timeZone: zone) {
            case .recorded:
                logger.notice("night closed without Dose 2", metadata: ["reason": "\(reason.rawValue)", "night": "\(session.nightDate)"])
            case .refused(let refusal, _):
                logger.debug("night not closed", metadata: ["reason": "\(refusal.message)"])
            }
            return nil
        } catch {
            let retry = health.failed(error, doing: "closing the night without Dose 2", at: now)
            state.withLock { $0.retryAt = retry }
            return retry
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
