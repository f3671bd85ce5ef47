internal import GRDB

/// #51: the dose log's delete guard had a back door — it stood aside while a row `setting('clearing')` existed, and
/// any writer of the settings could add one. Now it refuses every DELETE; `clearAll` (`dosetap data clear`, the one
/// guarded route) drops it and creates it again inside its own transaction, so no committed state is ever without it.
enum V12DoseLogGuard: StoreMigration {
    static let identifier = "v12-dose-log-guard"

    /// The guard as V12 creates it, and as `clearAll` creates it again.
    static let createGuard = """
        CREATE TRIGGER dose_event_append_only_delete BEFORE DELETE ON dose_event
        BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
        """

    static func migrate(_ db: Database) throws {
        try db.execute(sql: "DROP TRIGGER IF EXISTS dose_event_append_only_delete; DELETE FROM setting WHERE key = 'clearing';")
        try db.execute(sql: createGuard)
    }
}
