import DoseTapCore
import Foundation
internal import GRDB

/// Each alarm's backup list (#12): ordered targets and whether the cascade is on. A row that cannot be read
/// (edited by hand) is left out, never guessed.
public struct AlarmBackupRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    public struct Backups: Sendable, Equatable {
        public var enabled: Bool
        public var targets: [BackupTarget]
    }

    public func backups(alarmID: Int) throws -> Backups {
        try database.read { db in
            let on = try Int.fetchOne(db, sql: "SELECT backups_on FROM alarm WHERE id = ?", arguments: [alarmID]) ?? 0
            let targets = try String.fetchAll(db, sql: "SELECT target FROM alarm_backup WHERE alarm_id = ? ORDER BY position",
                                              arguments: [alarmID]).compactMap { try? BackupTarget(parsing: $0) }
            return Backups(enabled: on == 1, targets: targets)
        }
    }

    public func setEnabled(alarmID: Int, _ on: Bool) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE alarm SET backups_on = ? WHERE id = ?", arguments: [on ? 1 : 0, alarmID])
        }
    }

    /// Replaces the list (in the given order).
    public func setTargets(alarmID: Int, _ targets: [BackupTarget]) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM alarm_backup WHERE alarm_id = ?", arguments: [alarmID])
            for (position, target) in targets.enumerated() {
                try db.execute(sql: "INSERT INTO alarm_backup (alarm_id, position, target) VALUES (?, ?, ?)",
                               arguments: [alarmID, position, target.description])
            }
        }
    }

    /// Forgets the backups of an alarm that was removed.
    public func removeAll(alarmID: Int) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM alarm_backup WHERE alarm_id = ?", arguments: [alarmID])
        }
    }
}
