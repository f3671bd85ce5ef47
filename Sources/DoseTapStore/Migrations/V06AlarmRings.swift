internal import GRDB

/// v6: the alarm ring log (#11). One row per occurrence dealt with: rung (then stopped, snoozed or
/// missed after ten minutes) or missed without ringing (the machine was off or asleep). `armed_at`:
/// occurrences before it never ring (set when an alarm is added, turned on, or its time or repeat change).
enum V6AlarmRings: StoreMigration {
    static let identifier = "v6-alarm-rings"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE alarm ADD COLUMN armed_at REAL;
            UPDATE alarm SET armed_at = created_at;
            CREATE TABLE alarm_ring (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                alarm_id INTEGER NOT NULL,
                kind TEXT NOT NULL,
                due_at REAL NOT NULL,
                started_at REAL,
                ended_at REAL,
                outcome TEXT NOT NULL,
                ended_by TEXT,
                snooze_until REAL
            );
            CREATE INDEX alarm_ring_by_alarm ON alarm_ring (alarm_id, id);
            CREATE UNIQUE INDEX alarm_ring_once ON alarm_ring (alarm_id, kind, due_at);
            """)
    }
}
