internal import GRDB

/// #30: a Flic 2's pairing beside the button (like a bindkey), and how far its events were acted on (the button's
/// boot id and event count), so an event is never acted on twice across reconnects and restarts.
enum V11Flic2: StoreMigration {
    static let identifier = "v11-flic2"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE button ADD COLUMN pairing TEXT;
            CREATE TABLE button_progress (
                address TEXT PRIMARY KEY,
                boot_id INTEGER NOT NULL,
                event_count INTEGER NOT NULL
            );
            """)
    }
}
