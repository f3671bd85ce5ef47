import DoseTapCore
import Foundation
internal import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A one-line, human-readable storage failure.
public struct StoreError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The SQLite file: the single source of truth and the meeting point of the CLI and the agent.
/// WAL mode lets them read and write side by side; every schema change is a versioned migration.
///
/// Two ways in:
/// - `init(directory:)` for commands that write: creates the folder and the file if needed and
///   migrates, holding an exclusive `flock` on the data folder while it does (20 first commands racing
///   on a fresh folder migrate once, the others wait and find the schema done).
/// - `openForReading(directory:)` for commands that only read (`dose status`, `export csv`,
///   `battery`): a read-only connection that never takes a write lock, so it works on a read-only
///   file or folder and never waits for a writer (WAL readers see the last commit).
public final class DoseTapDatabase: Sendable {
    let writer: DatabasePool
    public let path: String
    public let isReadOnly: Bool
    /// Writes made through this instance, counted after each one ends (with `PRAGMA data_version`, which
    /// counts other connections' commits, it tells whether a cached read is still current).
    let localWrites = Atomic<Int>(0)
    /// The recent dose log as last read or written here (`DoseRepository.submit`).
    let doseLogCache = Mutex<DoseLogCache?>(nil)

    /// Opens (creating if needed) the database in `directory` and brings its schema up to date.
    public init(directory: URL) throws {
        let folder = directory.path
        try Self.checkFolder(folder, create: true)
        path = directory.appendingPathComponent("dosetap.sqlite").path
        isReadOnly = false
        let lock = try Self.lockFolder(folder)
        defer { close(lock) }
        do {
            writer = try DatabasePool(path: path, configuration: Self.configuration(readOnly: false))
            // The dose log must survive a power cut right after a confirmation: fsync on every commit. Set here,
            // once the pool is open — GRDB puts its writer in WAL mode with `synchronous = NORMAL` *after*
            // `prepareDatabase` ran, and NORMAL syncs the WAL only at checkpoints, so a dose the agent
            // recorded could be lost to a power cut for minutes (a one-shot CLI checkpoints as it closes).
            try writer.barrierWriteWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // Migrating takes the write lock: only when something is to do, so opening never waits for
            // another process's transaction.
            if try !writer.read({ db in try Self.migrator.hasCompletedMigrations(db) }) {
                try Self.migrator.migrate(writer)
            }
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "open")
        }
    }

    private init(readingAt path: String) throws {
        self.path = path
        isReadOnly = true
        do {
            writer = try DatabasePool(path: path, configuration: Self.configuration(readOnly: true))
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "open", reading: true)
        }
    }

    /// Opens the database only if it already exists (read paths of the CLI must not create files).
    /// A data folder that is a file, or that cannot be searched, is an error, never "no data".
    public static func openIfPresent(directory: URL) throws -> DoseTapDatabase? {
        let file = directory.appendingPathComponent("dosetap.sqlite").path
        guard try exists(folder: directory.path, file: file) else { return nil }
        return try DoseTapDatabase(directory: directory)
    }

    /// A read-only connection for commands that only read; nil when there is no database yet.
    /// A database written by an older version (migrations pending) is upgraded first, which needs
    /// write access; without it the error says so.
    public static func openForReading(directory: URL) throws -> DoseTapDatabase? {
        let file = directory.appendingPathComponent("dosetap.sqlite").path
        guard try exists(folder: directory.path, file: file) else { return nil }
        let reader = try DoseTapDatabase(readingAt: file)
        let complete: Bool
        do {
            complete = try reader.writer.read { db in try migrator.hasCompletedMigrations(db) }
        } catch let error as DatabaseError {
            throw explain(error, path: file, action: "read", reading: true)
        }
        if complete { return reader }
        do {
            _ = try DoseTapDatabase(directory: directory)
        } catch {
            throw StoreError("\(file) was written by an older version and must be upgraded, which needs write access: \(error)")
        }
        return try DoseTapDatabase(readingAt: file)
    }

    static func configuration(readOnly: Bool) -> Configuration {
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        return config
    }

    // MARK: - Reads and writes with plain-sentence errors

    /// A read; SQLite's errors become one sentence naming the file and the cause.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "read", reading: true)
        }
    }

    /// A write in one transaction; SQLite's errors become one sentence naming the file and the cause.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        guard !isReadOnly else { throw StoreError("cannot write \(path): it was opened for reading only") }
        defer { localWrites.add(1, ordering: .sequentiallyConsistent) }
        do {
            defer { announceCommit() }
            return try writer.write(body)
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "write")
        }
    }

    /// A write that manages its own transaction (`BEGIN IMMEDIATE` for the dose policy).
    func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        guard !isReadOnly else { throw StoreError("cannot write \(path): it was opened for reading only") }
        defer { localWrites.add(1, ordering: .sequentiallyConsistent) }
        do {
            defer { announceCommit() }
            return try writer.writeWithoutTransaction(body)
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "write")
        }
    }

    /// Tells whoever watches the data folder (the agent's `DirectoryWatcher`, inotify) that a write is done *and
    /// visible*: the WAL is opened for writing and closed (an `IN_CLOSE_WRITE`), nothing written, never created.
    /// The commit's own events come too early: SQLite appends the frames (`IN_MODIFY` on the WAL), then syncs
    /// them (`synchronous = FULL`: milliseconds), and only then makes them visible in the shared-memory index,
    /// which inotify cannot see — an agent woken by the appends read the data before the commit and was not woken
    /// again by a writer that stays open (a CLI's close at exit happened to cover it).
    private func announceCommit() {
        let fd = open(path + "-wal", O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd >= 0 { close(fd) }
    }

    /// SQLite's terse codes ("disk I/O error", "database or disk is full") as one plain sentence.
    static func explain(_ error: DatabaseError, path: String, action: String, reading: Bool = false) -> StoreError {
        let folder = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        let nothing = reading ? "" : " (nothing was recorded)"
        switch error.resultCode {
        case .SQLITE_FULL:
            return StoreError("cannot \(action) \(path): the disk is full; free some space and try again\(nothing)")
        case .SQLITE_IOERR:
            if freeBytes(folder).map({ $0 < 1 << 20 }) ?? false {
                return StoreError("cannot \(action) \(path): the disk is full; free some space and try again\(nothing)")
            }
            return StoreError("cannot \(action) \(path): the disk reported an input/output error (see `dmesg`)\(nothing)")
        case .SQLITE_READONLY:
            return StoreError("cannot \(action) \(path): the database is read-only (check the permissions of the file and of \(folder))")
        case .SQLITE_CANTOPEN:
            return StoreError("cannot open \(path): \(Self.accessProblem(folder: folder, file: path))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreError("cannot \(action) \(path): another process kept the database locked for 5 s; try again")
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreError("cannot \(action) \(path): the file is damaged or is not a DoseTap database")
        case .SQLITE_PERM, .SQLITE_AUTH:
            return StoreError("cannot \(action) \(path): permission denied")
        default:
            let message = error.message ?? error.description
            return StoreError("cannot \(action) \(path): \(message)")
        }
    }

    static func accessProblem(folder: String, file: String) -> String {
        var s = stat()
        if stat(file, &s) != 0 { return String(cString: strerror(errno)) }
        if access(file, R_OK) != 0 { return "permission denied" }
        if access(folder, W_OK) != 0 { return "the folder \(folder) is read-only and the database's -wal/-shm files are missing" }
        return "the file cannot be opened"
    }

    static func freeBytes(_ folder: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(folder, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    // MARK: - The data folder

    /// True when `file` exists in `folder`; an error when `folder` is not a folder or cannot be read.
    static func exists(folder: String, file: String) throws -> Bool {
        var s = stat()
        if stat(folder, &s) != 0 {
            let code = errno
            if code == ENOENT { return false }
            if code == ENOTDIR { throw StoreError("data directory \(folder) is not a folder: part of its path is a file") }
            throw StoreError("cannot read data directory \(folder): \(String(cString: strerror(code)))")
        }
        guard s.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError("data directory \(folder) is not a folder (it is a file); choose another with --data-dir or DOSETAP_DATA_DIR")
        }
        if stat(file, &s) != 0 {
            let code = errno
            if code == ENOENT { return false }
            throw StoreError("cannot read \(file): \(String(cString: strerror(code)))")
        }
        guard s.st_mode & S_IFMT == S_IFREG else {
            throw StoreError("\(file) is not a regular file; move it away to let DoseTap create its database")
        }
        return true
    }

    /// Creates the folder (and its parents, mode 0700) when asked; a file in its place is an error.
    static func checkFolder(_ folder: String, create: Bool) throws {
        var s = stat()
        if stat(folder, &s) == 0 {
            guard s.st_mode & S_IFMT == S_IFDIR else {
                throw StoreError("data directory \(folder) is not a folder (it is a file); choose another with --data-dir or DOSETAP_DATA_DIR")
            }
            return
        }
        guard create, errno == ENOENT else {
            let code = errno
            if code == ENOTDIR { throw StoreError("data directory \(folder) is not a folder: part of its path is a file") }
            throw StoreError("cannot use data directory \(folder): \(String(cString: strerror(code)))")
        }
        var built = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0, errno != EEXIST {
                let code = errno
                let cause = code == ENOSPC ? "the disk is full" : String(cString: strerror(code))
                throw StoreError("cannot create data directory \(folder): \(cause) (at \(built))")
            }
        }
        guard stat(folder, &s) == 0, s.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError("cannot create data directory \(folder): part of its path is a file")
        }
    }

    /// An exclusive `flock` on the data folder itself (no lock file to leave behind), held while the
    /// database is opened and migrated.
    static func lockFolder(_ folder: String) throws -> Int32 {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StoreError("cannot open data directory \(folder): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(fd)
            throw StoreError("cannot lock data directory \(folder): \(String(cString: strerror(code)))")
        }
        return fd
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
        // v4: `INSERT OR REPLACE` refused; unreadable entries the person chose to set aside
        // (`dosetap data unreadable --ignore SEQ`: the row stays, the policy stops counting it).
        migrator.registerMigration("v4-append-only-replace") { db in
            // `INSERT OR REPLACE` deletes the row it collides with, and SQLite fires no DELETE trigger
            // for that unless recursive_triggers is on: an insert that would collide is refused before
            // the conflict resolution runs, whatever the connection's settings.
            try db.execute(sql: """
                CREATE TRIGGER dose_event_append_only_replace BEFORE INSERT ON dose_event
                WHEN EXISTS (SELECT 1 FROM dose_event WHERE id = NEW.id OR seq = NEW.seq)
                BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
                CREATE TABLE dose_event_ignored (
                    seq INTEGER PRIMARY KEY,
                    ignored_at REAL NOT NULL
                );
                """)
        }
        // v5: alarms (#11). `repetition` is "once", "daily" or days such as "mon,tue,fri". `alarm_import`
        // remembers that config.toml's `[alarm] time` became an alarm (once: removing it sticks).
        migrator.registerMigration("v5-alarms") { db in
            try db.execute(sql: """
                CREATE TABLE alarm (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    time TEXT NOT NULL,
                    label TEXT NOT NULL,
                    repetition TEXT NOT NULL,
                    enabled INTEGER NOT NULL,
                    sound TEXT,
                    haptics TEXT,
                    created_at REAL NOT NULL
                );
                CREATE TABLE alarm_import (
                    source TEXT PRIMARY KEY,
                    imported_at REAL NOT NULL
                );
                """)
        }
        // v6: the alarm ring log (#11). One row per occurrence dealt with: rung (then stopped, snoozed or
        // missed after ten minutes) or missed without ringing (the machine was off or asleep). `armed_at`:
        // occurrences before it never ring (set when an alarm is added, turned on, or its time or repeat change).
        migrator.registerMigration("v6-alarm-rings") { db in
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
        // v7: usage alerts (#13). Per-source overrides, each source's alert state (which levels fired since
        // they re-armed, failed reads) as JSON, and the history (at most 100 rows, the oldest pruned). The
        // global thresholds, the snooze and the templates are the `alerts` entry of `setting`.
        migrator.registerMigration("v7-usage-alerts") { db in
            try db.execute(sql: """
                CREATE TABLE alert_source (
                    name TEXT PRIMARY KEY,
                    warning INTEGER,
                    critical INTEGER,
                    enabled INTEGER NOT NULL DEFAULT 1
                );
                CREATE TABLE alert_state (name TEXT PRIMARY KEY, state TEXT NOT NULL);
                CREATE TABLE alert_history (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at REAL NOT NULL,
                    source TEXT NOT NULL,
                    usage REAL NOT NULL,
                    level TEXT NOT NULL
                );
                """)
        }
        // v8: each alarm's backups (#12): the ordered targets, and whether the cascade is on for it (off by
        // default). Removing an alarm removes its backups.
        migrator.registerMigration("v8-alarm-backups") { db in
            try db.execute(sql: """
                ALTER TABLE alarm ADD COLUMN backups_on INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE alarm_backup (
                    alarm_id INTEGER NOT NULL,
                    position INTEGER NOT NULL,
                    target TEXT NOT NULL,
                    PRIMARY KEY (alarm_id, target)
                );
                """)
        }
        // The household cascade (#12): occurrences known from plans (ours and the others'), every Stop and
        // Snooze heard, what this agent did with each slot (exactly once, across restarts), and the backup
        // alarms that rang here (answered by the command line as the agent's own alarms are).
        migrator.registerMigration("v9-household") { db in
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
        // #25: when this agent first held each occurrence (its own clock): a survivor sends a gone owner's push
        // or call only from an occurrence held ahead of it and before the owner went away.
        migrator.registerMigration("v10-household-held") { db in
            try db.execute(sql: "ALTER TABLE household_occurrence ADD COLUMN held_at REAL")
        }
        return migrator
    }

    /// Deletes everything the person asked to forget: dose history, settings, battery samples.
    /// The dose log's append-only guard is lifted for this one transaction only.
    public func clearAll() throws {
        try write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('clearing', '1')")
            try db.execute(sql: "DELETE FROM dose_event")
            try db.execute(sql: "DELETE FROM reminder_fired")
            try db.execute(sql: "DELETE FROM dose_event_ignored")
            try db.execute(sql: "DELETE FROM battery_sample")
            try db.execute(sql: "DELETE FROM button")
            try db.execute(sql: "DELETE FROM setting")
            try db.execute(sql: "DELETE FROM alert_source")
            try db.execute(sql: "DELETE FROM alert_state")
            try db.execute(sql: "DELETE FROM alert_history")
            try db.execute(sql: "DELETE FROM household_occurrence")
            try db.execute(sql: "DELETE FROM household_answer")
            try db.execute(sql: "DELETE FROM household_slot")
            try db.execute(sql: "DELETE FROM backup_ring")
        }
    }

    /// What `clearAll` would delete.
    public func counts() throws -> (doseEvents: Int, settings: Int, samples: Int) {
        try read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dose_event") ?? 0,
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM setting") ?? 0,
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM battery_sample") ?? 0)
        }
    }

    /// "wal" for a healthy database.
    public func journalMode() throws -> String {
        try read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The applied migrations, oldest first.
    public func appliedMigrations() throws -> [String] {
        try read { db in try Self.migrator.appliedMigrations(db) }
    }
}

/// The recent dose log folded once and kept, so a burst of presses does not read and decode the log for
/// every decision. Valid while no other connection committed (`data_version`) and nothing else was
/// written through the same instance (`localWrites`), and only for a horizon no earlier than `since`.
struct DoseLogCache: Sendable {
    var dataVersion: Int64
    var localWrites: Int
    var since: Date
    var events: [DoseEvent]
    var unreadable: [Int64]
    var settings: UserSettings
}
