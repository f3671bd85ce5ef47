import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import PropertyBased
import Synchronization
import Testing

/// The storage findings of the hardening issue: unreadable rows, the append-only log under
/// `INSERT OR REPLACE`, racing migrations, readers beside a writer, stored values out of range.
@Suite("DoseTapStore under hostile data")
struct StoreHardeningTests {
    let ny = TimeZone(identifier: "America/New_York")!
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func fresh() throws -> (URL, DoseTapDatabase) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-hostile-\(UUID().uuidString)")
        return (url, try DoseTapDatabase(directory: url))
    }

    func take(_ repo: DoseRepository, at now: Date) throws -> DoseOutcome {
        try repo.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: now), now: now, timeZone: ny)
    }

    /// A row written behind the program's back (sqlite3, a damaged page, another tool).
    func insertRaw(_ db: DoseTapDatabase, id: DatabaseValueConvertible?, kind: String = "dose1",
                   at: DatabaseValueConvertible?, payload: String = "{}") throws {
        try db.write { d in
            try d.execute(sql: "INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, ?, ?, 'UTC', 'cli', ?)",
                          arguments: [id, kind, at, payload])
        }
    }

    static var garbage: [(String, DatabaseValueConvertible?, DatabaseValueConvertible?)] { [
        ("at as text", UUID().uuidString, "tonight"),
        ("at as a blob", UUID().uuidString, Data([0, 0xFF, 0x10])),
        ("an absurd at", UUID().uuidString, 1e300),
        ("a negative at", UUID().uuidString, -5_000_000_000.0),
        ("a non-UUID id", "not-a-uuid", 1_800_000_000.0),
        ("an id as a number", 42, 1_800_000_000.0),
    ] }

    @Test("an unreadable row never crashes, is reported by seq, and stops every dose input",
          arguments: 0..<6)
    func unreadableRow(_ index: Int) throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        // Before the fix this row either trapped in the decoder or was skipped, and a second Dose 1 was recorded.
        let (_, id, at) = Self.garbage[index]
        try insertRaw(db, id: id, at: at)
        let (events, unreadable) = try repo.readAll()
        #expect(events.isEmpty)
        #expect(unreadable == [1])
        #expect(throws: UnreadableLog(seqs: [1])) { try repo.status(now: t0, timeZone: ny) }
        guard case .refused(let refusal, _) = try take(repo, at: t0) else {
            Issue.record("a dose was recorded over an unreadable entry")
            return
        }
        #expect(refusal.code == .logUnreadable)
        #expect(refusal.message.contains("seq 1"))
        #expect(try repo.count() == 1)

        // Set aside by the person: the row stays, the rules stop counting it.
        try repo.ignoreUnreadable([1], now: t0)
        #expect(try repo.count() == 1)
        #expect(try repo.status(now: t0, timeZone: ny).phase == .idle)
        guard case .recorded = try take(repo, at: t0) else { Issue.record("refused after setting aside"); return }
        #expect(try repo.unreadableEntries().map(\.seq) == [1])
        #expect(try repo.unreadableEntries().first?.ignored == true)
    }

    @Test("only unreadable entries can be set aside")
    func ignoreReadable() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        _ = try take(repo, at: t0)
        #expect(throws: StoreError.self) { try repo.ignoreUnreadable([1], now: t0) }
        #expect(throws: StoreError.self) { try repo.ignoreUnreadable([7], now: t0) }
        #expect(try repo.status(now: t0, timeZone: ny).phase == .waiting)
    }

    @Test("property: whatever garbage a row holds, reading never traps and nothing is recorded over it")
    func garbageProperty() async throws {
        let values = Gen.int(in: 0...6)
        let numbers = Gen.double(in: -1e12...1e12)
        await propertyCheck(count: 60, input: values, numbers) { pick, number in
            let (_, db) = try fresh()
            let repo = DoseRepository(database: db)
            let at: DatabaseValueConvertible? = switch pick {
            case 0: number
            case 1: String(number)
            case 2: Data(String(number).utf8)
            case 3: Double.infinity
            case 4: -Double.infinity
            case 5: Int64(number)
            default: nil
            }
            do {
                try insertRaw(db, id: UUID().uuidString, at: at)
            } catch {
                return // NOT NULL refused it: nothing stored, nothing to read
            }
            let (events, unreadable) = try repo.readAll()
            #expect(events.count + unreadable.count == 1)
            if let event = events.first {
                #expect(DoseEventRow.plausibleTimes.contains(event.at.timeIntervalSince1970))
            }
            let before = try repo.count()
            let outcome = try take(repo, at: t0)
            if !unreadable.isEmpty {
                if case .recorded = outcome { Issue.record("recorded over an unreadable row") }
                #expect(try repo.count() == before)
            }
        }
    }

    /// #51 finding 10: a row `setting('clearing')` switched the delete guard off for every writer.
    @Test("no setting opens the dose log to DELETE; data clear still clears it, and the guard is back after it")
    func noBackDoor() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        guard case .recorded(let event, _, _) = try take(repo, at: t0) else { Issue.record("refused"); return }
        try db.write { d in try d.execute(sql: "INSERT INTO setting (key, value) VALUES ('clearing', '1')") }
        #expect(throws: (any Error).self) {
            try db.write { d in try d.execute(sql: "DELETE FROM dose_event") }
        }
        #expect(try repo.allEvents() == [event])
        try db.clearAll()
        #expect(try repo.count() == 0)
        _ = try take(repo, at: t0)
        #expect(throws: (any Error).self) {
            try db.write { d in try d.execute(sql: "DELETE FROM dose_event") }
        }
        #expect(try repo.count() == 1)
        // A clear that fails half-way (a row of another table refusing) leaves the guard in place: one transaction.
        try db.write { d in
            try d.execute(sql: "CREATE TEMP TRIGGER refuse_clear BEFORE DELETE ON main.setting BEGIN SELECT RAISE(ABORT, 'no'); END")
            try d.execute(sql: "INSERT INTO setting (key, value) VALUES ('x', '1')")
        }
        #expect(throws: (any Error).self) { try db.clearAll() }
        #expect(try repo.count() == 1)
        #expect(throws: (any Error).self) {
            try db.write { d in try d.execute(sql: "DELETE FROM dose_event") }
        }
    }

    @Test("a store of v11 with the old guard and a 'clearing' row: v12 removes the row and the condition")
    func upgradeClosesTheBackDoor() throws {
        let (url, db) = try fresh()
        let repo = DoseRepository(database: db)
        guard case .recorded = try take(repo, at: t0) else { Issue.record("refused"); return }
        try db.write { d in
            try d.execute(sql: """
                DROP TRIGGER dose_event_append_only_delete;
                CREATE TRIGGER dose_event_append_only_delete BEFORE DELETE ON dose_event
                WHEN (SELECT value FROM setting WHERE key = 'clearing') IS NULL
                BEGIN SELECT RAISE(ABORT, 'the dose log is append-only'); END;
                INSERT INTO setting (key, value) VALUES ('clearing', '1');
                DELETE FROM grdb_migrations WHERE identifier = 'v12-dose-log-guard';
                """)
        }
        let upgraded = try DoseTapDatabase(directory: url)
        #expect(try upgraded.read { d in try String.fetchOne(d, sql: "SELECT value FROM setting WHERE key = 'clearing'") } == nil)
        #expect(throws: (any Error).self) {
            try upgraded.write { d in try d.execute(sql: "DELETE FROM dose_event") }
        }
        #expect(try DoseRepository(database: upgraded).count() == 1)
    }

    @Test("INSERT OR REPLACE cannot rewrite a row of the append-only log")
    func insertOrReplace() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        guard case .recorded(let event, _, _) = try take(repo, at: t0) else { Issue.record("refused"); return }
        // Before the fix: REPLACE deleted the row without firing the delete trigger.
        #expect(throws: (any Error).self) {
            try db.write { d in
                try d.execute(sql: "INSERT OR REPLACE INTO dose_event (seq, id, kind, at, time_zone, source) VALUES (1, ?, 'dose2', ?, 'UTC', 'cli')",
                              arguments: [UUID().uuidString, t0.timeIntervalSince1970])
            }
        }
        #expect(throws: (any Error).self) {
            try db.write { d in
                try d.execute(sql: "REPLACE INTO dose_event (id, kind, at, time_zone, source) VALUES (?, 'dose2', ?, 'UTC', 'cli')",
                              arguments: [event.id.uuidString, t0.timeIntervalSince1970])
            }
        }
        #expect(try repo.allEvents() == [event])
        // A plain insert still works.
        _ = try take(repo, at: t0.addingTimeInterval(151 * 60))
        #expect(try repo.count() == 2)
    }

    @Test("twenty first opens of a fresh folder race and all succeed, migrated once")
    func migrationRace() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-race-\(UUID().uuidString)/data")
        let failures = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        let db = try DoseTapDatabase(directory: url)
                        _ = try SettingsRepository(database: db).load()
                        return nil
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var out: [String] = []
            for await failure in group { if let failure { out.append(failure) } }
            return out
        }
        #expect(failures == [])
        #expect(try DoseTapDatabase(directory: url).appliedMigrations().count == StoreSchema.migrationIdentifiers.count)
    }

    @Test("a reader opens and reads while another connection holds a write transaction")
    func readerBesideWriter() async throws {
        let (url, db) = try fresh()
        _ = try take(DoseRepository(database: db), at: t0)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let writerDone = DispatchSemaphore(value: 0)
        // A second process's writer, for our purposes: its own pool, its own BEGIN IMMEDIATE.
        let other = try DoseTapDatabase(directory: url)
        DispatchQueue.global().async {
            try? other.writer.writeWithoutTransaction { d in
                try d.execute(sql: "BEGIN IMMEDIATE")
                try d.execute(sql: "INSERT INTO setting (key, value) VALUES ('held', '1')")
                holding.signal()
                release.wait()
                try d.execute(sql: "COMMIT")
            }
            writerDone.signal()
        }
        holding.wait()
        // Before the fix every read command migrated on open, waited 5 s for the write lock and failed.
        let result = Result { () throws -> DosePhase in
            guard let reader = try DoseTapDatabase.openForReading(directory: url) else { throw StoreError("no database") }
            #expect(reader.isReadOnly)
            return try DoseRepository(database: reader).status(now: t0.addingTimeInterval(60), timeZone: ny).phase
        }
        release.signal()
        writerDone.wait()
        #expect(try result.get() == .waiting)
    }

    @Test("a read-only connection refuses writes with a sentence")
    func readOnlyRefusesWrites() throws {
        let (url, db) = try fresh()
        _ = try take(DoseRepository(database: db), at: t0)
        let reader = try #require(try DoseTapDatabase.openForReading(directory: url))
        #expect(throws: StoreError.self) { try take(DoseRepository(database: reader), at: t0.addingTimeInterval(10_000)) }
        #expect(try DoseRepository(database: reader).count() == 1)
    }

    @Test("a data folder that is a file is an error, not an empty night")
    func dataFolderIsAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-file-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        #expect(throws: StoreError.self) { try DoseTapDatabase.openForReading(directory: file) }
        #expect(throws: StoreError.self) { try DoseTapDatabase.openIfPresent(directory: file) }
        #expect(throws: StoreError.self) { try DoseTapDatabase(directory: file) }
        #expect(try Data(contentsOf: file) == Data("x".utf8))
    }

    @Test("a stored target out of range never moves the reminder: the default 165 is used")
    func storedNegativeTarget() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        // A Dose 1 whose payload was edited to -30 (before the fix: a reminder 30 min before Dose 1).
        try insertRaw(db, id: UUID().uuidString, at: t0.timeIntervalSince1970, payload: #"{"targetMinutes":-30}"#)
        let status = try repo.status(now: t0.addingTimeInterval(60), timeZone: ny)
        #expect(status.reminderAt == t0.addingTimeInterval(165 * 60))
        // Settings edited to -30: Dose 1 records the default, the other answers are kept.
        try db.write { d in
            try d.execute(sql: """
                INSERT INTO setting (key, value) VALUES ('user', '{"bedtime":"23:15","wakeTime":"06:30","dose1Grams":4.5,"dose2Grams":4.5,"dose2TargetMinutes":-30,"notificationsEnabled":true,"quietMode":false,"configured":true}')
                """)
        }
        let settings = try SettingsRepository(database: db).load()
        #expect(settings.dose2TargetMinutes == 165)
        #expect(settings.bedtime == "23:15")
    }

    @Test("a full disk is said in plain words, naming the file")
    func fullDiskMessage() {
        let full = DoseTapDatabase.explain(DatabaseError(resultCode: .SQLITE_FULL), path: "/d/dosetap.sqlite", action: "write")
        #expect(full.description == "cannot write /d/dosetap.sqlite: the disk is full; free some space and try again (nothing was recorded)")
        let busy = DoseTapDatabase.explain(DatabaseError(resultCode: .SQLITE_BUSY), path: "/d/dosetap.sqlite", action: "write")
        #expect(busy.description.contains("another process kept the database locked"))
        #expect(!full.description.contains("disk I/O error"))
    }
}
