internal import GRDB

/// v7: usage alerts (#13). Per-source overrides, each source's alert state (which levels fired since
/// they re-armed, failed reads) as JSON, and the history (at most 100 rows, the oldest pruned). The
/// global thresholds, the snooze and the templates are the `alerts` entry of `setting`.
enum V7UsageAlerts: StoreMigration {
    static let identifier = "v7-usage-alerts"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE alert_source (
                name TEXT PRIMARY KEY,
                warning INTEGER,
                critical INTEGER,
                enabled INTEGER NOT NULL DEFAULT 1
            );
            CREATE TABLE alert_state (name TEXT PRIMARY KEY, state TEXT NOT NULL);
            CREATE TABLE alert_history (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                at REAL NOT NULL,
                source TEXT NOT NULL,
                usage REAL NOT NULL,
                level TEXT NOT NULL
            );
            """)
    }
}
