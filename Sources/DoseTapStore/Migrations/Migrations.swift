internal import GRDB

/// One schema change: a file of its own, named for its version, registered once in `Migrations.all`.
/// Applied migrations are never edited; a change is a new one.
protocol StoreMigration: Sendable {
    /// The name GRDB records in `grdb_migrations` (never renamed).
    static var identifier: String { get }
    static func migrate(_ db: Database) throws
}

/// Every schema change, oldest first.
enum Migrations {
    static var all: [any StoreMigration.Type] {
        [
            V1BatterySamples.self, V2DoseLog.self, V3Buttons.self, V4AppendOnlyReplace.self, V5Alarms.self,
            V6AlarmRings.self, V7UsageAlerts.self, V8AlarmBackups.self, V9Household.self, V10HouseholdHeld.self,
            V11Flic2.self, V12DoseLogGuard.self, V13DoseEventFuture.self, V14HouseholdMemory.self,
        ]
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in all {
            migrator.registerMigration(migration.identifier) { db in try migration.migrate(db) }
        }
        return migrator
    }
}
