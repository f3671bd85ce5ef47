internal import GRDB

/// v2: the append-only dose log (a row is never changed or deleted, except by `data clear`, which set
/// `clearing` for its own transaction — a back door V12 closed), the settings, and the reminders already given.
enum V2DoseLog: StoreMigration {
    static let identifier = "v2-dose-log"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE dose_event (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL CHECK (kind IN ('dose1', 'dose2', 'snooze', 'skip', 'undo')),
                at REAL NOT NULL,
                time_zone TEXT NOT NULL,
                source TEXT NOT NULL,
                payload TEXT NOT NULL DEFAULT '{}'
            );
            CREATE INDEX dose_event_at ON dose_event(at);
            CREATE TRIGGER dose_event_append_only_update BEFORE UPDATE ON dose_event
            BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
            CREATE TRIGGER dose_event_append_only_delete BEFORE DELETE ON dose_event
            WHEN (SELECT value FROM setting WHERE key = 'clearing') IS NULL
            BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
            CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE reminder_fired (
                session_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                due_at REAL NOT NULL,
                fired_at REAL NOT NULL,
                PRIMARY KEY (session_id, kind, due_at)
            );
            """)
    }
}
