import DoseTapCore
import Foundation
internal import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
    /// The connections: writable, or read-only — for good (`openForReading`), or until the store can be written
    /// again (`openForAgent` on a store it could not open for writing, #51).
    private let pool: Mutex<DatabasePool>
    var writer: DatabasePool { pool.withLock { $0 } }
    public let path: String
    /// The data folder the file is in.
    public var folder: String { path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "." }
    /// Opened by `openForReading`: never written through.
    private let openedForReading: Bool
    /// Set while an agent's database is read-only because it could not be opened for writing: the folder to open
    /// again, and why it could not be.
    private let waiting = Mutex<(directory: URL, problem: StoreError)?>(nil)
    /// Whether writes are refused now (opened for reading, or waiting to be writable).
    public var isReadOnly: Bool { openedForReading || waiting.withLock { $0 != nil } }
    /// Why an agent's database is read-only for now; nil when it can be written (or was opened for reading).
    public var writeProblem: StoreError? { waiting.withLock { $0?.problem } }
    /// Writes made through this instance, counted after each one ends (with `PRAGMA data_version`, which
    /// counts other connections' commits, it tells whether a cached read is still current).
    let localWrites = Atomic<Int>(0)
    /// Writes made through this instance that may change what the agent plans (all but `wakesPlanners: false`),
    /// counted before each one's announcement (`changeMark`).
    let plannedWrites = Atomic<Int>(0)
    /// The recent dose log as last read or written here (`DoseRepository.submit`).
    let doseLogCache = Mutex<DoseLogCache?>(nil)
    /// The monotonic clock (boot time: it counts a suspend) that `CommitDurability.deferred` measures against.
    let monotonic: @Sendable () -> ContinuousClock.Instant
    /// When a commit through this instance last reached the disk (`synchronous = FULL`), and whether the
    /// connection may still be left at `NORMAL` by a deferred write whose reset failed.
    let syncState = Mutex<(lastSynced: ContinuousClock.Instant?, unsure: Bool)>((nil, false))

    /// Opens (creating if needed) the database in `directory` and brings its schema up to date.
    public convenience init(directory: URL, monotonic: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) throws {
        try self.init(directory: directory, patience: .standard, monotonic: monotonic)
    }

    private init(directory: URL, patience: WritePatience, monotonic: @escaping @Sendable () -> ContinuousClock.Instant) throws {
        self.monotonic = monotonic
        path = directory.appendingPathComponent("dosetap.sqlite").path
        openedForReading = false
        pool = Mutex(try Self.openWritable(directory: directory, path: path, patience: patience))
    }

    /// The writable pool of the database in `directory`, its schema brought up to date. `patience` is how long its
    /// opening waits for another process's write lock (GRDB writes once to a database without a WAL file yet); the
    /// pool then waits the standard 5 s.
    private static func openWritable(directory: URL, path: String, patience: WritePatience) throws -> DatabasePool {
        let folder = directory.path
        try DataFolder.check(folder, create: true)
        let lock = try DataFolder.lock(folder)
        defer { close(lock) }
        // A file of 0 bytes is a history lost (truncated by a full disk, a failed copy), never a new one: SQLite would
        // take it as an empty database and DoseTap would start afresh without a word (#51). A new database is made
        // under this same lock and is never seen empty.
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size == 0 {
            throw DataFolder.lostHistory(folder: folder, file: path, empty: true)
                ?? StoreError("\(path) is empty (0 bytes): the history it held is gone; restore it from a backup, or remove the file to start a new history",
                              cause: .damaged)
        }
        // Missing in a folder that held a history: the same (its history file says so).
        if stat(path, &info) != 0, errno == ENOENT, let lost = DataFolder.lostHistory(folder: folder, file: path) { throw lost }
        do {
            let writer = try DatabasePool(path: path, configuration: Self.configuration(readOnly: false, patience: patience))
            // The dose log must survive a power cut right after a confirmation: fsync on every commit. Set here,
            // once the pool is open — GRDB puts its writer in WAL mode with `synchronous = NORMAL` *after*
            // `prepareDatabase` ran, and NORMAL syncs the WAL only at checkpoints, so a dose the agent
            // recorded could be lost to a power cut for minutes (a one-shot CLI checkpoints as it closes).
            try writer.barrierWriteWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "PRAGMA busy_timeout = \(WritePatience.standard.milliseconds)")
            }
            // Migrating takes the write lock: only when something is to do, so opening never waits for
            // another process's transaction.
            if try !writer.read({ db in try Migrations.migrator.hasCompletedMigrations(db) }) {
                try Migrations.migrator.migrate(writer)
            }
            DataFolder.markHistory(folder: folder)
            return writer
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "open", waited: patience.text)
        }
    }

    /// - Parameter forGood: opened for reading only (`openForReading`); false for an agent's database waiting to be
    ///   writable (`openForAgent`).
    private init(readingAt path: String, forGood: Bool = true) throws {
        monotonic = { ContinuousClock.now }
        self.path = path
        openedForReading = forGood
        do {
            pool = Mutex(try Self.readingPool(path))
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "open", reading: true)
        }
    }

    /// The agent's database (#51): opened for writing as `init(directory:)` does, or — when that fails (another
    /// process holds the write lock, the disk is full, the folder is read-only) but the file can be read and its
    /// schema is current — read-only for now: the agent starts and rings from what it reads, every write fails
    /// with the reason (`writeProblem`), and each write tries first to open it for writing again (waiting a quarter
    /// of a second for a lock), so the first write after the trouble ends finds it writable. It waits a quarter of a
    /// second for a lock at start too (then reads). No database yet, a
    /// damaged one, or one that needs migrating: the open's own error.
    public static func openForAgent(directory: URL) throws -> DoseTapDatabase {
        do {
            // Briefly: an alarm due at start is not kept waiting 5 s by another process's lock.
            return try DoseTapDatabase(directory: directory, patience: .brief, monotonic: { ContinuousClock.now })
        } catch let problem as StoreError {
            let file = directory.appendingPathComponent("dosetap.sqlite").path
            guard (try? DataFolder.exists(folder: directory.path, file: file)) == true,
                  let reader = try? DoseTapDatabase(readingAt: file, forGood: false),
                  (try? reader.writer.read({ db in try Migrations.migrator.hasCompletedMigrations(db) })) == true
            else { throw problem }
            reader.waiting.withLock { $0 = (directory, problem) }
            return reader
        }
    }

    /// Opens the database for writing again if it waits to be writable; throws why it still cannot be.
    private func becomeWritable() throws {
        guard let (directory, _) = waiting.withLock({ $0 }) else { return }
        do {
            let fresh = try Self.openWritable(directory: directory, path: path, patience: .brief)
            pool.withLock { $0 = fresh }
            waiting.withLock { $0 = nil }
        } catch let problem as StoreError {
            waiting.withLock { $0 = (directory, problem) }
            throw problem
        }
    }

    /// Whether a write would be taken now, without writing anything (#51: the agent checks on its back-off while the
    /// store is in trouble, so it says when the trouble ended even if nothing needed writing): the file opened for
    /// writing (an agent's that waits to be), the write lock taken within a quarter of a second and given back, and
    /// at least 1 MiB free in the folder. Throws the reason, as a write would.
    public func checkWritable() throws {
        try writable()
        do {
            try writer.writeWithoutTransaction { db in
                try patiently(db, .brief) {
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    try db.execute(sql: "ROLLBACK")
                }
            }
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "write", waited: WritePatience.brief.text)
        }
        if let free = Self.freeBytes(folder), free < 1 << 20 {
            throw StoreError("cannot write \(path): the disk is full; free some space and try again", cause: .full)
        }
    }

    /// The refusal of a write through a read-only instance: for an agent's database waiting to be writable, the
    /// reason it still cannot be written (after trying again); for one opened for reading, that.
    private func writable() throws {
        if openedForReading { throw StoreError("cannot write \(path): it was opened for reading only", cause: .readOnly) }
        try becomeWritable()
    }

    /// Opens the database only if it already exists (read paths of the CLI must not create files).
    /// A data folder that is a file, or that cannot be searched, is an error, never "no data".
    public static func openIfPresent(directory: URL) throws -> DoseTapDatabase? {
        let file = directory.appendingPathComponent("dosetap.sqlite").path
        guard try DataFolder.exists(folder: directory.path, file: file) else { return nil }
        return try DoseTapDatabase(directory: directory)
    }

    /// A read-only connection for commands that only read; nil when there is no database yet.
    /// A database written by an older version (migrations pending) is upgraded first, which needs
    /// write access; without it the error says so.
    public static func openForReading(directory: URL) throws -> DoseTapDatabase? {
        let file = directory.appendingPathComponent("dosetap.sqlite").path
        guard try DataFolder.exists(folder: directory.path, file: file) else { return nil }
        let reader = try DoseTapDatabase(readingAt: file)
        let complete: Bool
        do {
            complete = try reader.writer.read { db in try Migrations.migrator.hasCompletedMigrations(db) }
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

    /// What SQLite is given to read `path`: the path itself; or, in a folder nobody can write (a read-only mount,
    /// a backup on a DVD) that holds no `-wal` file, the file opened `immutable` (#51: `dose status` and
    /// `export csv` failed there — a WAL database needs its `-shm` file, which cannot be made). Safe: without a
    /// writable folder nobody can make the `-wal` or `-journal` file a write needs, so the file cannot change while
    /// it is read.
    static func readingPath(_ path: String, immutableIfNoWAL: Bool = false) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        var wal = stat()
        // No `-wal` file, or an empty one (a reader on a full disk may leave one of 0 bytes): nothing committed outside
        // the file itself.
        let noWAL = stat(path + "-wal", &wal) != 0 || (immutableIfNoWAL && wal.st_size == 0)
        guard immutableIfNoWAL || access(folder.isEmpty ? "." : folder, W_OK) != 0, noWAL else { return path }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    /// The read-only pool of the file at `path`. On a full disk a WAL reader cannot make the `-shm` file it needs, so
    /// every read failed there — `alarm list`, `dose status`, and an agent starting there, which exited at once (#51);
    /// then, when no `-wal` file holds anything, the file is opened `immutable`: no writer can make the `-wal` a write
    /// would need either, so the file cannot change until space is freed (and an agent then opens it for writing).
    static func readingPool(_ path: String) throws -> DatabasePool {
        do {
            return try DatabasePool(path: readingPath(path), configuration: configuration(readOnly: true))
        } catch let error as DatabaseError where explain(error, path: path, action: "open", reading: true).cause == .full {
            let fallback = readingPath(path, immutableIfNoWAL: true)
            guard fallback != path else { throw error }
            return try DatabasePool(path: fallback, configuration: configuration(readOnly: true))
        }
    }

    static func configuration(readOnly: Bool, patience: WritePatience = .standard) -> Configuration {
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(Double(patience.milliseconds) / 1000)
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
    /// `.immediate` (the default) is on the disk when this returns; `.deferred` may wait for a later commit (see
    /// `CommitDurability`). `wakesPlanners: false` is for a commit nothing the agent plans on depends on (a battery
    /// sample, which the monitor publishes as an event): `changeMark()` does not move for it, so the agent's own
    /// followers of the data folder are not woken by it (`DatabaseChangeGate`); other processes still are.
    /// `patience` is how long it waits for another process's write lock (`WritePatience`).
    ///
    /// Only a write that committed is counted and announced: a failed one changed nothing, and announcing it woke the
    /// agent's own planners to try again at once — a loop of hundreds of failures a second on a full disk (#51).
    func write<T>(durability: CommitDurability = .immediate, wakesPlanners: Bool = true, patience: WritePatience = .standard,
                  _ body: (Database) throws -> T) throws -> T {
        try writable()
        var didCommit = false
        defer {
            localWrites.add(1, ordering: .sequentiallyConsistent)
            if didCommit { committed(wakesPlanners: wakesPlanners) }
        }
        do {
            if durability == .deferred, deferrable() {
                return try writer.writeWithoutTransaction { db in try unsynced(db, patience: patience, committed: &didCommit, body) }
            }
            let started = monotonic()
            let result: T
            if patience == .standard {
                if syncState.withLock({ $0.unsure }) {
                    try writer.writeWithoutTransaction { db in try restoreSyncIfUnsure(db) }
                }
                result = try writer.write(body)
            } else {
                result = try writer.writeWithoutTransaction { db in
                    try restoreSyncIfUnsure(db)
                    return try patiently(db, patience) { try transaction(db, body) }
                }
            }
            didCommit = true
            syncState.withLock { $0.lastSynced = started }
            return result
        } catch let error as DatabaseError {
            throw Self.explain(error, path: path, action: "write", waited: patience.text)
        }
    }

    /// One immediate transaction around `body`.
    private func transaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try db.inTransaction(.immediate) {
            result = try body(db)
            return .commit
        }
        return result!
    }

    /// Runs `body` with the connection's busy timeout set to `patience`, then back to the standard one.
    private func patiently<T>(_ db: Database, _ patience: WritePatience, _ body: () throws -> T) throws -> T {
        guard patience != .standard else { return try body() }
        try db.execute(sql: "PRAGMA busy_timeout = \(patience.milliseconds)")
        defer { try? db.execute(sql: "PRAGMA busy_timeout = \(WritePatience.standard.milliseconds)") }
        return try body()
    }

    /// Whether a deferred commit may skip its `fsync`: a commit through this instance reached the disk less than
    /// `CommitDurability.deferredLimit` ago. If not, this one is synced and starts the next period.
    private func deferrable() -> Bool {
        let now = monotonic()
        return syncState.withLock { state in
            guard let last = state.lastSynced else { return false }
            return now >= last && now - last < CommitDurability.deferredLimit
        }
    }

    /// One transaction at `synchronous = NORMAL` (WAL: appended, not synced; the next synced commit or checkpoint
    /// syncs it too), then back to `FULL`. If going back fails, the next write sets it first. `committed` is set
    /// once the transaction committed, even when going back then fails.
    private func unsynced<T>(_ db: Database, patience: WritePatience, committed: inout Bool, _ body: (Database) throws -> T) throws -> T {
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
        syncState.withLock { $0.unsure = true }
        let outcome = Result { try patiently(db, patience) { try transaction(db, body) } }
        if case .success = outcome { committed = true }
        try db.execute(sql: "PRAGMA synchronous = FULL")
        syncState.withLock { $0.unsure = false }
        return try outcome.get()
    }

    /// `synchronous = FULL` again if a deferred write could not reset it (a write that must reach the disk never
    /// runs at `NORMAL`).
    private func restoreSyncIfUnsure(_ db: Database) throws {
        guard syncState.withLock({ $0.unsure }) else { return }
        try db.execute(sql: "PRAGMA synchronous = FULL")
        syncState.withLock { $0.unsure = false }
    }

    /// A write that manages its own transaction (`BEGIN IMMEDIATE` for the dose policy).
    func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try writable()
        var changed = false
        defer {
            localWrites.add(1, ordering: .sequentiallyConsistent)
            if changed { committed(wakesPlanners: true) }
        }
        do {
            let started = monotonic()
            let result = try writer.writeWithoutTransaction { db in
                try restoreSyncIfUnsure(db)
                // Announced when the body returned (it committed, or chose to roll back): a body that threw (a commit
                // that failed on a full disk) changed nothing.
                let result = try body(db)
                changed = true
                return result
            }
            syncState.withLock { $0.lastSynced = started }
            return result
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

    /// After a committed write: counted for `changeMark` first, then announced, so a follower woken by the
    /// announcement finds the mark moved.
    private func committed(wakesPlanners: Bool) {
        if wakesPlanners { plannedWrites.add(1, ordering: .sequentiallyConsistent) }
        announceCommit()
    }

    /// Tells a change the agent's planners must see from one they need not (`DatabaseChangeGate`).
    public struct ChangeMark: Equatable, Sendable {
        /// The writer connection's `PRAGMA data_version`: it moves with the commits of every other connection
        /// (another process, another instance), never with its own.
        var otherCommits: Int64
        /// `plannedWrites`.
        var plannedWrites: Int
    }

    /// The mark now: it moves with every commit of another connection and every write through this instance
    /// except those with `wakesPlanners: false`. nil for an instance opened for reading, or when the writer
    /// connection cannot answer (the caller takes that as a change). A few microseconds on the writer connection
    /// (it waits for a write in progress); it reads nothing from the disk unless another connection committed.
    public func changeMark() -> ChangeMark? {
        guard !isReadOnly else { return nil }
        let planned = plannedWrites.load(ordering: .sequentiallyConsistent)
        guard let version = try? writer.writeWithoutTransaction({ db in try Int64.fetchOne(db, sql: "PRAGMA data_version") }) else {
            return nil
        }
        return ChangeMark(otherCommits: version, plannedWrites: planned)
    }

    /// "wal" for a healthy database.
    public func journalMode() throws -> String {
        try read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// The applied migrations, oldest first.
    public func appliedMigrations() throws -> [String] {
        try read { db in try Migrations.migrator.appliedMigrations(db) }
    }
}

/// How long a write waits for another process's write lock before it fails.
public enum WritePatience: Sendable, Equatable {
    /// SQLite's busy timeout as every connection has it: 5 s (a command, a dose).
    case standard
    /// A quarter of a second: the agent's own bookkeeping (a ring, a reminder fired), kept in memory and written later
    /// when the lock is held longer — the agent's one thread must not wait 5 s while an alarm rings (#51).
    case brief

    var milliseconds: Int {
        switch self {
        case .standard: 5000
        case .brief: 250
        }
    }

    var text: String {
        switch self {
        case .standard: "5 s"
        case .brief: "0.25 s"
        }
    }
}

/// How soon a commit must be on the disk.
public enum CommitDurability: Sendable, Equatable {
    /// Synced before the write returns (`synchronous = FULL`): every dose, alarm and setting.
    case immediate
    /// May wait for the next synced commit or checkpoint, but never longer than `deferredLimit` after the last one:
    /// a battery sample, which the next minute's sample follows anyway. Its `fsync` is three waits on the disk
    /// each minute on battery (docs/performance.md); a power cut loses at most the samples of those minutes, never
    /// a dose.
    case deferred

    /// The longest a deferred commit waits for one that reaches the disk.
    public static let deferredLimit: Duration = .seconds(600)
}
