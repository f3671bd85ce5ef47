import DoseTapCore
@testable import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// #51: a write the store refuses changed nothing and is not announced (announcing it woke the agent's planners to
/// try again at once: hundreds of failures a second on a full disk); the agent's brief writes give up on a held lock
/// in a quarter of a second and say why.
@Suite("Store: refused writes are not announced; brief patience", .serialized)
struct StoreLockTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func fresh() throws -> DoseTapDatabase {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-lock-\(UUID().uuidString)")
        return try DoseTapDatabase(directory: url)
    }

    func reminder() -> Reminder { Reminder(kind: .windowOpen, sessionID: UUID(), dueAt: t0) }

    @Test("a brief write under another process's write lock fails as locked and moves no change mark; after the release it is written and announced")
    func lockedNotAnnounced() throws {
        let db = try fresh()
        let repo = DoseRepository(database: db)
        let before = try #require(db.changeMark())
        let lock = try HeldWriteLock(database: db.path)
        let error = #expect(throws: StoreError.self) { try repo.markFired([reminder()], at: t0, patience: .brief) }
        #expect(error?.cause == .locked)
        #expect(error?.description.contains("locked for 0.25 s") == true)
        #expect(db.changeMark() == before, "a refused write is not a change")
        lock.release()
        try repo.markFired([reminder()], at: t0, patience: .brief)
        #expect(db.changeMark() != before)
    }

    @Test("the standard patience still says 5 s, and the cause")
    func standardLocked() throws {
        let db = try fresh()
        let lock = try HeldWriteLock(database: db.path)
        defer { lock.release() }
        let error = #expect(throws: StoreError.self) { try DoseRepository(database: db).markFired([reminder()], at: t0) }
        #expect(error?.cause == .locked)
        #expect(error?.description.contains("locked for 5 s") == true)
    }

    @Test("a brief write leaves the connection's own busy timeout at 5 s for the next write")
    func patienceRestored() throws {
        let db = try fresh()
        try DoseRepository(database: db).markFired([reminder()], at: t0, patience: .brief)
        let writerTimeout = try db.writer.writeWithoutTransaction { d in try Int.fetchOne(d, sql: "PRAGMA busy_timeout") }
        #expect(writerTimeout == 5000)
    }

    @Test("a write through the dose policy that commits is announced; one that throws is not")
    func policyWrites() throws {
        let db = try fresh()
        let repo = DoseRepository(database: db)
        let before = try #require(db.changeMark())
        let lock = try HeldWriteLock(database: db.path)
        #expect(throws: (any Error).self) {
            try repo.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: t0), now: t0, timeZone: .gmt)
        }
        #expect(db.changeMark() == before)
        lock.release()
        _ = try repo.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: t0), now: t0, timeZone: .gmt)
        #expect(db.changeMark() != before)
    }
}

@Suite("Store: a 0-byte database is a lost history, not a new one")
struct EmptyDatabaseFileTests {
    @Test("a 0-byte dosetap.sqlite is refused with the reason, and left as it is; a missing one is a new database")
    func emptyFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let file = url.appendingPathComponent("dosetap.sqlite")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        let error = #expect(throws: StoreError.self) { try DoseTapDatabase(directory: url) }
        #expect(error?.description == "\(file.path) is empty (0 bytes): the history it held is gone; restore it from a backup, or remove the file to start a new history")
        #expect(error?.cause == .damaged)
        #expect(throws: StoreError.self) { try DoseTapDatabase.openForAgent(directory: url) }
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int == 0, "nothing written over it")
        try FileManager.default.removeItem(at: file)
        #expect(try DoseTapDatabase(directory: url).appliedMigrations().count > 0)
    }

    @Test("#51: a history once kept here and now missing, or emptied, is refused with which it is and how to go on; the history file goes, a new one is made")
    func lostHistory() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-lost-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let file = url.appendingPathComponent("dosetap.sqlite")
        let marker = url.appendingPathComponent(DataFolder.historyFileName)
        // A folder that never held one: no history file, no error, a new database — and then the file.
        #expect(try DoseTapDatabase.openIfPresent(directory: url) == nil)
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        let db = try DoseTapDatabase(directory: url)
        _ = try DoseRepository(database: db).submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: Date()),
                                                now: Date(), timeZone: .gmt)
        #expect(FileManager.default.fileExists(atPath: marker.path))
        #expect(try String(contentsOf: marker, encoding: .utf8).contains("delete this file to start a new history on purpose"))
        // Deleted: every way in says so, and none makes a new one.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        let day = (try FileManager.default.attributesOfItem(atPath: marker.path)[.modificationDate] as? Date)?
            .formatted(.iso8601.year().month().day()) ?? "?"
        let missing = "\(file.path) is missing, but this folder has held a DoseTap history since \(day) (\(marker.path)): not starting a new, "
            + "empty one in its place; restore dosetap.sqlite from a backup, or remove \(marker.path) to start a new history"
        #expect((#expect(throws: StoreError.self) { try DoseTapDatabase(directory: url) })?.description == missing)
        #expect((#expect(throws: StoreError.self) { try DoseTapDatabase.openForAgent(directory: url) })?.description == missing)
        #expect((#expect(throws: StoreError.self) { try DoseTapDatabase.openIfPresent(directory: url) })?.description == missing)
        #expect((#expect(throws: StoreError.self) { try DoseTapDatabase.openForReading(directory: url) })?.description == missing)
        #expect(!FileManager.default.fileExists(atPath: file.path), "nothing made in its place")
        // Emptied (a failed copy): which it is.
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        let empty = #expect(throws: StoreError.self) { try DoseTapDatabase(directory: url) }
        #expect(empty?.description.hasPrefix("\(file.path) is empty (0 bytes), but this folder has held a DoseTap history since") == true)
        #expect(empty?.cause == .damaged)
        // The person chose a new history: the history file removed, the database file too.
        try FileManager.default.removeItem(at: file)
        try FileManager.default.removeItem(at: marker)
        #expect(try DoseTapDatabase(directory: url).appliedMigrations().count > 0)
        #expect(FileManager.default.fileExists(atPath: marker.path))
    }
}
