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
public struct AlarmRing: Sendable, Equatable, Identifiable, Codable {
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

/// How loud the alarm sound is at a moment of its ring: rising from 30 % to full over the first 30 s.
public enum AlarmVolume {
    public static let start = 0.3
    public static let rampSeconds: TimeInterval = 30

    public static func at(elapsed: TimeInterval) -> Double {
        guard elapsed.isFinite, elapsed > 0 else { return start }
        return min(1, start + (1 - start) * elapsed / rampSeconds)
    }
}
