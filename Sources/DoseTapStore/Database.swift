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
            // The dose log must survive a power cut right after a confirmation: fsync on every commit.
            try db.execute(sql: "PRAGMA synchronous = FULL")
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
        migrator.registerMigration("v2-dose-log") { db in
            try db.execute(sql: """
                CREATE TABLE dose_event (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL CHECK (kind IN ('dose1', 'dose2', 'snooze', 'skip', 'undo')),
                    at REAL NOT NULL,
                    time_zone TEXT NOT NULL,
                    source TEXT NOT NULL,
                    payload TEXT NOT NULL DEFAULT '{}'
                );
                CREATE INDEX dose_event_at ON dose_event(at);
                CREATE TRIGGER dose_event_append_only_update BEFORE UPDATE ON dose_event
                BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
                CREATE TRIGGER dose_event_append_only_delete BEFORE DELETE ON dose_event
                WHEN (SELECT value FROM setting WHERE key = 'clearing') IS NULL
                BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
                CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE reminder_fired (
                    session_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    due_at REAL NOT NULL,
                    fired_at REAL NOT NULL,
                    PRIMARY KEY (session_id, kind, due_at)
                );
                """)
        }
        migrator.registerMigration("v3-buttons") { db in
            try db.execute(sql: """
                CREATE TABLE button (
                    address TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    name TEXT NOT NULL,
                    bindkey TEXT,
                    mapping TEXT NOT NULL,
                    added_at REAL NOT NULL
                );
                ALTER TABLE battery_sample ADD COLUMN source TEXT NOT NULL DEFAULT 'system';
                """)
        }
        return migrator
    }

    /// Deletes everything the person asked to forget: dose history, settings, battery samples.
    /// The dose log's append-only guard is lifted for this one transaction only.
    public func clearAll() throws {
        try writer.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('clearing', '1')")
            try db.execute(sql: "DELETE FROM dose_event")
            try db.execute(sql: "DELETE FROM reminder_fired")
            try db.execute(sql: "DELETE FROM battery_sample")
            try db.execute(sql: "DELETE FROM button")
            try db.execute(sql: "DELETE FROM setting")
        }
    }

    /// What `clearAll` would delete.
    public func counts() throws -> (doseEvents: Int, settings: Int, samples: Int) {
        try writer.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dose_event") ?? 0,
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM setting") ?? 0,
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM battery_sample") ?? 0)
        }
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
