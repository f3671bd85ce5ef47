import Foundation

/// How one ring of an alarm went.
public enum AlarmRingOutcome: String, Sendable, Equatable, CaseIterable, Codable {
    /// Ringing now (or the agent stopped while it rang).
    case ringing
    /// Someone pressed Stop.
    case stopped
    /// Someone pressed Snooze: it rings again `AlarmRingRules.snoozeInterval` later.
    case snoozed
    /// Nobody answered within `AlarmRingRules.ringDuration`, or the occurrence was missed by more than
    /// `AlarmRingRules.lateLimit` (the machine was off or asleep): never rung late.
    case missed
}

/// What made a ring happen: the alarm's own time, or a snooze of it (a snooze is an occurrence too).
public enum AlarmRingKind: String, Sendable, Equatable, CaseIterable, Codable {
    case scheduled
    case snooze
}

/// Who ended a ring.
public enum AlarmRingEnder: String, Sendable, Equatable, CaseIterable, Codable {
    case cli
    case notification
    case button
    case web
    /// A Home Assistant button over the household broker.
    case mqtt
    /// Ten minutes without an answer.
    case timeout
    /// The alarm was turned off, edited or removed while it rang.
    case changed
    /// The occurrence passed while the machine was off or asleep (or the agent not running).
    case late
    /// Another agent of the household answered (#12: Stop or Snooze on a backup).
    case household
}

/// One occurrence of an alarm and what became of it: the ring log (the store's `alarm_ring`).
public struct AlarmRing: Sendable, Equatable, Identifiable {
    public var id: Int64
    public var alarmID: Int
    public var kind: AlarmRingKind
    /// The instant it was due (the alarm's occurrence or the end of a snooze).
    public var dueAt: Date
    /// When it started ringing; nil for an occurrence missed without ringing.
    public var startedAt: Date?
    public var endedAt: Date?
    public var outcome: AlarmRingOutcome
    public var endedBy: AlarmRingEnder?
    /// Set when snoozed: when it rings again.
    public var snoozeUntil: Date?

    public init(id: Int64, alarmID: Int, kind: AlarmRingKind, dueAt: Date, startedAt: Date?, endedAt: Date?,
                outcome: AlarmRingOutcome, endedBy: AlarmRingEnder?, snoozeUntil: Date?) {
        self.id = id
        self.alarmID = alarmID
        self.kind = kind
        self.dueAt = dueAt
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.outcome = outcome
        self.endedBy = endedBy
        self.snoozeUntil = snoozeUntil
    }

    /// When a ring that is still `ringing` gives up and counts as missed.
    public var givesUpAt: Date? { startedAt.map { $0.addingTimeInterval(AlarmRingRules.ringDuration) } }
}

/// The alarm's fixed rules (issue #11).
public enum AlarmRingRules {
    /// A ring nobody answers stops after ten minutes and is recorded as missed.
    public static let ringDuration: TimeInterval = 600
    /// Snooze rings again nine minutes later (unlimited).
    public static let snoozeInterval: TimeInterval = 540
    /// An occurrence found late (after a resume, a reboot, a restart of the agent) rings at once when it is
    /// at most this late; later than that it is recorded as missed, never rung hours late.
    public static let lateLimit: TimeInterval = 600
    /// Button presses this soon after a ring ended still belong to the alarm (a second press meant for
    /// Stop): they are ignored, never taken as a dose.
    public static let buttonGrace: TimeInterval = 10

    /// Whether the buttons belong to an alarm at `now`: while one rings, and `buttonGrace` after it ended.
    public static func claimsButtons(ringing: Bool, endedAt: Date?, now: Date) -> Bool {
        if ringing { return true }
        guard let endedAt else { return false }
        return now >= endedAt && now.timeIntervalSince(endedAt) < buttonGrace
    }
}

/// What the agent knows about one alarm to decide when it rings next.
public struct AlarmTrack: Sendable, Equatable {
    public var alarm: Alarm
    /// Since when it is armed as it is: added, turned on, or its time or repeat changed. Occurrences
    /// before this never ring.
    public var armedAt: Date
    /// The latest ring of each kind, if any.
    public var lastScheduled: AlarmRing?
    public var latest: AlarmRing?

    public init(alarm: Alarm, armedAt: Date, lastScheduled: AlarmRing?, latest: AlarmRing?) {
        self.alarm = alarm
        self.armedAt = armedAt
        self.lastScheduled = lastScheduled
        self.latest = latest
    }
}

/// Decides, purely, what is due: which occurrences ring now, which were missed, and when to look again.
public enum AlarmPlanner {
    public struct Due: Sendable, Equatable {
        public var alarmID: Int
        public var kind: AlarmRingKind
        public var dueAt: Date
        public init(alarmID: Int, kind: AlarmRingKind, dueAt: Date) {
            self.alarmID = alarmID
            self.kind = kind
            self.dueAt = dueAt
        }
    }

    public struct Plan: Sendable, Equatable {
        /// Occurrences missed by more than the late limit: recorded as missed, not rung.
        public var missed: [Due] = []
        /// Occurrences due now (at most `lateLimit` late), earliest first. The agent rings one at a time.
        public var ringNow: [Due] = []
        /// The next occurrence or snooze still ahead, for the timer and the wake-up from suspend.
        public var nextAt: Date?
        public init(missed: [Due] = [], ringNow: [Due] = [], nextAt: Date? = nil) {
            self.missed = missed
            self.ringNow = ringNow
            self.nextAt = nextAt
        }
    }

    /// The occurrence of `track` still to be dealt with: the pending snooze, else the first scheduled
    /// occurrence after both the last one dealt with and the moment it was armed. nil when the alarm is
    /// off or is ringing now.
    public static func pending(_ track: AlarmTrack, in timeZone: TimeZone) -> [Due] {
        guard track.alarm.enabled, track.latest?.outcome != .ringing else { return [] }
        var due: [Due] = []
        // A snooze made before the alarm was re-armed (turned off and on, edited) is void.
        if let latest = track.latest, latest.outcome == .snoozed, let until = latest.snoozeUntil,
           (latest.endedAt ?? latest.dueAt) >= track.armedAt {
            due.append(Due(alarmID: track.alarm.id, kind: .snooze, dueAt: until))
        }
        let after = max(track.armedAt, track.lastScheduled?.dueAt ?? .distantPast)
        if let next = track.alarm.nextOccurrence(after: after, in: timeZone) {
            due.append(Due(alarmID: track.alarm.id, kind: .scheduled, dueAt: next))
        }
        return due
    }

    /// The plan at `now`. Of a run of scheduled occurrences that passed unanswered (the machine was off for
    /// a week), only the latest counts: it rings when it is at most `lateLimit` late (and the one before it
    /// is recorded as missed), else it is recorded as missed — one miss, not seven.
    public static func plan(_ tracks: [AlarmTrack], now: Date, in timeZone: TimeZone) -> Plan {
        var plan = Plan()
        var ahead: [Date] = []
        for track in tracks {
            for due in pending(track, in: timeZone) {
                if due.dueAt > now {
                    ahead.append(due.dueAt)
                    continue
                }
                var last = due.dueAt
                var previous: Date?
                if due.kind == .scheduled {
                    var steps = 0
                    while steps < 1000, let next = track.alarm.nextOccurrence(after: last, in: timeZone), next <= now {
                        previous = last
                        last = next
                        steps += 1
                    }
                }
                if now.timeIntervalSince(last) <= AlarmRingRules.lateLimit {
                    if let previous { plan.missed.append(Due(alarmID: due.alarmID, kind: due.kind, dueAt: previous)) }
                    plan.ringNow.append(Due(alarmID: due.alarmID, kind: due.kind, dueAt: last))
                } else {
                    plan.missed.append(Due(alarmID: due.alarmID, kind: due.kind, dueAt: last))
                }
            }
        }
        plan.ringNow.sort { ($0.dueAt, $0.alarmID) < ($1.dueAt, $1.alarmID) }
        plan.missed.sort { ($0.dueAt, $0.alarmID) < ($1.dueAt, $1.alarmID) }
        plan.nextAt = ahead.min()
        return plan
    }
}

/// How loud the alarm sound is at a moment of its ring: rising from 30 % to full over the first 30 s.
public enum AlarmVolume {
    public static let start = 0.3
    public static let rampSeconds: TimeInterval = 30

    public static func at(elapsed: TimeInterval) -> Double {
        guard elapsed.isFinite, elapsed > 0 else { return start }
        return min(1, start + (1 - start) * elapsed / rampSeconds)
    }
}
