import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// What a button or a notification can do to the alarm ringing now (`RingAnswers`). While it rings — and
/// for `AlarmRingRules.buttonGrace` after — every added button belongs to the alarm: single press Stop,
/// double press Snooze, anything else nothing; never a dose.
public protocol RingAnswering: Sendable {
    /// True while an alarm rings, and for a few seconds after it ended.
    func claimsButtons(at now: Date) -> Bool
    /// Whether an alarm rings now (not counting the grace after).
    var isRinging: Bool { get }
    /// Stops the ringing alarm; false when none rings (it ended meanwhile).
    @discardableResult func stop(by ender: AlarmRingEnder) -> Bool
    /// Snoozes it for nine minutes; false when none rings.
    @discardableResult func snooze(by ender: AlarmRingEnder) -> Bool
}

/// Rings the alarms (#11). On the scheduling port it waits for the next occurrence or snooze; at it, the
/// `AlarmBell` rings until Stop or Snooze (the command line, a notification, a button) or ten minutes,
/// then records a miss and leaves "Missed alarm HH:MM". After a resume, a reboot or a restart, an
/// occurrence at most ten minutes late rings at once and an older one is recorded as missed
/// (`AlarmPlanner`). One alarm rings at a time; another due meanwhile rings after it (or is missed).
///
/// The alarm sounds first (#51): a ring begins before anything is written, and what it records — its start, its
/// end, a miss — is written with `WritePatience.brief`; what the store refuses (a write lock held by another
/// process, a full disk, a read-only folder) is kept in memory, planned on as if written
/// (`AlarmPlanner.overlay`), and written when the store takes it, tried again on `StoreTrouble`'s back-off. When
/// the store cannot be read, it rings from the alarms it last read. A ring the store cannot record is still
/// answered: `answerHere` ends it in memory.
public final class AlarmService: Service, RingHolder, Sendable, CustomStringConvertible {
    public var description: String { "AlarmService" }

    private struct State {
        var ringing: AlarmBell.Ringing?
        var endedAt: Date?
        /// When the next alarm (or snooze) is due, for the wake-up from suspend.
        var nextAt: Date?
        /// The alarms as last read: rung from when the store cannot be read.
        var tracks: [AlarmTrack]?
        /// Rings dealt with here that the store does not have yet, oldest first: id 0 until their start is written.
        var unsaved: [AlarmRing] = []
        /// When to try the store again while it refuses.
        var retryAt: Date?
    }

    private let store: DataStore
    private let alarms: AlarmUseCases
    private let ringer: AlarmBell
    private let clock: any Scheduling
    private let logger: Logger
    private let events: EventBus?
    private let databaseChanges: AsyncStream<Void>?
    private let health: StoreHealth
    private let loop: PlanningLoop
    private let state = Mutex(State())
    /// The rings kept in memory, copied where a restart finds them (#51); nil: not copied.
    private let kept: KeptFile<[AlarmRing]>?

    /// - Parameters:
    ///   - health: where a store that cannot be written is reported (one for the whole agent); its own when nil.
    ///   - kept: where the rings kept in memory are copied for the next start (the runtime directory); nil: nowhere.
    public init(store: DataStore, alarms: AlarmUseCases, ringer: AlarmBell, clock: any Scheduling, logger: Logger,
                events: EventBus?, databaseChanges: AsyncStream<Void>?, health: StoreHealth? = nil,
                kept: KeptFile<[AlarmRing]>? = nil) {
        self.kept = kept
        self.store = store
        self.alarms = alarms
        self.ringer = ringer
        self.clock = clock
        self.logger = logger
        self.events = events
        self.databaseChanges = databaseChanges
        self.health = health ?? StoreHealth(folder: store.folder, logger: logger)
        loop = PlanningLoop(clock: clock)
    }

    /// Look again now (a change made in this process, a test).
    public func poke() { loop.poke() }

    /// The next alarm or snooze due (nil when none is set), for the wake-up from suspend.
    public var nextAt: Date? { state.withLock { $0.nextAt } }

    public var isRinging: Bool { state.withLock { $0.ringing != nil } }

    /// The ring in progress, if any.
    public var currentRing: AlarmRing? { state.withLock { $0.ringing?.ring } }
    public var ownAlarmRinging: Int? { currentRing?.alarmID }

    /// Rings dealt with here that the store does not have yet (it could not be written).
    public var unsavedRings: [AlarmRing] { state.withLock { $0.unsaved } }

    public func claimsButtons(at now: Date) -> Bool {
        state.withLock { AlarmRingRules.claimsButtons(ringing: $0.ringing != nil, endedAt: $0.endedAt, now: now) }
    }

    public func run() async throws {
        // What an earlier run kept in memory and could not write (#51): kept again, planned on, written when it can be.
        let (earlier, problem) = kept?.load() ?? (nil, nil)
        if let problem { logger.warning("the rings kept by an earlier run are lost: \(problem)") }
        if let earlier, !earlier.isEmpty {
            state.withLock { s in for ring in earlier { Self.keep(ring, in: &s.unsaved) } }
            logger.notice("rings kept in memory by the agent before it restarted are kept again", metadata: ["rings": "\(earlier.count)"])
        }
        // The store can be written again: what was kept in memory is written now, not at the back-off.
        health.whenRecovered { [weak self] in
            self?.state.withLock { $0.retryAt = nil }
            self?.poke()
        }
        await loop.run(databaseChanges: databaseChanges, events: events, replanOn: { event in
            switch event {
            case .settingsChanged, .alarmEnded: true
            default: false
            }
        }, plan: { await tick() })
        if let ringing = state.withLock({ $0.ringing }) {
            // Shutting down while it rings: the sound stops with the agent; the row (or the ring kept) stays
            // `ringing`, so the next start (within ten minutes) rings it again.
            await ringer.finish(ringing)
        }
        keepCopy()
    }

    /// Copies the rings kept in memory where the next start finds them (removed once none is left).
    private func keepCopy() {
        let unsaved = state.withLock { $0.unsaved }
        if let problem = kept?.save(unsaved.isEmpty ? nil : unsaved) { logger.warning("\(problem)") }
    }

    /// Ends the ring in progress here, without the store (`RingAnswers` when the use case could not write the
    /// answer): the sound stops now, the answer is kept in memory and written when the store takes it. False when
    /// nothing rings.
    public func answerHere(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> AlarmRing? {
        precondition(outcome == .stopped || outcome == .snoozed, "a person stops or snoozes")
        let now = clock.now()
        let answered: (AlarmBell.Ringing, AlarmRing)? = state.withLock { s in
            guard let ringing = s.ringing else { return nil }
            var ring = ringing.ring
            ring.outcome = outcome
            ring.endedBy = ender
            ring.endedAt = now
            ring.snoozeUntil = outcome == .snoozed ? now.addingTimeInterval(AlarmRingRules.snoozeInterval) : nil
            Self.keep(ring, in: &s.unsaved)
            s.ringing = nil
            s.endedAt = now
            return (ringing, ring)
        }
        guard let (ringing, ring) = answered else { return nil }
        Task { await ringer.finish(ringing) }
        events?.publish(.alarmEnded(ring))
        keepCopy()
        logger.notice(outcome == .snoozed ? "alarm snoozed; the answer is saved when the data can be written" :
                        "alarm stopped; the answer is saved when the data can be written",
                      metadata: ["alarm": "\(ring.alarmID)", "by": "\(ender.rawValue)"])
        poke()
        return ring
    }

    /// One pass: write what is owed to the store, follow the ring in progress, record what was missed, start what is
    /// due. Returns when to look again.
    @discardableResult
    public func tick() async -> Date? {
        let now = clock.now()
        let zone = clock.timeZone
        var rings: AlarmRingRepository?
        do {
            rings = try store.openIfPresent().map { AlarmRingRepository(database: $0) }
        } catch {
            state.withLock { $0.retryAt = health.failed(error, doing: "opening the alarms", at: now) }
        }
        var wake: [Date] = []
        if let retry = save(rings, now: now) { wake.append(retry) }

        // What the store has, with what this agent did that it does not have yet.
        let read: [AlarmTrack]
        if let rings, let tracks = try? rings.tracks() {
            read = tracks
            state.withLock { $0.tracks = tracks }
        } else if let cached = state.withLock({ $0.tracks }) {
            read = cached
        } else {
            if rings != nil {
                let retry = health.failed(StoreError("cannot read the alarms"), doing: "reading the alarms", at: now)
                wake.append(retry)
            }
            return wake.min()
        }
        // The store read again (it may have changed since), else as last read; with what it does not have yet.
        func known() -> [AlarmTrack] {
            var tracks = state.withLock { $0.tracks } ?? read
            if let rings, let fresh = try? rings.tracks() {
                tracks = fresh
                state.withLock { $0.tracks = fresh }
            }
            return AlarmPlanner.overlay(tracks, unsaved: state.withLock { $0.unsaved })
        }

        // 1. The ring in progress (ours, or one left `ringing` by an agent that stopped while it rang).
        let current = state.withLock { $0.ringing }
        if let ring = lookUp(current, rings: rings) {
            let tracks = AlarmPlanner.overlay(read, unsaved: state.withLock { $0.unsaved })
            if let until = await follow(ring, current: current, tracks: tracks, rings: rings, now: now, zone: zone) {
                wake.append(until)
            }
        } else if let current {
            // Its row is gone (data removed by hand): stop.
            await end(current, outcome: nil)
        }

        // 2. What is due, missed, or next — planned on the alarms as they are now (step 1 may have ended a ring; a
        // miss turns a once alarm off), and again after recording misses.
        var plan = AlarmPlanner.plan(known(), now: now, in: zone)
        for _ in 0..<3 where !plan.missed.isEmpty {
            for missed in plan.missed {
                let ring = AlarmRing(id: 0, alarmID: missed.alarmID, kind: missed.kind, dueAt: missed.dueAt, startedAt: nil,
                                     endedAt: now, outcome: .missed, endedBy: .late, snoozeUntil: nil)
                guard record(missed: ring, rings: rings, now: now) else { continue }
                let alarm = read.first { $0.alarm.id == missed.alarmID }?.alarm
                events?.publish(.alarmMissed(ring, alarm))
                await ringer.announceMissed(alarm, ring: ring, timeZone: zone)
            }
            plan = AlarmPlanner.plan(known(), now: now, in: zone)
        }
        if state.withLock({ $0.ringing }) == nil, let due = plan.ringNow.first,
           let alarm = read.first(where: { $0.alarm.id == due.alarmID })?.alarm {
            // The alarm sounds first; then its ring is written (or kept until the store takes it).
            let ring = AlarmRing(id: 0, alarmID: due.alarmID, kind: due.kind, dueAt: due.dueAt, startedAt: now, endedAt: nil,
                                 outcome: .ringing, endedBy: nil, snoozeUntil: nil)
            await begin(alarm, ring: ring, zone: zone)
            let stored = recordStart(ring, rings: rings, now: now)
            if let givesUp = (stored ?? ring).givesUpAt { wake.append(givesUp) }
            // The others' next occurrences (the ringing one is planned again when it ends).
            plan = AlarmPlanner.plan(known(), now: now, in: zone)
        } else if !plan.ringNow.isEmpty {
            // Another alarm rings: look again when it ends (its end pokes), or at the late limit.
            wake.append(contentsOf: plan.ringNow.map { $0.dueAt.addingTimeInterval(AlarmRingRules.lateLimit) })
        }
        if let next = plan.nextAt { wake.append(next) }
        if let retry = state.withLock({ $0.unsaved.isEmpty ? nil : $0.retryAt }) { wake.append(retry) }
        let nextAt = plan.nextAt
        state.withLock { $0.nextAt = nextAt }
        keepCopy()
        return wake.min()
    }

    /// The ring in progress as it stands: this agent's unsaved answer, else the store's row (the command line may
    /// have answered), else — the store cannot be read — as this agent holds it. With nothing ringing here, a row
    /// left `ringing` by an agent that stopped while it rang.
    private func lookUp(_ current: AlarmBell.Ringing?, rings: AlarmRingRepository?) -> AlarmRing? {
        // Nothing ringing here: a row left `ringing`, or a ring an earlier run kept in memory while it rang (#51).
        guard let current else {
            return (try? rings?.ringing()) ?? state.withLock { $0.unsaved.last { $0.outcome == .ringing && $0.startedAt != nil } }
        }
        if let kept = state.withLock({ $0.unsaved.last { $0.occurrence == current.ring.occurrence } }) { return kept }
        guard current.ring.id > 0, let rings else { return current.ring }
        do {
            return try rings.ring(id: current.ring.id)
        } catch {
            return current.ring
        }
    }

    /// Follows a ring that says `ringing` (or has just ended): ends it when someone answered, the alarm changed, or its
    /// ten minutes are up; resumes it after a restart. Returns when it gives up.
    private func follow(_ ring: AlarmRing, current: AlarmBell.Ringing?, tracks: [AlarmTrack], rings: AlarmRingRepository?,
                        now: Date, zone: TimeZone) async -> Date? {
        guard ring.outcome == .ringing else {
            // Answered — in this agent (a use case, then a poke) or in another process (the command line, then
            // the database's change): stop the sound and say so, once, here where the ring is held.
            if let current {
                await end(current, outcome: ring)
                events?.publish(.alarmEnded(ring))
            }
            return nil
        }
        let track = tracks.first { $0.alarm.id == ring.alarmID }
        // Turned off, removed, or re-armed (new time or repeat) while it rang: it stops.
        if track == nil || track?.alarm.enabled == false || (track?.armedAt ?? .distantPast) >= ring.dueAt {
            let ended = recordEnd(ring, outcome: .stopped, by: .changed, rings: rings, now: now)
            if let current { await end(current, outcome: ended ?? ring) }
            if let ended { events?.publish(.alarmEnded(ended)) }
            logger.notice("alarm changed while it rang: stopped", metadata: ["alarm": "\(ring.alarmID)"])
            return nil
        }
        guard let givesUp = ring.givesUpAt, now < givesUp else {
            let ended = recordEnd(ring, outcome: .missed, by: .timeout, rings: rings, now: now)
            if let current { await end(current, outcome: ended ?? ring) }
            if let ended {
                events?.publish(.alarmEnded(ended))
                await ringer.announceMissed(track?.alarm, ring: ended, timeZone: zone)
            }
            return nil
        }
        if current == nil, let alarm = track?.alarm {
            logger.notice("the agent restarted while an alarm rang: ringing again", metadata: ["alarm": "\(alarm.id)"])
            await begin(alarm, ring: ring, zone: zone)
        }
        return givesUp
    }

    // MARK: - What is written, or kept until it can be

    /// Writes the start of `ring` (which rings already); the stored ring, or nil when it is kept in memory.
    private func recordStart(_ ring: AlarmRing, rings: AlarmRingRepository?, now: Date) -> AlarmRing? {
        if let rings, state.withLock({ $0.unsaved.isEmpty }) {
            do {
                let stored = try rings.start(ring.occurrence, at: ring.startedAt ?? now, patience: .brief)
                health.succeeded()
                state.withLock { s in
                    if s.ringing?.ring.occurrence == ring.occurrence { s.ringing?.ring = stored }
                }
                return stored
            } catch {
                state.withLock { $0.retryAt = health.failed(error, doing: "recording the alarm ringing", at: now) }
            }
        }
        state.withLock { Self.keep(ring, in: &$0.unsaved) }
        return nil
    }

    /// Records `ring` missed without ringing; false when the store (or this agent) had it already.
    private func record(missed ring: AlarmRing, rings: AlarmRingRepository?, now: Date) -> Bool {
        if state.withLock({ $0.unsaved.contains { $0.occurrence == ring.occurrence } }) { return false }
        if let rings, state.withLock({ $0.unsaved.isEmpty }) {
            do {
                let inserted = try rings.recordMissed(ring.occurrence, at: now, patience: .brief)
                health.succeeded()
                return inserted
            } catch {
                state.withLock { $0.retryAt = health.failed(error, doing: "recording a missed alarm", at: now) }
            }
        }
        state.withLock { Self.keep(ring, in: &$0.unsaved) }
        return true
    }

    /// Ends `ring` (stopped because it changed, or missed after ten minutes): the ended ring, or nil when someone
    /// else had answered it first.
    private func recordEnd(_ ring: AlarmRing, outcome: AlarmRingOutcome, by ender: AlarmRingEnder, rings: AlarmRingRepository?,
                           now: Date) -> AlarmRing? {
        let kept = state.withLock { $0.unsaved.contains { $0.occurrence == ring.occurrence } }
        if ring.id > 0, !kept, let rings {
            do {
                let ended = try rings.end(ringID: ring.id, outcome: outcome, by: ender, at: now, patience: .brief)
                health.succeeded()
                return ended
            } catch {
                state.withLock { $0.retryAt = health.failed(error, doing: "recording the end of an alarm", at: now) }
            }
        }
        var ended = ring
        ended.outcome = outcome
        ended.endedBy = ender
        ended.endedAt = now
        ended.snoozeUntil = nil
        state.withLock { Self.keep(ended, in: &$0.unsaved) }
        return ended
    }

    /// Writes what the store does not have yet, oldest first, when the back-off allows; returns when to try again
    /// while it refuses.
    private func save(_ rings: AlarmRingRepository?, now: Date) -> Date? {
        let (pending, retryAt) = state.withLock { ($0.unsaved, $0.retryAt) }
        guard !pending.isEmpty else { return nil }
        if let retryAt, now < retryAt { return retryAt }
        guard let rings else { return state.withLock { $0.retryAt } }
        for ring in pending {
            do {
                var stored: AlarmRing?
                if ring.startedAt == nil {
                    try rings.recordMissed(ring.occurrence, at: ring.endedAt ?? now, patience: .brief)
                } else {
                    let started = ring.id > 0 ? ring : try rings.start(ring.occurrence, at: ring.startedAt ?? now, patience: .brief)
                    stored = started
                    if ring.outcome != .ringing {
                        // nil: someone else answered it first (it is ended either way).
                        stored = try rings.end(ringID: started.id, outcome: ring.outcome, by: ring.endedBy ?? .changed,
                                               at: ring.endedAt ?? now, snoozeUntil: ring.snoozeUntil, patience: .brief) ?? started
                    }
                }
                state.withLock { s in
                    s.unsaved.removeAll { $0.occurrence == ring.occurrence }
                    if let stored, s.ringing?.ring.occurrence == ring.occurrence { s.ringing?.ring = stored }
                }
            } catch {
                if ring.startedAt != nil, ring.id == 0, let started = try? rings.ring(occurrence: ring.occurrence) {
                    // Its start is written (the end was refused): the end is still owed, by the stored id.
                    state.withLock { s in
                        if let i = s.unsaved.firstIndex(where: { $0.occurrence == ring.occurrence }) { s.unsaved[i].id = started.id }
                    }
                }
                let retry = health.failed(error, doing: "saving the alarms' rings kept in memory", at: now)
                state.withLock { $0.retryAt = retry }
                return retry
            }
        }
        logger.notice("the alarms' rings kept in memory are saved", metadata: ["rings": "\(pending.count)"])
        state.withLock { $0.retryAt = nil }
        health.succeeded()
        return nil
    }

    /// Adds `ring` to the unsaved rings, or replaces the one of the same occurrence.
    private static func keep(_ ring: AlarmRing, in unsaved: inout [AlarmRing]) {
        if let i = unsaved.firstIndex(where: { $0.occurrence == ring.occurrence }) {
            let id = unsaved[i].id
            unsaved[i] = ring
            if ring.id == 0 { unsaved[i].id = id }
        } else {
            unsaved.append(ring)
        }
    }

    private func begin(_ alarm: Alarm, ring: AlarmRing, zone: TimeZone) async {
        let ringing = await ringer.start(alarm, ring: ring, timeZone: zone)
        state.withLock {
            $0.ringing = ringing
            $0.endedAt = nil
        }
        events?.publish(.alarmRinging(ring, alarm))
    }

    private func end(_ ringing: AlarmBell.Ringing, outcome: AlarmRing?) async {
        let now = clock.now()
        state.withLock {
            $0.ringing = nil
            $0.endedAt = now
        }
        await ringer.finish(ringing)
        if let outcome, outcome.outcome != .ringing {
            logger.notice("alarm ring ended", metadata: [
                "alarm": "\(outcome.alarmID)", "outcome": "\(outcome.outcome.rawValue)", "by": "\(outcome.endedBy?.rawValue ?? "-")",
            ])
        }
    }
}
