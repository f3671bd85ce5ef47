internal import GRDB

/// The household cascade (#12): occurrences known from plans (ours and the others'), every Stop and
/// Snooze heard, what this agent did with each slot (exactly once, across restarts), and the backup
/// alarms that rang here (answered by the command line as the agent's own alarms are).
enum V9Household: StoreMigration {
    static let identifier = "v9-household"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE household_occurrence (
                owner TEXT NOT NULL,
                alarm_id INTEGER NOT NULL,
                at INTEGER NOT NULL,
                label TEXT NOT NULL,
                time TEXT NOT NULL,
                targets TEXT NOT NULL,
                PRIMARY KEY (owner, alarm_id, at)
            );
            CREATE TABLE household_answer (
                owner TEXT NOT NULL,
                alarm_id INTEGER NOT NULL,
                occurrence INTEGER NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('stop', 'snooze')),
                target INTEGER,
                at INTEGER NOT NULL,
                by TEXT NOT NULL,
                PRIMARY KEY (owner, alarm_id, occurrence, kind, at, by)
            );
            CREATE TABLE household_slot (
                owner TEXT NOT NULL,
                alarm_id INTEGER NOT NULL,
                occurrence INTEGER NOT NULL,
                target INTEGER NOT NULL,
                at INTEGER NOT NULL,
                outcome TEXT NOT NULL,
                updated_at REAL NOT NULL,
                detail TEXT,
                PRIMARY KEY (owner, alarm_id, occurrence, target, at)
            );
            CREATE TABLE backup_ring (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                owner TEXT NOT NULL,
                alarm_id INTEGER NOT NULL,
                occurrence INTEGER NOT NULL,
                target INTEGER NOT NULL,
                at INTEGER NOT NULL,
                label TEXT NOT NULL,
                time TEXT NOT NULL,
                started_at REAL NOT NULL,
                ended_at REAL,
                outcome TEXT NOT NULL DEFAULT 'ringing',
                ended_by TEXT,
                UNIQUE (owner, alarm_id, occurrence, target, at)
            );
            """)
    }
}
