import Foundation

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
