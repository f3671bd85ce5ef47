internal import GRDB

/// v8: each alarm's backups (#12): the ordered targets, and whether the cascade is on for it (off by
/// default). Removing an alarm removes its backups.
enum V8AlarmBackups: StoreMigration {
    static let identifier = "v8-alarm-backups"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE alarm ADD COLUMN backups_on INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE alarm_backup (
                alarm_id INTEGER NOT NULL,
                position INTEGER NOT NULL,
                target TEXT NOT NULL,
                PRIMARY KEY (alarm_id, target)
            );
            """)
    }
}
