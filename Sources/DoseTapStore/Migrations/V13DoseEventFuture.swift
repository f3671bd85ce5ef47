internal import GRDB

/// #51: an event dated in the future (a clock that was ahead) is set aside once seen so, for good — an entry dated
/// tomorrow must not become tonight's Dose 1 when tomorrow comes. `dose_event_future` remembers each one by its id
/// (and when a person discarded it). A discard is an event of the log itself (`kind = 'discard'`), so the log's
/// CHECK on `kind` is widened: SQLite cannot alter a constraint, so the table is built again with every row, its
/// `seq` and its AUTOINCREMENT counter as they were, and the append-only guards created again (V4's, V12's) — all
/// in the migration's one transaction. Nothing is deleted from the log.
enum V13DoseEventFuture: StoreMigration {
    static let identifier = "v13-dose-event-future"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            DROP TRIGGER IF EXISTS dose_event_append_only_update;
            DROP TRIGGER IF EXISTS dose_event_append_only_replace;
            DROP TRIGGER IF EXISTS dose_event_append_only_delete;
            DROP INDEX IF EXISTS dose_event_at;
            ALTER TABLE dose_event RENAME TO dose_event_v12;
            CREATE TABLE dose_event (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL CHECK (kind IN ('dose1', 'dose2', 'snooze', 'skip', 'undo', 'discard')),
                at REAL NOT NULL,
                time_zone TEXT NOT NULL,
                source TEXT NOT NULL,
                payload TEXT NOT NULL DEFAULT '{}'
            );
            INSERT INTO dose_event (seq, id, kind, at, time_zone, source, payload)
                SELECT seq, id, kind, at, time_zone, source, payload FROM dose_event_v12 ORDER BY seq;
            INSERT INTO sqlite_sequence (name, seq)
                SELECT 'dose_event', seq FROM sqlite_sequence WHERE name = 'dose_event_v12'
                AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'dose_event');
            UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'dose_event_v12')
                WHERE name = 'dose_event' AND (SELECT seq FROM sqlite_sequence WHERE name = 'dose_event_v12') > seq;
            DROP TABLE dose_event_v12;
            CREATE INDEX dose_event_at ON dose_event(at);
            CREATE TRIGGER dose_event_append_only_update BEFORE UPDATE ON dose_event
            BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
            CREATE TRIGGER dose_event_append_only_replace BEFORE INSERT ON dose_event
            WHEN EXISTS (SELECT 1 FROM dose_event WHERE id = NEW.id OR seq = NEW.seq)
            BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
            """)
        try db.execute(sql: V12DoseLogGuard.createGuard)
        try db.execute(sql: """
            CREATE TABLE dose_event_future (
                id TEXT PRIMARY KEY NOT NULL,
                seen_at REAL NOT NULL,
                discarded_at REAL
            ) WITHOUT ROWID;
            """)
    }
}
