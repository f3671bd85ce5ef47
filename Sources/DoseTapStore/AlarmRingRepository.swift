import DoseTapCore
import Foundation
internal import GRDB

/// The alarm ring log (#11): each occurrence dealt with, how it ended, and the snooze in progress. The
/// agent writes rings; the command line (and later the web page) ends the one ringing with a conditional
/// update, so a Stop and the ten-minute timeout can never both win.
public struct AlarmRingRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// Every usable alarm with what the planner needs (armed since, last scheduled ring, latest ring).
    public func tracks() throws -> [AlarmTrack] {
        let alarms = try AlarmRepository(database: database).all()
        return try database.read { db in
            try alarms.map { alarm in
                let armed = try Double.fetchOne(db, sql: "SELECT COALESCE(armed_at, created_at) FROM alarm WHERE id = ?",
                                                arguments: [alarm.id]) ?? 0
                let latest = try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE alarm_id = ? ORDER BY id DESC LIMIT 1",
                                              arguments: [alarm.id]).flatMap(Self.decode)
                let scheduled = try Row.fetchOne(db, sql: """
                    SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE alarm_id = ? AND kind = 'scheduled' ORDER BY due_at DESC LIMIT 1
                    """, arguments: [alarm.id]).flatMap(Self.decode)
                return AlarmTrack(alarm: alarm, armedAt: Date(timeIntervalSince1970: armed), lastScheduled: scheduled, latest: latest)
            }
        }
    }

    /// Starts ringing `due`: a new `ringing` row, or the existing one when this occurrence was started
    /// before (the agent restarted while it rang).
    public func start(_ due: AlarmPlanner.Due, at now: Date, patience: WritePatience = .standard) throws -> AlarmRing {
        try database.write(patience: patience) { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO alarm_ring (alarm_id, kind, due_at, started_at, outcome) VALUES (?, ?, ?, ?, 'ringing')
                """, arguments: [due.alarmID, due.kind.rawValue, due.dueAt.timeIntervalSince1970, now.timeIntervalSince1970])
            guard let ring = try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE alarm_id = ? AND kind = ? AND due_at = ?",
                                              arguments: [due.alarmID, due.kind.rawValue, due.dueAt.timeIntervalSince1970]).flatMap(Self.decode)
            else { throw StoreError("the ring of alarm \(due.alarmID) could not be read back") }
            return ring
        }
    }

    /// Records an occurrence missed without ringing (the machine was off or asleep past the late limit).
    /// A `once` alarm turns itself off.
    @discardableResult
    public func recordMissed(_ due: AlarmPlanner.Due, at now: Date, patience: WritePatience = .standard) throws -> Bool {
        try database.write(patience: patience) { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO alarm_ring (alarm_id, kind, due_at, ended_at, outcome, ended_by)
                VALUES (?, ?, ?, ?, 'missed', 'late')
                """, arguments: [due.alarmID, due.kind.rawValue, due.dueAt.timeIntervalSince1970, now.timeIntervalSince1970])
            let inserted = db.changesCount > 0
            if inserted { try Self.retireOnce(db, alarmID: due.alarmID) }
            return inserted
        }
    }

    /// Ends the ring `id` if it still rings: stopped, snoozed (rings again at `snoozeUntil`) or missed. A
    /// `once` alarm turns itself off unless snoozed. Returns the ended ring, or nil when it had already ended
    /// (someone else answered first).
    public func end(ringID id: Int64, outcome: AlarmRingOutcome, by ender: AlarmRingEnder, at now: Date,
                    snoozeUntil: Date? = nil, patience: WritePatience = .standard) throws -> AlarmRing? {
        precondition(outcome != .ringing, "a ring ends as stopped, snoozed or missed")
        return try database.write(patience: patience) { db in
            try db.execute(sql: """
                UPDATE alarm_ring SET outcome = ?, ended_by = ?, ended_at = ?, snooze_until = ? WHERE id = ? AND outcome = 'ringing'
                """, arguments: [outcome.rawValue, ender.rawValue, now.timeIntervalSince1970,
                                 outcome == .snoozed ? snoozeUntil?.timeIntervalSince1970 : nil, id])
            guard db.changesCount > 0 else { return nil }
            let ring = try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE id = ?", arguments: [id]).flatMap(Self.decode)
            if outcome != .snoozed, let ring { try Self.retireOnce(db, alarmID: ring.alarmID) }
            return ring
        }
    }

    /// The ring in progress (the latest `ringing` row), if any.
    public func ringing() throws -> AlarmRing? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE outcome = 'ringing' ORDER BY id DESC LIMIT 1").flatMap(Self.decode)
        }
    }

    /// The ring of one occurrence, if the store has it.
    public func ring(occurrence due: AlarmPlanner.Due) throws -> AlarmRing? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE alarm_id = ? AND kind = ? AND due_at = ?",
                             arguments: [due.alarmID, due.kind.rawValue, due.dueAt.timeIntervalSince1970]).flatMap(Self.decode)
        }
    }

    public func ring(id: Int64) throws -> AlarmRing? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE id = ?", arguments: [id]).flatMap(Self.decode)
        }
    }

    /// The latest ring of each alarm, by alarm id (for "missed" on the alarm screen).
    public func latestByAlarm() throws -> [Int: AlarmRing] {
        try database.read { db in
            AlarmRingRow.latestByAlarm(try Row.fetchAll(db, sql: AlarmRingRow.latestByAlarmSQL).map(DoseRepository.stored))
        }
    }

    /// Every ring of one alarm, oldest first.
    public func history(alarmID: Int) throws -> [AlarmRing] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT \(AlarmRingRow.columns) FROM alarm_ring WHERE alarm_id = ? ORDER BY id", arguments: [alarmID]).compactMap(Self.decode)
        }
    }

    private static func retireOnce(_ db: Database, alarmID: Int) throws {
        try db.execute(sql: "UPDATE alarm SET enabled = 0 WHERE id = ? AND repetition = 'once'", arguments: [alarmID])
    }

    /// A row of `AlarmRingRow.columns` as the core type; nil for a row that cannot be read (edited by hand):
    /// ignored, never guessed (`AlarmRingRow.decode`, shared with the one-shot front).
    static func decode(_ row: Row) -> AlarmRing? {
        AlarmRingRow.decode(DoseRepository.stored(row))
    }
}
