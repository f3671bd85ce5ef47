import DoseTapCore
import Foundation
internal import GRDB

/// The battery history, bounded to the last `retention` (seven days by default).
public struct BatterySampleRepository: BatteryHistoryStore {
    public let database: DoseTapDatabase
    public let retention: TimeInterval

    public init(database: DoseTapDatabase, retention: TimeInterval = 7 * 24 * 3600) {
        self.database = database
        self.retention = retention
    }

    /// Appends a sample and drops the ones older than the retention, in one transaction (its `fsync` deferred:
    /// `CommitDurability.deferred`). It wakes none of the agent's planners (`wakesPlanners: false`): the monitor
    /// publishes the reading on the event bus.
    public func append(_ sample: BatterySample) throws {
        try database.write(durability: .deferred, wakesPlanners: false) { db in
            try db.execute(
                sql: """
                    INSERT INTO battery_sample (at, level, energy_wh, energy_full_wh, rate_w, on_ac, status)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [sample.at.timeIntervalSince1970, sample.level, sample.energyWh, sample.energyFullWh,
                            sample.rateW, sample.onAC, sample.status.rawValue])
            let horizon = sample.at.addingTimeInterval(-retention).timeIntervalSince1970
            try db.execute(sql: "DELETE FROM battery_sample WHERE at < ?", arguments: [horizon])
        }
    }

    /// The system battery's samples since `since`, oldest first (`BatterySampleRow`, shared with the one-shot
    /// front): a sample written by hand as text or a blob is skipped, never a trap.
    public func samples(since: Date) throws -> [BatterySample] {
        try database.read { db in
            try Row.fetchAll(db, sql: BatterySampleRow.systemSinceSQL, arguments: [since.timeIntervalSince1970])
                .compactMap { BatterySampleRow.decode(DoseRepository.stored($0)) }
        }
    }

    /// A battery level of another power source (a button: "button:<name>"), for the low-battery alerts. Like
    /// `append`, it wakes no planner (the button pipeline publishes `buttonBattery`).
    public func appendLevel(source: String, level: Double, at: Date) throws {
        try database.write(durability: .deferred, wakesPlanners: false) { db in
            try db.execute(sql: "INSERT INTO battery_sample (at, level, on_ac, status, source) VALUES (?, ?, 0, 'discharging', ?)",
                           arguments: [at.timeIntervalSince1970, level, source])
            try db.execute(sql: "DELETE FROM battery_sample WHERE at < ?", arguments: [at.addingTimeInterval(-retention).timeIntervalSince1970])
        }
    }

    /// The latest level of each non-system power source.
    public func latestLevels() throws -> [String: (level: Double, at: Date)] {
        try database.read { db in
            var out: [String: (level: Double, at: Date)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT source, level, MAX(at) AS at FROM battery_sample WHERE source != 'system' GROUP BY source") {
                let c = DoseRepository.stored(row)
                guard let source = String.fromDatabaseValue(row["source"]), let level = StoredRead.finite(c[1]),
                      let at = StoredRead.finite(c[2]) else { continue }
                out[source] = (level, Date(timeIntervalSince1970: at))
            }
            return out
        }
    }

    public func count() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM battery_sample") ?? 0 }
    }
}
