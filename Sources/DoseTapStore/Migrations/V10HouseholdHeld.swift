internal import GRDB

/// #25: when this agent first held each occurrence (its own clock): a survivor sends a gone owner's push
/// or call only from an occurrence held ahead of it and before the owner went away.
enum V10HouseholdHeld: StoreMigration {
    static let identifier = "v10-household-held"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE household_occurrence ADD COLUMN held_at REAL")
    }
}
