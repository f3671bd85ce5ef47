internal import GRDB

/// v1: the battery samples the drain is learned from (#1); the oldest are pruned by `BatterySampleRepository`.
enum V1BatterySamples: StoreMigration {
    static let identifier = "v1-battery-samples"

    static func migrate(_ db: Database) throws {
        try db.create(table: "battery_sample") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("at", .double).notNull().indexed()
            t.column("level", .double).notNull()
            t.column("energy_wh", .double)
            t.column("energy_full_wh", .double)
            t.column("rate_w", .double)
            t.column("on_ac", .boolean).notNull()
            t.column("status", .text).notNull()
        }
    }
}
