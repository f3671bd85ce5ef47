internal import GRDB

/// v4: `INSERT OR REPLACE` refused; unreadable entries the person chose to set aside
/// (`dosetap data unreadable --ignore SEQ`: the row stays, the policy stops counting it).
enum V4AppendOnlyReplace: StoreMigration {
    static let identifier = "v4-append-only-replace"

    static func migrate(_ db: Database) throws {
        // `INSERT OR REPLACE` deletes the row it collides with, and SQLite fires no DELETE trigger
        // for that unless recursive_triggers is on: an insert that would collide is refused before
        // the conflict resolution runs, whatever the connection's settings.
        try db.execute(sql: """
            CREATE TRIGGER dose_event_append_only_replace BEFORE INSERT ON dose_event
            WHEN EXISTS (SELECT 1 FROM dose_event WHERE id = NEW.id OR seq = NEW.seq)
            BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
            CREATE TABLE dose_event_ignored (
                seq INTEGER PRIMARY KEY,
                ignored_at REAL NOT NULL
            );
            """)
    }
}
