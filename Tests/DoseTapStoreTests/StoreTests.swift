import DoseTapCore
@testable import DoseTapStore
import GRDB
import PropertyBased
import DoseTapTesting
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("DoseTapStore")
struct StoreTests {
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a new database is created in WAL mode with its migrations applied")
    func create() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir.appendingPathComponent("nested/data"))
        #expect(try db.appliedMigrations() == ["v1-battery-samples", "v2-dose-log", "v3-buttons", "v4-append-only-replace", "v5-alarms", "v6-alarm-rings", "v7-usage-alerts", "v8-alarm-backups", "v9-household", "v10-household-held", "v11-flic2", "v12-dose-log-guard", "v13-dose-event-future", "v14-household-memory"])
        #expect(try db.journalMode() == "wal")
        // Re-opening runs no migration twice.
        let again = try DoseTapDatabase(directory: dir.appendingPathComponent("nested/data"))
        #expect(try again.appliedMigrations() == ["v1-battery-samples", "v2-dose-log", "v3-buttons", "v4-append-only-replace", "v5-alarms", "v6-alarm-rings", "v7-usage-alerts", "v8-alarm-backups", "v9-household", "v10-household-held", "v11-flic2", "v12-dose-log-guard", "v13-dose-event-future", "v14-household-memory"])
    }

    /// GRDB's pool sets `synchronous = NORMAL` on its writer after the configuration's own set-up: in WAL mode
    /// that syncs only at checkpoints, and a dose the (long-running) agent recorded could be lost to a power cut.
    @Test("the writer syncs every commit (synchronous = FULL), on a new database and a re-opened one, after writes too")
    func everyCommitIsSynced() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir)
        #expect(try db.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
        try BatterySampleRepository(database: db).append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        #expect(try db.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
        let again = try DoseTapDatabase(directory: dir)
        #expect(try again.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
    }

    @Test("a deferred commit (a battery sample) skips its fsync only within 10 minutes of a synced one; a dose never does")
    func deferredCommits() throws {
        let dir = try temporaryDirectory()
        let base = ContinuousClock.now
        let elapsed = Mutex<Duration>(.zero)
        let db = try DoseTapDatabase(directory: dir, monotonic: { base + elapsed.withLock { $0 } })
        let level = { (db: Database) in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        // Nothing synced yet through this instance: the first deferred commit is synced, and starts the period.
        #expect(try db.write(durability: .deferred, level) == 2)
        #expect(try db.write(durability: .deferred, level) == 1)
        // An immediate write right after one that was not synced: FULL again (and it syncs the earlier frames too).
        #expect(try db.write(level) == 2)
        #expect(try db.writeWithoutTransaction(level) == 2)
        // 599.999 s after the last synced commit: still deferred; at 600 s: synced.
        elapsed.withLock { $0 = .seconds(599) + .milliseconds(999) }
        #expect(try db.write(durability: .deferred, level) == 1)
        elapsed.withLock { $0 = .seconds(600) }
        #expect(try db.write(durability: .deferred, level) == 2)
        #expect(try db.write(durability: .deferred, level) == 1)
        // A clock that went backwards (another instant source) is not trusted: synced.
        elapsed.withLock { $0 = .seconds(-5) }
        #expect(try db.write(durability: .deferred, level) == 2)

        // The battery samples are deferred, and what they wrote is there; a dose after them is synced.
        elapsed.withLock { $0 = .seconds(10) }
        let samples = BatterySampleRepository(database: db)
        for minute in 0..<3 {
            try samples.append(BatterySample(at: t0.addingTimeInterval(Double(minute) * 60), level: 50 - Double(minute), onAC: false, status: .discharging))
        }
        #expect(try samples.samples(since: t0).map(\.level) == [50, 49, 48])
        #expect(try db.write(level) == 2)
        // A deferred transaction that fails leaves nothing and the connection at FULL.
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try db.write(durability: .deferred) { db in
                try db.execute(sql: "DELETE FROM battery_sample")
                throw Refused()
            }
        }
        #expect(try samples.samples(since: t0).count == 3)
        #expect(try db.write(level) == 2)
    }

    /// An inotify watcher woken by the commit's appends to the WAL can read before the commit is visible (it
    /// is synced first, then published in the shared-memory index, which inotify cannot see): a write ends
    /// with an event that comes after it is visible — the WAL closed after writing.
    @Test("a write, in a transaction or managing its own, ends with the WAL closed after writing (an inotify event after the commit)")
    func writeEndsWithAnEventAfterTheCommit() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        let opened: Bool = fd >= 0  // a Bool first: Debian's swiftlang 6.2 took `#require(fd >= 0)` for the Optional overload
        try #require(opened)
        defer { close(fd) }
        try #require(inotify_add_watch(fd, dir.path, UInt32(IN_MODIFY | IN_CLOSE_WRITE)) >= 0)
        func events() -> [(mask: UInt32, name: String)] {
            var all: [(UInt32, String)] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                var offset = 0
                while offset + 16 <= n {
                    let mask = buffer[(offset + 4)..<(offset + 8)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                    let length = Int(buffer[(offset + 12)..<(offset + 16)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
                    let name = String(decoding: buffer[(offset + 16)..<min(n, offset + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
                    all.append((mask, name))
                    offset += 16 + length
                }
            }
            return all
        }
        _ = events()
        try BatterySampleRepository(database: db).append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        let first = events()
        #expect(first.contains { $0.mask & UInt32(IN_MODIFY) != 0 && $0.name == "dosetap.sqlite-wal" }, "the commit appended to the WAL")
        #expect(first.last.map { $0.mask & UInt32(IN_CLOSE_WRITE) != 0 && $0.name == "dosetap.sqlite-wal" } == true, "\(first)")
        _ = try db.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE; DELETE FROM battery_sample; COMMIT") }
        let second = events()
        #expect(second.last.map { $0.mask & UInt32(IN_CLOSE_WRITE) != 0 && $0.name == "dosetap.sqlite-wal" } == true, "\(second)")
    }

    /// The agent's own battery sample must not wake its planners (six of them re-read the database after every
    /// sample, #29); everything else that may change a plan must.
    @Test("the change mark moves with every write but a battery sample's, and with every commit of another connection")
    func changeMark() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir)
        let samples = BatterySampleRepository(database: db)
        let start = try #require(db.changeMark())
        #expect(db.changeMark() == start)
        try samples.append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        try samples.appendLevel(source: "button:bedside", level: 80, at: t0)
        #expect(db.changeMark() == start)
        try db.write { db in try db.execute(sql: "DELETE FROM reminder_fired") }
        let afterWrite = try #require(db.changeMark())
        #expect(afterWrite != start)
        _ = try db.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE; DELETE FROM reminder_fired; COMMIT") }
        let afterOwnTransaction = try #require(db.changeMark())
        #expect(afterOwnTransaction != afterWrite)
        // Another connection (the command line): even its battery sample is a change here.
        try BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
            .append(BatterySample(at: t0.addingTimeInterval(60), level: 49, onAC: false, status: .discharging))
        #expect(db.changeMark() != afterOwnTransaction)
        // A database opened for reading has no mark: whoever asks takes every burst as a change.
        #expect(try #require(try DoseTapDatabase.openForReading(directory: dir)).changeMark() == nil)
    }

    @Test("the gate declines a burst of the database's files after the agent's own battery sample, and no other")
    func changeGate() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir)
        let samples = BatterySampleRepository(database: db)
        let gate = DatabaseChangeGate(database: db)
        let wal: Set<String> = ["dosetap.sqlite-wal"]
        // Made before the planners first plan: a sample after that wakes none of them, whichever files it touched.
        try samples.append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        #expect(!gate.wakes(changed: wal))
        try samples.append(BatterySample(at: t0.addingTimeInterval(60), level: 49, onAC: false, status: .discharging))
        #expect(!gate.wakes(changed: ["dosetap.sqlite-wal", "dosetap.sqlite-shm", "dosetap.sqlite"]))
        // Another file of the folder, or an event without a name (an overflow): always.
        #expect(gate.wakes(changed: ["dosetap.sqlite-wal", "web-secret"]))
        #expect(gate.wakes(changed: [""]))
        // A write of the agent that may change a plan: once, then nothing new.
        try db.write { db in try db.execute(sql: "DELETE FROM reminder_fired") }
        #expect(gate.wakes(changed: wal))
        #expect(!gate.wakes(changed: wal))
        // The command line's commit.
        try BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
            .append(BatterySample(at: t0.addingTimeInterval(120), level: 48, onAC: false, status: .discharging))
        #expect(gate.wakes(changed: wal))
        #expect(!gate.wakes(changed: wal))
        // No mark (a database opened for reading): every burst wakes.
        let unmarked = DatabaseChangeGate(database: try #require(try DoseTapDatabase.openForReading(directory: dir)))
        #expect(unmarked.wakes(changed: wal))
        #expect(unmarked.wakes(changed: wal))
    }

    @Test("a marked read is kept across the agent's battery samples and read again after any other commit")
    func markedRead() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir)
        let samples = BatterySampleRepository(database: db)
        let alarms = MarkedRead<Int>(database: db)
        var reads = 0
        func count() throws -> Int {
            try alarms.value {
                reads += 1
                return try db.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM alarm") ?? -1 }
            }
        }
        #expect(try count() == 0 && reads == 1)
        #expect(try count() == 0 && reads == 1)
        try samples.append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        #expect(try count() == 0 && reads == 1)
        // This instance's write, then another connection's (the command line): each read again.
        try db.write { db in try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('07:00', 'a', 'daily', 1, 0)") }
        #expect(try count() == 1 && reads == 2)
        try DoseTapDatabase(directory: dir).write { db in
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('08:00', 'b', 'daily', 1, 0)")
        }
        #expect(try count() == 2 && reads == 3)
        #expect(try count() == 2 && reads == 3)
        // A read that fails keeps nothing new: the next one reads.
        struct Refused: Error {}
        try db.write { db in try db.execute(sql: "DELETE FROM alarm") }
        #expect(throws: Refused.self) { _ = try alarms.value { throw Refused() } }
        #expect(try count() == 0 && reads == 4)
        // Without a mark (opened for reading): every call reads.
        let reading = try #require(try DoseTapDatabase.openForReading(directory: dir))
        let unmarked = MarkedRead<Int>(database: reading)
        var unmarkedReads = 0
        for _ in 0..<2 { _ = try unmarked.value { unmarkedReads += 1; return 0 } }
        #expect(unmarkedReads == 2)
    }

    @Test("openIfPresent does not create a database")
    func openIfPresent() throws {
        let dir = try temporaryDirectory()
        #expect(try DoseTapDatabase.openIfPresent(directory: dir) == nil)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("dosetap.sqlite").path))
        _ = try DoseTapDatabase(directory: dir)
        #expect(try DoseTapDatabase.openIfPresent(directory: dir) != nil)
    }

    @Test("samples round-trip with every field, oldest first")
    func roundTrip() throws {
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: try temporaryDirectory()))
        let a = BatterySample(at: t0, level: 80.5, energyWh: 40.25, energyFullWh: 50, rateW: 9.5, onAC: false, status: .discharging)
        let b = BatterySample(at: t0.addingTimeInterval(60), level: 80, onAC: true, status: .notCharging)
        try repo.append(b)
        try repo.append(a)
        #expect(try repo.samples(since: t0) == [a, b])
        #expect(try repo.samples(since: t0.addingTimeInterval(1)) == [b])
    }

    @Test("history is bounded to the last 7 days")
    func retention() throws {
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: try temporaryDirectory()))
        let week = 7.0 * 24 * 3600
        try repo.append(BatterySample(at: t0, level: 90, onAC: false, status: .discharging))
        try repo.append(BatterySample(at: t0.addingTimeInterval(week - 1), level: 50, onAC: false, status: .discharging))
        #expect(try repo.count() == 2)
        try repo.append(BatterySample(at: t0.addingTimeInterval(week + 1), level: 49, onAC: false, status: .discharging))
        #expect(try repo.count() == 2)
        #expect(try repo.samples(since: .distantPast).map(\.level) == [50, 49])
    }

    @Test("two connections (the CLI and the agent) see each other's writes")
    func twoProcesses() throws {
        let dir = try temporaryDirectory()
        let agent = BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
        let cli = BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
        try agent.append(BatterySample(at: t0, level: 70, onAC: false, status: .discharging))
        #expect(try cli.samples(since: .distantPast).count == 1)
    }

    @Test("a data directory that cannot be created is a one-line error")
    func unwritable() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: file)
        #expect {
            _ = try DoseTapDatabase(directory: file.appendingPathComponent("data"))
        } throws: { error in
            "\(error)".contains("data directory \(file.path)/data is not a folder: part of its path is a file") && !"\(error)".contains("\n")
        }
    }

    @Test("a corrupt database file is refused with a reason and left in place")
    func corrupt() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("dosetap.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: file)
        #expect(throws: StoreError.self) { _ = try DoseTapDatabase(directory: dir) }
        #expect(try Data(contentsOf: file) == Data(repeating: 0x41, count: 4096))
    }

    @Test("XDG paths: flag, then DOSETAP_DATA_DIR, then XDG_DATA_HOME, then ~/.local/share")
    func paths() {
        let env = ["HOME": "/home/p", "XDG_DATA_HOME": "/x/data", "XDG_CONFIG_HOME": "/x/config", "DOSETAP_DATA_DIR": "/d"]
        #expect(DataPaths.resolve(dataDirectory: "/flag", environment: env).dataDirectory.path == "/flag")
        #expect(DataPaths.resolve(environment: env).dataDirectory.path == "/d")
        var e = env
        e["DOSETAP_DATA_DIR"] = nil
        #expect(DataPaths.resolve(environment: e).dataDirectory.path == "/x/data/dosetap")
        #expect(DataPaths.resolve(environment: e).configFile.path == "/x/config/dosetap/config.toml")
        // A relative XDG path is invalid by the spec and ignored.
        e["XDG_DATA_HOME"] = "relative"
        e["XDG_CONFIG_HOME"] = ""
        #expect(DataPaths.resolve(environment: e).dataDirectory.path == "/home/p/.local/share/dosetap")
        #expect(DataPaths.resolve(environment: e).configFile.path == "/home/p/.config/dosetap/config.toml")
    }

    @Test("the one-shot front's data folder (a string, no URL) is the full program's folder, odd spellings included")
    func dataDirectoryPathIsResolvesFolder() {
        let homes = ["/home/p", "/home/p/", "/home//p", "/h ö/p"]
        let dirs: [String?] = [nil, "", "/flag", "/flag/", "//a//b/", "rel/dir", "./x", "/ünï cøde/d"]
        let datas: [String?] = [nil, "", "/d", "/d/", "relative"]
        let xdgs: [String?] = [nil, "", "/x/data", "/x//data/", "relative"]
        var checked = 0
        for home in homes {
            for dir in dirs {
                for data in datas {
                    for xdg in xdgs {
                        var env = ["HOME": home]
                        env["DOSETAP_DATA_DIR"] = data
                        env["XDG_DATA_HOME"] = xdg
                        let path = DataPaths.dataDirectoryPath(dataDirectory: dir, environment: env)
                        let url = DataPaths.resolve(dataDirectory: dir, environment: env).dataDirectory
                        // The same folder: equal once repeated and trailing slashes are folded, as the file system does.
                        #expect(URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL.path == url.standardizedFileURL.path,
                                "\(String(describing: dir)) \(env)")
                        #expect(path.hasPrefix("/"))
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 4 * 8 * 5 * 5)
    }
}

@Suite("The durable dose log")
struct DoseLogStoreTests {
    func database() throws -> (URL, DoseTapDatabase) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-dose-\(UUID().uuidString)")
        return (url, try DoseTapDatabase(directory: url))
    }

    let ny = TimeZone(identifier: "America/New_York")!
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func take(_ repo: DoseRepository, at: Date, source: InputSource = .cli) throws -> DoseOutcome {
        try repo.submit(DoseInput(command: .take(confirmLate: false), source: source, issuedAt: at), now: at, timeZone: ny)
    }

    @Test("events round-trip with kind, instant, zone, source and payload, in log order")
    func roundTrip() throws {
        let (_, db) = try database()
        let repo = DoseRepository(database: db)
        let events = [
            DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 195), at: t0, timeZone: "America/New_York", source: .button),
            DoseEvent(id: UUID(), kind: .snooze, at: t0.addingTimeInterval(60), timeZone: "Europe/Paris", source: .notification),
            DoseEvent(id: UUID(), kind: .skip(.sideEffects), at: t0.addingTimeInterval(120), timeZone: "UTC", source: .cli),
            DoseEvent(id: UUID(), kind: .skip(nil), at: t0.addingTimeInterval(121), timeZone: "UTC", source: .web),
            DoseEvent(id: UUID(), kind: .dose2(late: true), at: t0.addingTimeInterval(180), timeZone: "UTC", source: .cli),
        ]
        let undo = DoseEvent(id: UUID(), kind: .undo(of: events[1].id), at: t0.addingTimeInterval(61), timeZone: "UTC", source: .agent)
        try repo.append(events + [undo])
        #expect(try repo.allEvents() == events + [undo])
    }

    @Test("the log is append-only: the database itself refuses updates and deletes")
    func appendOnly() throws {
        let (_, db) = try database()
        let repo = DoseRepository(database: db)
        _ = try take(repo, at: t0)
        #expect(throws: (any Error).self) { try db.writer.write { try $0.execute(sql: "UPDATE dose_event SET at = 0") } }
        #expect(throws: (any Error).self) { try db.writer.write { try $0.execute(sql: "DELETE FROM dose_event") } }
        #expect(try repo.count() == 1)
    }

    @Test("a refused input writes nothing; an accepted one is visible to a second connection at once")
    func refusedWritesNothing() throws {
        let (url, db) = try database()
        let repo = DoseRepository(database: db)
        guard case .recorded = try take(repo, at: t0) else { Issue.record("dose 1 refused"); return }
        guard case .refused(let r, _) = try take(repo, at: t0.addingTimeInterval(60)) else { Issue.record("dose 2 too early accepted"); return }
        #expect(r.code == .tooEarly)
        let other = DoseRepository(database: try DoseTapDatabase(directory: url))
        #expect(try other.count() == 1)
        #expect(try other.status(now: t0.addingTimeInterval(61), timeZone: ny).phase == .waiting)
    }

    @Test("two connections pressing take at the same instant record exactly one Dose 2", arguments: 0..<5)
    func race(round: Int) async throws {
        let (url, db) = try database()
        _ = try take(DoseRepository(database: db), at: t0)
        let when = t0.addingTimeInterval(170 * 60)
        let zone = ny
        // Four threads (not tasks: SQLite's busy wait blocks), each with its own pool, as separate processes would be.
        let results = Mutex<[Bool]>([])
        let group = DispatchGroup()
        for _ in 0..<4 {
            DispatchQueue.global().async(group: group) {
                let recorded: Bool
                do {
                    let repo = DoseRepository(database: try DoseTapDatabase(directory: url))
                    let outcome = try repo.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: when),
                                                  now: when, timeZone: zone)
                    if case .recorded = outcome { recorded = true } else { recorded = false }
                } catch {
                    recorded = false
                }
                results.withLock { $0.append(recorded) }
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { done.resume() }
        }
        let outcomes = results.withLock { $0 }
        #expect(outcomes.count == 4)
        #expect(outcomes.filter { $0 }.count == 1)
        let events = try DoseRepository(database: db).allEvents()
        #expect(events.filter { if case .dose2 = $0.kind { true } else { false } }.count == 1)
    }

    @Test("the target in the settings is the one Dose 1 records")
    func targetFromSettings() throws {
        let (_, db) = try database()
        var settings = UserSettings.defaults
        settings.dose2TargetMinutes = 210
        try SettingsRepository(database: db).save(settings)
        let repo = DoseRepository(database: db)
        guard case .recorded(let event, _, let status) = try take(repo, at: t0) else { Issue.record("refused"); return }
        #expect(event.kind == .dose1(targetMinutes: 210))
        #expect(status.reminderAt == t0.addingTimeInterval(210 * 60))
    }

    @Test("settings persist and survive a reopen; data clear removes everything")
    func settingsAndClear() throws {
        let (url, db) = try database()
        var s = UserSettings.defaults
        s.bedtime = "23:15"
        s.configured = true
        try SettingsRepository(database: db).save(s)
        _ = try take(DoseRepository(database: db), at: t0)
        try BatterySampleRepository(database: db).append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
        let reopened = try DoseTapDatabase(directory: url)
        #expect(try SettingsRepository(database: reopened).load() == s)
        let rows = { try Dictionary(uniqueKeysWithValues: reopened.clearedCounts().map { ($0.table.table, $0.rows) }) }
        #expect(try rows()["dose_event"] == 1 && rows()["setting"] == 1 && rows()["battery_sample"] == 1)
        try reopened.clearAll()
        #expect(try rows().values.allSatisfy { $0 == 0 })
        #expect(try SettingsRepository(database: reopened).load() == .defaults)
        // The append-only guard is back after the clear.
        _ = try take(DoseRepository(database: reopened), at: t0)
        #expect(throws: (any Error).self) { try reopened.writer.write { try $0.execute(sql: "DELETE FROM dose_event") } }
    }
}

@Suite("data clear: one table list for the confirmation and the deletion (#26)")
struct ClearedTablesTests {
    /// Every table of the schema is either cleared or kept, once: a migration that adds a table must say which.
    @Test("every table of the schema is in exactly one of the lists: cleared or kept")
    func everyTablePlaced() throws {
        let db = try DoseTapDatabase(directory: FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-tables-\(UUID().uuidString)"))
        let cleared = StoredTables.cleared.map(\.table)
        #expect(Set(cleared).count == cleared.count)
        #expect(Set(cleared).isDisjoint(with: StoredTables.kept))
        #expect(try db.tableNames() == (cleared + StoredTables.kept).sorted())
    }

    /// A row in every table; a clear empties exactly the cleared ones and leaves the alarms.
    @Test("a clear empties every table it lists (each had a row) and no other; the dose log's guard is back after it")
    func clearsWhatItLists() throws {
        let db = try DoseTapDatabase(directory: FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-tables-\(UUID().uuidString)"))
        try db.write { db in
            try db.execute(sql: """
                INSERT INTO setting (key, value) VALUES ('user', '{}');
                INSERT INTO dose_event (id, kind, at, time_zone, source) VALUES ('a', 'dose1', 1, 'UTC', 'cli');
                INSERT INTO dose_event_ignored (seq, ignored_at) VALUES (1, 1);
                INSERT INTO dose_event_future (id, seen_at) VALUES ('a', 1);
                INSERT INTO reminder_fired VALUES ('s', 'dose2', 1, 1);
                INSERT INTO battery_sample (at, level, on_ac, status) VALUES (1, 50, 0, 'discharging');
                INSERT INTO button (address, kind, name, bindkey, mapping, added_at) VALUES ('A4:C1:38:00:00:01', 'bthome', 'b', 'k', '{}', 1);
                INSERT INTO button_progress VALUES ('A4:C1:38:00:00:01', 1, 1);
                INSERT INTO alert_source (name) VALUES ('BAT0');
                INSERT INTO alert_state VALUES ('BAT0', '{}');
                INSERT INTO alert_history (at, source, usage, level) VALUES (1, 'BAT0', 90, 'warning');
                INSERT INTO household_occurrence (owner, alarm_id, at, label, time, targets) VALUES ('o', 1, 1, 'l', '05:00', '[]');
                INSERT INTO household_answer VALUES ('o', 1, 1, 'stop', NULL, 1, 'x');
                INSERT INTO household_slot (owner, alarm_id, occurrence, target, at, outcome, updated_at) VALUES ('o', 1, 1, 0, 1, 'rang', 1);
                INSERT INTO backup_ring (owner, alarm_id, occurrence, target, at, label, time, started_at) VALUES ('o', 1, 1, 0, 1, 'l', '05:00', 1);
                INSERT INTO household_forgotten VALUES ('old-pi', 1);
                INSERT INTO household_refused VALUES ('a', 1, 1);
                INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('05:00', 'Wake', 'daily', 1, 1);
                INSERT INTO alarm_import VALUES ('config', 1);
                INSERT INTO alarm_ring (alarm_id, kind, due_at, outcome) VALUES (1, 'alarm', 1, 'stopped');
                INSERT INTO alarm_backup VALUES (1, 0, 'device:x');
                """)
        }
        #expect(try db.clearedCounts().map(\.rows) == Array(repeating: 1, count: StoredTables.cleared.count))
        try db.clearAll()
        #expect(try db.clearedCounts().allSatisfy { $0.rows == 0 })
        for table in StoredTables.kept {
            #expect(try db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM \(table)") } == 1, "\(table)")
        }
        try db.write { try $0.execute(sql: "INSERT INTO dose_event (id, kind, at, time_zone, source) VALUES ('b', 'dose1', 2, 'UTC', 'cli')") }
        #expect(throws: (any Error).self) { try db.write { try $0.execute(sql: "DELETE FROM dose_event") } }
    }
}

@Suite("The household's occurrences: when each was first held (#25)")
struct HouseholdHeldTests {
    @Test("an occurrence planned again as it was keeps when it was first held; a changed or new one is held from now; a past one heard late is held late")
    func heldAt() throws {
        let db = try DoseTapDatabase(directory: FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-held-\(UUID().uuidString)"))
        let repo = HouseholdRepository(database: db)
        let t: Int64 = 1_800_000_000
        let first = Date(timeIntervalSince1970: TimeInterval(t - 3600))
        let plan = KnownPlan(label: "Wake", time: "05:00", occurrences: [t, t + 86_400], targets: [.device("bedroom-pi")])
        try repo.applyPlan(owner: "jen-laptop", alarmID: 1, plan, now: first)
        let later = first.addingTimeInterval(600)
        try repo.applyPlan(owner: "jen-laptop", alarmID: 1, plan, now: later)
        #expect(try repo.occurrences().map(\.heldAt) == [first, first])
        var changed = plan
        changed.targets = [.device("bedroom-pi"), .push("https://ntfy.sh/x")]
        changed.occurrences = [t, t + 86_400, t + 2 * 86_400]
        try repo.applyPlan(owner: "jen-laptop", alarmID: 1, changed, now: later)
        #expect(try repo.occurrences().map(\.heldAt) == [later, later, later])
        let late = Date(timeIntervalSince1970: TimeInterval(t + 60))
        try repo.applyPlan(owner: "garage", alarmID: 1, KnownPlan(label: "x", time: "05:00", occurrences: [t], targets: [.device("a")]), now: late)
        #expect(try repo.occurrences().first { $0.key.owner == "garage" }?.heldAt == late)
    }
}

@Suite("A household plan held in memory is the plan the store would hold (#51)")
struct HouseholdPlanInMemoryTests {
    /// Plans of two owners' alarms, received one after another (some withdrawn, some changed, some the same again,
    /// some occurrences already past): the store's `applyPlan` and `KnownOccurrence.applying` on what was read agree
    /// after every step — the agent rings a backup slot from a plan it could not write as the store would have it.
    @Test("applyPlan in the store and KnownOccurrence.applying in memory agree on every sequence of plans")
    func sameAsTheStore() async throws {
        let n = 14
        let owners = Gen.int(in: 0...2).array(of: n)
        let kinds = Gen.int(in: 0...5).array(of: n)
        let shifts = Gen.int(in: -2...3).array(of: n)
        let steps = Gen.int(in: 0...30_000).array(of: n)
        await propertyCheck(count: 12, input: owners, kinds, shifts, steps) { owners, kinds, shifts, steps in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-plans-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let db = try DoseTapDatabase(directory: folder)
            let repo = HouseholdRepository(database: db)
            let t: Int64 = 1_800_000_000
            var now = Date(timeIntervalSince1970: TimeInterval(t - 40_000))
            var memory = try repo.occurrences()
            for i in 0..<n {
                now = now.addingTimeInterval(TimeInterval(steps[i]))
                let (owner, alarm) = (["jen-laptop", "garage", "jen-laptop"][owners[i]], owners[i] == 2 ? 2 : 1)
                let base = t + Int64(shifts[i]) * 86_400 / 4
                let plan: KnownPlan? = switch kinds[i] {
                case 0: nil
                case 1: KnownPlan(label: "Wake", time: "05:00", occurrences: [base, base + 86_400], targets: [.device("bedroom-pi")])
                case 2: KnownPlan(label: "Wake", time: "05:00", occurrences: [base, base + 86_400], targets: [.device("kitchen"), .device("bedroom-pi")])
                case 3: KnownPlan(label: "Early", time: "04:30", occurrences: [base - 1800, base + 86_400 - 1800], targets: [.device("bedroom-pi")])
                case 4: KnownPlan(label: "Wake", time: "05:00", occurrences: [], targets: [.device("bedroom-pi")])
                default: KnownPlan(label: "Wake", time: "05:00", occurrences: [base, base, base + 2 * 86_400], targets: [.device("bedroom-pi")])
                }
                _ = try repo.applyPlan(owner: owner, alarmID: alarm, plan, now: now)
                memory = KnownOccurrence.applying(plan, owner: owner, alarmID: alarm, at: now, to: memory)
                let stored = try repo.occurrences()
                #expect(stored == memory, "step \(i): kind \(kinds[i]) of \(owner)/\(alarm) at \(now)")
                memory = stored
            }
        }
    }

    @Test("a past occurrence stays as planned; a coming one planned again as it was keeps when it was first held; a withdrawn plan keeps only the past")
    func boundaries() {
        let t: Int64 = 1_800_000_000
        let plan = KnownPlan(label: "Wake", time: "05:00", occurrences: [t, t + 86_400], targets: [.device("bedroom-pi")])
        let first = Date(timeIntervalSince1970: TimeInterval(t - 600))
        let held = KnownOccurrence.applying(plan, owner: "jen-laptop", alarmID: 1, at: first, to: [])
        #expect(held.map(\.key.at) == [t, t + 86_400] && held.allSatisfy { $0.heldAt == first })
        // At exactly t the occurrence at t is under way (kept as planned, whatever the new plan says); one second before, it is replaced.
        var changed = plan
        changed.targets = [.device("kitchen")]
        let atT = KnownOccurrence.applying(changed, owner: "jen-laptop", alarmID: 1, at: Date(timeIntervalSince1970: TimeInterval(t)), to: held)
        #expect(atT.first?.targets == [.device("bedroom-pi")] && atT.last?.targets == [.device("kitchen")])
        let before = KnownOccurrence.applying(changed, owner: "jen-laptop", alarmID: 1, at: Date(timeIntervalSince1970: TimeInterval(t - 1)), to: held)
        #expect(before.map(\.targets) == [[.device("kitchen")], [.device("kitchen")]])
        let again = KnownOccurrence.applying(plan, owner: "jen-laptop", alarmID: 1, at: first.addingTimeInterval(60), to: held)
        #expect(again.map(\.heldAt) == [first, first])
        let withdrawn = KnownOccurrence.applying(nil, owner: "jen-laptop", alarmID: 1, at: Date(timeIntervalSince1970: TimeInterval(t)), to: held)
        #expect(withdrawn.map(\.key.at) == [t])
        let other = KnownOccurrence.applying(nil, owner: "garage", alarmID: 1, at: first, to: held)
        #expect(other == held, "another owner's withdrawal leaves this one's plan")
    }
}
