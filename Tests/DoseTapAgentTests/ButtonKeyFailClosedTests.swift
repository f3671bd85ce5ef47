import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
@testable import DoseTapStore
import GRDB
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

/// Finding "forged dose": a button stored as encrypted never acts on a plaintext advert, and a key
/// that cannot be read stops its button with an error instead of running it without a key.
@Suite("Encrypted buttons fail closed")
struct ButtonKeyFailClosedTests {
    static let address = "A4:C1:38:8D:18:B2"
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    /// A plaintext BTHome press anyone nearby can send (packet id, battery, button 01).
    static let plaintextPress: [UInt8] = [0x40, 0x00, 0x07, 0x01, 0x5D, 0x3A, 0x01]
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)

    func advert(_ payload: [UInt8], at seconds: Double = 0, address: String = address) -> BLEAdvert {
        BLEAdvert(address: address, name: nil, rssi: -60, serviceData: [BLEAdvert.bthomeUUID: payload], manufacturerData: [:],
                  uuids: [], receivedAt: clock.now().addingTimeInterval(seconds))
    }

    @Test("an unreadable bindkey (full-width digit) stops the button: a plaintext press does nothing, an error is logged")
    func unreadableKeyInTheInterpreter() throws {
        let logs = InMemoryLogHandler()
        var button = try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", bindkey: Self.key)
        button.bindkey = "２" + Self.key.dropFirst()
        let interpreter = ButtonInterpreter(buttons: [button], logger: Logger(label: "t") { _ in logs })
        #expect(interpreter.interpret(advert(Self.plaintextPress)).intents.isEmpty)
        #expect(interpreter.interpret(advert([0x40, 0x00, 0x08, 0x3A, 0x01], at: 1)).intents.isEmpty)
        let errors = logs.entries.filter { $0.level == .error && $0.message.description.hasPrefix("button stopped") }
        #expect(errors.count == 1)
        // Its encrypted adverts do nothing either: the button does not run at all.
        let sealed = try #require(BTHomeBindkey(hex: Self.key)).seal(objects: [0x00, 0x09, 0x3A, 0x01],
                                                                   address: BTHomeAddress(try BluetoothAddress(parsing: Self.address)), counter: 5)
        #expect(interpreter.interpret(advert(sealed, at: 2)).intents.isEmpty)
    }

    @Test("a readable bindkey: a plaintext press is a logged downgrade rejection, the sealed press acts")
    func plaintextRefused() throws {
        let logs = InMemoryLogHandler()
        let button = try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", bindkey: Self.key)
        let interpreter = ButtonInterpreter(buttons: [button], logger: Logger(label: "t") { _ in logs })
        #expect(interpreter.interpret(advert(Self.plaintextPress)).intents.isEmpty)
        #expect(logs.entries.contains { $0.metadata["reason"]?.description.contains("downgrade") == true })
        let sealed = try #require(BTHomeBindkey(hex: Self.key)).seal(objects: [0x00, 0x09, 0x3A, 0x01],
                                                                   address: BTHomeAddress(try BluetoothAddress(parsing: Self.address)), counter: 5)
        #expect(interpreter.interpret(advert(sealed, at: 1)).intents.map(\.gesture) == [.single])
    }

    /// What an older version could write: its check accepted a full-width "２".
    func storeBadKey(_ db: DoseTapDatabase) throws {
        try db.write { db in
            try db.execute(sql: "UPDATE button SET bindkey = ? WHERE address = ?", arguments: ["２" + Self.key.dropFirst(), Self.address])
        }
    }

    /// The store may hold a bindkey an older version accepted (it checked with `isHexDigit`).
    @Test("a bad bindkey in the button table: the button never acts, the row is reported, other buttons still work")
    func badKeyInTheStore() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try DoseTapDatabase(directory: dir)
        let buttons = ButtonRepository(database: db)
        try buttons.save(try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", bindkey: Self.key))
        try buttons.save(try ButtonConfig(address: "A4:C1:38:00:00:02", kind: .bthome, name: "spare"))
        try storeBadKey(db)
        let loaded = try buttons.load()
        #expect(loaded.buttons.map(\.address) == ["A4:C1:38:00:00:02"])
        #expect(loaded.unusable.map(\.address) == [Self.address])
        #expect(loaded.unusable.first?.reason.hasPrefix("invalid bindkey") == true)

        let logs = InMemoryLogHandler()
        let repo = DoseRepository(database: db)
        let service = ButtonService(sources: [], buttons: buttons, doses: DoseUseCases(repository: repo, clock: clock),
                                    samples: BatterySampleRepository(database: db), clock: clock,
                                    logger: Logger(label: "t") { _ in logs }, databaseChanges: nil)
        #expect(logs.entries.contains { $0.level == .error && $0.metadata["address"]?.description == Self.address })
        #expect(service.pipeline.handle(.advert(advert(Self.plaintextPress))).isEmpty)
        #expect(try repo.allEvents().isEmpty)
        // The button without a key still acts.
        #expect(service.pipeline.handle(.advert(advert(Self.plaintextPress, address: "A4:C1:38:00:00:02"))).count == 1)
    }
}
