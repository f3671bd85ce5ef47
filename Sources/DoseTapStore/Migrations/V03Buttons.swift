internal import GRDB

/// v3: the buttons (#5) with their kind, name, key and gestures; battery samples gain their source
/// (`system` or `button:<name>`).
enum V3Buttons: StoreMigration {
    static let identifier = "v3-buttons"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE button (
                address TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                name TEXT NOT NULL,
                bindkey TEXT,
                mapping TEXT NOT NULL,
                added_at REAL NOT NULL
            );
            ALTER TABLE battery_sample ADD COLUMN source TEXT NOT NULL DEFAULT 'system';
            """)
    }
}
