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
public final class AlarmService: Service, RingHolder, Sendable, CustomStringConvertible {
    public var description: String { "AlarmService" }

    private struct State {
        var ringing: AlarmBell.Ringing?
        var endedAt: Date?
        /// When the next alarm (or snooze) is due, for the wake-up from suspend.
        var nextAt: Date?
    }

    private let store: DataStore
    private let alarms: AlarmUseCases
    private let ringer: AlarmBell
    private let clock: any Scheduling
    private let logger: Logger
    private let events: EventBus?
    private let databaseChanges: AsyncStream<Void>?
    private let loop: PlanningLoop
    private let state = Mutex(State())

    public init(store: DataStore, alarms: AlarmUseCases, ringer: AlarmBell, clock: any Scheduling, logger: Logger,
                events: EventBus?, databaseChanges: AsyncStream<Void>?) {
        self.store = store
        self.alarms = alarms
        self.ringer = ringer
        self.clock = clock
        self.logger = logger
        self.events = events
        self.databaseChanges = databaseChanges
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

    public func claimsButtons(at now: Date) -> Bool {
        state.withLock { AlarmRingRules.claimsButtons(ringing: $0.ringing != nil, endedAt: $0.endedAt, now: now) }
    }

    public func run() async throws {
        await loop.run(databaseChanges: databaseChanges, events: events, replanOn: { event in
            switch event {
            case .settingsChanged, .alarmEnded: true
            default: false
            }
        }, plan: { await tick() })
        if let ringing = state.withLock({ $0.ringing }) {
            // Shutting down while it rings: the sound stops with the agent; the row stays `ringing`, so the next
            // start (within ten minutes) rings it again.
            await ringer.finish(ringing)
        }
    }

    /// One pass: follow the ring in progress, record what was missed, start what is due. Returns when to
    /// look again.
    @discardableResult
    public func tick() async -> Date? {
        let now = clock.now()
        let zone = clock.timeZone
        let database: DoseTapDatabase
        do {
            guard let opened = try store.openIfPresent() else { return nil }
            database = opened
        } catch {
            logger.error("cannot read the alarms", metadata: ["error": "\(error)"])
            return clock.now().addingTimeInterval(60)
        }
        let rings = AlarmRingRepository(database: database)
        do {
            let tracks = try rings.tracks()
            var wake: [Date] = []

            // 1. The ring in progress (ours, or one left `ringing` by an agent that stopped while it rang).
            let current = state.withLock { $0.ringing }
            let stored = try current.map { try rings.ring(id: $0.ring.id) } ?? rings.ringing()
            if let ring = stored {
                if let until = try await follow(ring, current: current, tracks: tracks, rings: rings, now: now, zone: zone) {
                    wake.append(until)
                }
            } else if let current {
                // Its row is gone (data removed by hand): stop.
                await end(current, outcome: nil)
            }

            // 2. What is due, missed, or next — planned on the rows as they are now (step 1 may have ended a
            // ring; a miss turns a once alarm off), and again after recording misses.
            var known = try rings.tracks()
            var plan = AlarmPlanner.plan(known, now: now, in: zone)
            for _ in 0..<3 where !plan.missed.isEmpty {
                for missed in plan.missed {
                    guard try rings.recordMissed(missed, at: now) else { continue }
                    let ring = AlarmRing(id: 0, alarmID: missed.alarmID, kind: missed.kind, dueAt: missed.dueAt, startedAt: nil,
                                         endedAt: now, outcome: .missed, endedBy: .late, snoozeUntil: nil)
                    let alarm = known.first { $0.alarm.id == missed.alarmID }?.alarm
                    events?.publish(.alarmMissed(ring, alarm))
                    await ringer.announceMissed(alarm, ring: ring, timeZone: zone)
                }
                known = try rings.tracks()
                plan = AlarmPlanner.plan(known, now: now, in: zone)
            }
            if state.withLock({ $0.ringing }) == nil, let due = plan.ringNow.first,
               let alarm = known.first(where: { $0.alarm.id == due.alarmID })?.alarm {
                let ring = try rings.start(due, at: now)
                await begin(alarm, ring: ring, zone: zone)
                if let givesUp = ring.givesUpAt { wake.append(givesUp) }
                // The others' next occurrences (the ringing one is planned again when it ends).
                plan = AlarmPlanner.plan(try rings.tracks(), now: now, in: zone)
            } else if !plan.ringNow.isEmpty {
                // Another alarm rings: look again when it ends (its end pokes), or at the late limit.
                wake.append(contentsOf: plan.ringNow.map { $0.dueAt.addingTimeInterval(AlarmRingRules.lateLimit) })
            }
            if let next = plan.nextAt { wake.append(next) }
            let nextAt = plan.nextAt
            state.withLock { $0.nextAt = nextAt }
            return wake.min()
        } catch {
            logger.error("cannot ring the alarms", metadata: ["error": "\(error)"])
            return clock.now().addingTimeInterval(60)
        }
    }

    /// Follows a ring whose row says `ringing` (or has just ended): ends it when someone answered, the alarm
    /// changed, or its ten minutes are up; resumes it after a restart. Returns when it gives up.
    private func follow(_ ring: AlarmRing, current: AlarmBell.Ringing?, tracks: [AlarmTrack], rings: AlarmRingRepository,
                        now: Date, zone: TimeZone) async throws -> Date? {
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
            let ended = try rings.end(ringID: ring.id, outcome: .stopped, by: .changed, at: now)
            if let current { await end(current, outcome: ended ?? ring) }
            if let ended { events?.publish(.alarmEnded(ended)) }
            logger.notice("alarm changed while it rang: stopped", metadata: ["alarm": "\(ring.alarmID)"])
            return nil
        }
        guard let givesUp = ring.givesUpAt, now < givesUp else {
            let ended = try rings.end(ringID: ring.id, outcome: .missed, by: .timeout, at: now)
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
