import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import Testing

/// A Flic 2's pairing kept beside the button, and how far its events were acted on (#30).
@Suite("Flic 2 in the store")
struct Flic2StoreTests {
    static let address = "80:E4:DA:70:12:34"
    static let pairing = "78563412000102030405060708090a0b0c0d0e0f"
    static let mapping = String(decoding: (try? JSONEncoder().encode(ButtonMapping())) ?? Data(), as: UTF8.self)

    func database() throws -> DoseTapDatabase {
        try DoseTapDatabase(directory: FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-flic2-\(UUID().uuidString)"))
    }

    @Test("the pairing round-trips; progress is kept per button, cleared by a new pairing, by removal and by data clear")
    func pairingAndProgress() throws {
        let db = try database()
        let repo = ButtonRepository(database: db)
        try repo.save(try ButtonConfig(address: Self.address, kind: .flic2, name: "nightstand", pairing: Self.pairing))
        let stored = try #require(try repo.find(address: Self.address))
        #expect(stored.pairing == Self.pairing)
        #expect(try stored.flic2Pairing?.get() == Flic2Pairing(identifier: 0x1234_5678, key: Array(0..<16)))
        #expect(try repo.progress(address: Self.address) == nil)
        try repo.saveProgress(Flic2EventProgress(bootID: 7, eventCount: 41), address: Self.address)
        #expect(try repo.progress(address: Self.address) == Flic2EventProgress(bootID: 7, eventCount: 41))
        // The largest values survive (unsigned 32-bit in a signed column).
        try repo.saveProgress(Flic2EventProgress(bootID: .max, eventCount: .max), address: Self.address)
        #expect(try repo.progress(address: Self.address) == Flic2EventProgress(bootID: .max, eventCount: .max))
        // Renamed, same pairing: the progress stays.
        try repo.save(try ButtonConfig(address: Self.address, kind: .flic2, name: "bedside", pairing: Self.pairing))
        #expect(try repo.progress(address: Self.address) != nil)
        // Paired again: its events start afresh.
        try repo.save(try ButtonConfig(address: Self.address, kind: .flic2, name: "bedside", pairing: String(repeating: "ab", count: 20)))
        #expect(try repo.progress(address: Self.address) == nil)
        try repo.saveProgress(Flic2EventProgress(bootID: 1, eventCount: 2), address: Self.address)
        #expect(try repo.remove(address: Self.address))
        #expect(try repo.progress(address: Self.address) == nil)
        // Progress of a button not added is not kept.
        try repo.saveProgress(Flic2EventProgress(bootID: 1, eventCount: 2), address: Self.address)
        #expect(try repo.progress(address: Self.address) == nil)
        // data clear takes the pairing and the progress.
        try repo.save(try ButtonConfig(address: Self.address, kind: .flic2, pairing: Self.pairing))
        try repo.saveProgress(Flic2EventProgress(bootID: 1, eventCount: 2), address: Self.address)
        try db.clearAll()
        #expect(try db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM button_progress") } == 0)
        #expect(try repo.all().isEmpty)
    }

    @Test("a stored pairing that cannot be used makes the row unusable (it never acts), with the reason, never the text",
          arguments: [
              ("flic2", "78563412000102030405060708090a0b0c0d0e0", "the stored Flic 2 pairing is not 40 hex digits"),
              ("flic2", "78563412000102030405060708090a0b0c0d0e0f0", "the stored Flic 2 pairing is not 40 hex digits"),
              ("flic2", "７8563412000102030405060708090a0b0c0d0e0f", "the stored Flic 2 pairing is not 40 hex digits"),
              ("flic2", nil, "a Flic 2 button is added by pairing with it (dosetap button add --kind flic2)"),
              ("itag", "78563412000102030405060708090a0b0c0d0e0f", "a pairing is only for Flic 2 buttons"),
          ] as [(String, String?, String)])
    func unusable(kind: String, pairing: String?, reason: String) throws {
        let db = try database()
        try db.write { db in
            try db.execute(sql: "INSERT INTO button (address, kind, name, pairing, mapping, added_at) VALUES (?, ?, 'x', ?, ?, 0)",
                           arguments: [Self.address, kind, pairing, Self.mapping])
        }
        let (buttons, rows) = try ButtonRepository(database: db).load()
        #expect(buttons.isEmpty)
        #expect(rows.map(\.reason) == [reason])
        if let pairing { #expect(!rows[0].reason.contains(pairing)) }
    }

    @Test("a pairing stored as a number or a blob is unusable, not a trap")
    func wrongType() throws {
        let db = try database()
        try db.write { db in
            try db.execute(sql: "INSERT INTO button (address, kind, name, pairing, mapping, added_at) VALUES (?, 'flic2', 'x', x'0102', ?, 0)",
                           arguments: [Self.address, Self.mapping])
        }
        #expect(try ButtonRepository(database: db).unusable().map(\.reason) == ["unreadable Flic 2 pairing"])
    }
}
