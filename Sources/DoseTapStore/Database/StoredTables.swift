internal import GRDB

/// A table `dosetap data clear` deletes, with how its confirmation names it to a person.
public struct ClearedTable: Sendable, Equatable {
    /// The SQL table.
    public let table: String
    /// What it holds, as the person knows it ("dose history").
    public let what: String
    let one: String
    let many: String

    init(_ table: String, _ what: String, _ one: String, _ many: String) {
        self.table = table
        self.what = what
        self.one = one
        self.many = many
    }

    /// "1 event", "3 events".
    public func count(_ rows: Int) -> String { "\(rows) \(rows == 1 ? one : many)" }
}

/// Every table of the schema, sorted into what `data clear` deletes and what it keeps. The confirmation is
/// printed from `cleared` and the deletion runs over `cleared`, so the two cannot disagree; a table a new
/// migration adds must be placed in one of the two (a store test checks the schema against both).
public enum StoredTables {
    /// Deleted by `data clear`, in the order its confirmation lists them.
    public static let cleared: [ClearedTable] = [
        .init("dose_event", "dose history", "event", "events"),
        .init("dose_event_ignored", "unreadable dose log entries set aside", "entry", "entries"),
        .init("dose_event_future", "dose log entries dated in the future, set aside", "entry", "entries"),
        .init("reminder_fired", "Dose 2 reminders already given", "reminder", "reminders"),
        .init("setting", "settings (setup answers, feedback, usage-alert thresholds, what the agent learned of this machine's nights)",
              "entry", "entries"),
        .init("battery_sample", "battery sample history", "sample", "samples"),
        .init("button", "buttons, with their keys and Flic 2 pairings", "button", "buttons"),
        .init("button_progress", "how far each Flic 2's presses were read", "button", "buttons"),
        .init("alert_source", "usage-alert settings of single batteries", "battery", "batteries"),
        .init("alert_state", "usage-alert states", "battery", "batteries"),
        .init("alert_history", "usage-alert history", "alert", "alerts"),
        .init("household_occurrence", "household alarm occurrences heard", "occurrence", "occurrences"),
        .init("household_answer", "household Stop and Snooze answers heard", "answer", "answers"),
        .init("household_slot", "household backups this device sent or rang", "backup", "backups"),
        .init("backup_ring", "backup alarms that rang here", "ring", "rings"),
        .init("household_forgotten", "household devices forgotten", "device", "devices"),
        .init("household_refused", "household answers judged forged", "answer", "answers"),
    ]

    /// Kept by `data clear`: the alarms, their backups and their ring log (`dosetap alarm remove` deletes an alarm).
    public static let kept: [String] = ["alarm", "alarm_import", "alarm_ring", "alarm_backup"]

    /// What the confirmation says is kept.
    public static let keptSentence = "It keeps your alarms, their backups and their ring history (remove an alarm with `dosetap alarm remove`)."
}

extension DoseTapDatabase {
    /// The rows of every table `clearAll` deletes, in `StoredTables.cleared`'s order.
    public func clearedCounts() throws -> [(table: ClearedTable, rows: Int)] {
        try read { db in
            try StoredTables.cleared.map { part in
                (part, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(part.table)") ?? 0)
            }
        }
    }

    /// Deletes every table of `StoredTables.cleared`, in one transaction. The dose log's append-only guard is
    /// dropped and created again inside that transaction (V12): no committed state is ever without it, and no row
    /// anywhere can switch it off.
    public func clearAll() throws {
        try write { db in
            try db.execute(sql: "DROP TRIGGER dose_event_append_only_delete")
            for part in StoredTables.cleared {
                try db.execute(sql: "DELETE FROM \(part.table)")
            }
            try db.execute(sql: V12DoseLogGuard.createGuard)
        }
    }

    /// Every table of the schema (SQLite's and GRDB's own left out).
    public func tableNames() throws -> [String] {
        try read { db in
            try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'
                ORDER BY name
                """)
        }
    }
}
