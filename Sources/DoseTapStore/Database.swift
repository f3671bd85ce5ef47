import DoseTapCore
import Foundation
import GRDB

/// A one-line, human-readable storage failure.
public struct StoreError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The SQLite file: the single source of truth and the meeting point of the CLI and the agent.
/// WAL mode lets them read and write side by side; every schema change is a versioned migration.
public final class DoseTapDatabase: Sendable {
    public let writer: DatabasePool
    public let path: String

    /// Opens (creating if needed) the database in `directory` and brings its schema up to date.
    public init(directory: URL) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError("cannot create data directory \(directory.path): \(error.localizedDescription)")
        }
        path = directory.appendingPathComponent("dosetap.sqlite").path
        var config = Configuration()
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        do {
            writer = try DatabasePool(path: path, configuration: config)
            try Self.migrator.migrate(writer)
        } catch let error as DatabaseError {
            throw StoreError("cannot open \(path): \(error.message ?? error.description)")
        }
    }

    /// Opens the database only if it already exists (read paths of the CLI must not create files).
    public static func openIfPresent(directory: URL) throws -> DoseTapDatabase? {
        let file = directory.appendingPathComponent("dosetap.sqlite").path
        guard FileManager.default.fileExists(atPath: file) else { return nil }
        return try DoseTapDatabase(directory: directory)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-battery-samples") { db in
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
        return migrator
    }

    /// "wal" for a healthy database.
    public func journalMode() throws -> String {
        try writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The applied migrations, oldest first.
    public func appliedMigrations() throws -> [String] {
        try writer.read { db in try Self.migrator.appliedMigrations(db) }
    }
}
