internal import GRDB

/// v5: alarms (#11). `repetition` is "once", "daily" or days such as "mon,tue,fri". `alarm_import`
/// remembers that config.toml's `[alarm] time` became an alarm (once: removing it sticks).
enum V5Alarms: StoreMigration {
    static let identifier = "v5-alarms"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE alarm (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                time TEXT NOT NULL,
                label TEXT NOT NULL,
                repetition TEXT NOT NULL,
                enabled INTEGER NOT NULL,
                sound TEXT,
                haptics TEXT,
                created_at REAL NOT NULL
            );
            CREATE TABLE alarm_import (
                source TEXT PRIMARY KEY,
                imported_at REAL NOT NULL
            );
            """)
    }
}
