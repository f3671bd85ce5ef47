import DoseTapCore
import Foundation
internal import GRDB

/// The alarms the person set (#11). Ids are small integers, never reused.
public struct AlarmRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// A row of the `alarm` table that cannot be used (edited by hand, or written by a newer version):
    /// listed with the reason, never rung as something it is not.
    public struct UnusableAlarm: Sendable, Equatable {
        public var id: Int
        public var reason: String
    }

    /// Every alarm, by id, and the rows that cannot be read (`AlarmRow`, shared with the one-shot front).
    public func load() throws -> (alarms: [Alarm], unusable: [UnusableAlarm]) {
        try database.read { db in
            var alarms: [Alarm] = []
            var unusable: [UnusableAlarm] = []
            for row in try Row.fetchAll(db, sql: AlarmRow.allSQL) {
                let (id, decoded) = AlarmRow.decode(DoseRepository.stored(row))
                switch decoded {
                case .success(let alarm): alarms.append(alarm)
                case .failure(let error): unusable.append(UnusableAlarm(id: id, reason: error.description))
                }
            }
            return (alarms, unusable)
        }
    }

    public func all() throws -> [Alarm] { try load().alarms }

    public func find(id: Int) throws -> Alarm? {
        try all().first { $0.id == id }
    }

    /// Stores a new alarm (its `id` is ignored) and returns it with the id it was given.
    @discardableResult
    public func add(_ alarm: Alarm, now: Date = Date()) throws -> Alarm {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO alarm (time, label, repetition, enabled, sound, haptics, created_at, armed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [alarm.time.description, alarm.label, alarm.repetition.description, alarm.enabled ? 1 : 0,
                                 alarm.sound, alarm.haptics?.rawValue, now.timeIntervalSince1970, now.timeIntervalSince1970])
            var stored = alarm
            stored.id = Int(db.lastInsertedRowID)
            return stored
        }
    }

    /// Adds `alarm` unless `source` was imported before (in the same transaction, so two starts racing
    /// import once). Returns the stored alarm, or nil when it had been imported already.
    public func importOnce(_ alarm: Alarm, source: String, now: Date = Date()) throws -> Alarm? {
        try database.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM alarm_import WHERE source = ?", arguments: [source]) == true { return nil }
            try db.execute(sql: """
                INSERT INTO alarm (time, label, repetition, enabled, sound, haptics, created_at, armed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [alarm.time.description, alarm.label, alarm.repetition.description, alarm.enabled ? 1 : 0,
                                 alarm.sound, alarm.haptics?.rawValue, now.timeIntervalSince1970, now.timeIntervalSince1970])
            var stored = alarm
            stored.id = Int(db.lastInsertedRowID)
            try db.execute(sql: "INSERT INTO alarm_import (source, imported_at) VALUES (?, ?)", arguments: [source, now.timeIntervalSince1970])
            return stored
        }
    }

    /// Replaces an alarm's fields; false when there is no alarm with that id. `rearmedAt`: the alarm was
    /// turned on or its time or repeat changed, so only occurrences after this instant ring (and a snooze
    /// in progress is void).
    @discardableResult
    public func update(_ alarm: Alarm, rearmedAt: Date? = nil) throws -> Bool {
        try database.write { db in
            try db.execute(sql: """
                UPDATE alarm SET time = ?, label = ?, repetition = ?, enabled = ?, sound = ?, haptics = ?,
                    armed_at = COALESCE(?, armed_at) WHERE id = ?
                """, arguments: [alarm.time.description, alarm.label, alarm.repetition.description, alarm.enabled ? 1 : 0,
                                 alarm.sound, alarm.haptics?.rawValue, rearmedAt?.timeIntervalSince1970, alarm.id])
            return db.changesCount > 0
        }
    }

    /// Removes an alarm; false when there was none with that id.
    @discardableResult
    public func remove(id: Int) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM alarm WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }
}
