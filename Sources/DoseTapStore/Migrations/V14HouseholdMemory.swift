internal import GRDB

/// #51: what the household part of this agent must remember across restarts.
/// - `household_forgotten` (finding 7): the devices a person told this one to forget (`dosetap household forget
///   DEVICE`), and when; their plans are ignored until the device is heard online again after that moment.
/// - `household_refused` (finding 5): the answers judged forged, by their whole content, so that one delivered
///   again after the ring — retained, after a broker restart, to an agent restarted meanwhile — keeps its verdict.
enum V14HouseholdMemory: StoreMigration {
    static let identifier = "v14-household-memory"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE household_forgotten (device TEXT PRIMARY KEY NOT NULL, at REAL NOT NULL);
            CREATE TABLE household_refused (
                answer TEXT PRIMARY KEY NOT NULL,
                occurrence INTEGER NOT NULL,
                refused_at REAL NOT NULL
            );
            """)
    }
}
