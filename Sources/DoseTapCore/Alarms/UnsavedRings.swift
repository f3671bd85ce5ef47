import Foundation

extension AlarmRing {
    /// The occurrence a ring is of: one ring per alarm, kind and due instant (the store's unique key).
    public var occurrence: AlarmPlanner.Due { AlarmPlanner.Due(alarmID: alarmID, kind: kind, dueAt: dueAt) }
}

extension AlarmPlanner {
    /// The tracks as the store has them, with what this agent did that the store does not have yet (#51: a ring
    /// started, ended or missed while the store could not be written): each such ring is the alarm's latest (and
    /// its last scheduled, for a scheduled one) unless the store has a later one, so the plan never rings an
    /// occurrence twice nor forgets a snooze; a once alarm whose ring ended for good is off. `unsaved` is oldest first.
    public static func overlay(_ tracks: [AlarmTrack], unsaved: [AlarmRing]) -> [AlarmTrack] {
        guard !unsaved.isEmpty else { return tracks }
        return tracks.map { track in
            var track = track
            for ring in unsaved where ring.alarmID == track.alarm.id {
                if track.latest.map({ ring.dueAt >= $0.dueAt || $0.occurrence == ring.occurrence }) ?? true {
                    track.latest = ring
                }
                if ring.kind == .scheduled, track.lastScheduled.map({ ring.dueAt >= $0.dueAt }) ?? true {
                    track.lastScheduled = ring
                }
                if track.alarm.repetition == .once, ring.outcome != .ringing, ring.outcome != .snoozed {
                    track.alarm.enabled = false
                }
            }
            return track
        }
    }
}
