internal import GRDB

/// #51 finding 7: the household devices a person told this one to forget (`dosetap household forget DEVICE`), and
/// when. Their plans are ignored until the device is heard online again after that moment.
enum V14HouseholdForgotten: StoreMigration {
    static let identifier = "v14-household-forgotten"

    static func migrate(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE household_forgotten (device TEXT PRIMARY KEY NOT NULL, at REAL NOT NULL)")
    }
}
