import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

@Suite("Buttons in the agent: allowlist, BTHome rules, one hold per holding, the dose policy")
struct ButtonInterpreterTests {
    static let address = "A4:C1:38:8D:18:B2"
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func advert(_ payload: [UInt8], at seconds: Double, address: String = address) -> BLEAdvert {
        BLEAdvert(address: address, name: nil, rssi: -60, serviceData: [BLEAdvert.bthomeUUID: payload], manufacturerData: [:],
                  uuids: [], receivedAt: t0.addingTimeInterval(seconds))
    }

    func interpreter(bindkey: String? = nil) throws -> (ButtonInterpreter, InMemoryLogHandler) {
        let logs = InMemoryLogHandler()
        let button = try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", bindkey: bindkey)
        return (ButtonInterpreter(buttons: [button], logger: Logger(label: "t") { _ in logs }), logs)
    }

    /// #25 §7: each new stranger address added an entry and a log line, for ever (+58 MB after 280,000).
    @Test("100,000 stranger addresses: what is remembered stays bounded, and the log gets at most 20 lines an hour and a count")
    func strangersBounded() throws {
        let (i, logs) = try interpreter()
        for n in 0..<100_000 {
            let address = String(format: "C0:%02X:%02X:%02X:00:01", (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF)
            // One advert every 36 ms: 100,000 in an hour.
            #expect(i.interpret(advert([0x40, 0x00, 0x07, 0x3A, 0x01], at: Double(n) * 0.036, address: address)).intents.isEmpty)
        }
        #expect(i.rememberedStrangers == ButtonInterpreter.strangersKept)
        let lines = logs.entries.filter { $0.message.description == "ignored a BTHome advert from a button that was not added" }
        #expect(lines.count == ButtonInterpreter.strangerLinesPerHour)
        // The next hour opens with the count of what was not logged.
        _ = i.interpret(advert([0x40, 0x00, 0x07, 0x3A, 0x01], at: 3700, address: "C1:00:00:00:00:01"))
        #expect(logs.entries.contains { $0.message.description == "ignored BTHome adverts from 99980 more addresses that were not added (not logged one by one)" })
        // The owner's own button still works.
        #expect(i.interpret(advert([0x40, 0x00, 0x07, 0x3A, 0x01], at: 3701)).intents.map(\.gesture) == [.single])
    }

    /// #26 §5: the "log once per cause" set grew with every cause named, and other services' sets stopped logging
    /// when full. Here: every unknown object id, each a cause, from an added button.
    @Test("distinct causes beyond the bound: what is remembered stays at the bound, and a cause forgotten is logged again (never silenced)")
    func causesBounded() throws {
        let logs = InMemoryLogHandler()
        let button = try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", bindkey: nil)
        let i = ButtonInterpreter(buttons: [button], logger: Logger(label: "t") { _ in logs }, causesKept: 16)
        // Every object id BTHome does not know, each a cause of its own ("unknown object id 0x.. at byte 1").
        let unknown = (0...255).map(UInt8.init).filter { id in
            guard case .failure(.unknownObjectID) = BTHome.parse([0x40, id, 0x01], address: BTHomeAddress(BluetoothAddress(Self.address)!),
                                                                 decryptor: nil) else { return false }
            return true
        }
        #expect(unknown.count > 32)
        for (n, id) in unknown.enumerated() {
            _ = i.interpret(advert([0x40, id, 0x01], at: Double(n)))
            #expect(i.remembered.causes <= 16)
        }
        let rejected = { logs.entries.filter { $0.message.description == "BTHome advert rejected" }.count }
        #expect(rejected() == unknown.count)
        // The same cause again at once: remembered, not logged twice.
        _ = i.interpret(advert([0x40, unknown.last!, 0x01], at: 300))
        #expect(rejected() == unknown.count)
        // The first cause was forgotten long ago: logged again.
        _ = i.interpret(advert([0x40, unknown[0], 0x01], at: 301))
        #expect(rejected() == unknown.count + 1)
        // A hold is followed while its button is added, and forgotten with the button.
        #expect(i.remembered.holds == 0)
        #expect(i.interpret(advert([0x40, 0x00, 0x50, 0x3A, 0x80], at: 302)).intents.map(\.gesture) == [.hold])
        #expect(i.remembered.holds == 1)
        i.replace([])
        #expect(i.remembered.holds == 0)
    }

    @Test("a press is a single → take; the same packet again is nothing; the battery is reported")
    func press() throws {
        let (i, _) = try interpreter()
        let first = i.interpret(advert([0x40, 0x00, 0x07, 0x01, 0x5D, 0x3A, 0x01], at: 0))
        #expect(first.intents.map(\.gesture) == [.single])
        #expect(first.intents.first?.action == .take)
        #expect(first.battery?.level == 93)
        #expect(i.interpret(advert([0x40, 0x00, 0x07, 0x01, 0x5D, 0x3A, 0x01], at: 0.5)).intents.isEmpty)
        #expect(i.interpret(advert([0x40, 0x00, 0x08, 0x3A, 0x02], at: 1)).intents.map(\.gesture) == [.double])
        // A periodic beacon (3A 00) never re-fires the last press.
        #expect(i.interpret(advert([0x40, 0x00, 0x09, 0x3A, 0x00], at: 2)).intents.isEmpty)
    }

    @Test("hold_press repeats while held: one hold (one undo) per holding")
    func oneHold() throws {
        let (i, _) = try interpreter()
        var holds = 0
        for (n, t) in [0.0, 0.5, 1.0, 1.5].enumerated() {
            holds += i.interpret(advert([0x40, 0x00, UInt8(10 + n), 0x3A, 0x80], at: t)).intents.count
        }
        #expect(holds == 1)
        // A new holding, 5 s later, counts again.
        #expect(i.interpret(advert([0x40, 0x00, 20, 0x3A, 0x80], at: 7)).intents.map(\.gesture) == [.hold])
    }

    @Test("a stranger's button does nothing, and is logged once, not once per packet")
    func stranger() throws {
        let (i, logs) = try interpreter()
        for n in 0..<5 {
            #expect(i.interpret(advert([0x40, 0x00, UInt8(n), 0x3A, 0x01], at: Double(n), address: "11:22:33:44:55:66")).intents.isEmpty)
        }
        #expect(logs.entries.filter { $0.message.description.contains("not added") }.count == 1)
    }

    @Test("encrypted: the right key acts; a wrong key, a replayed counter and a plaintext downgrade do nothing")
    func encrypted() throws {
        let (i, logs) = try interpreter(bindkey: Self.key)
        let key = try #require(BTHomeBindkey(hex: Self.key))
        let address = try #require(BTHomeAddress(Self.address))
        let press = key.seal(objects: [0x00, 0x01, 0x3A, 0x01], address: address, counter: 100)
        #expect(i.interpret(advert(press, at: 0)).intents.map(\.gesture) == [.single])
        // The same advert captured and replayed later: never acted on twice.
        #expect(i.interpret(advert(press, at: 30)).intents.isEmpty)
        // An older counter: refused.
        let old = key.seal(objects: [0x00, 0x05, 0x3A, 0x01], address: address, counter: 99)
        #expect(i.interpret(advert(old, at: 31)).intents.isEmpty)
        // Plaintext from this address once a bindkey is set: refused (downgrade).
        #expect(i.interpret(advert([0x40, 0x00, 0x06, 0x3A, 0x01], at: 32)).intents.isEmpty)
        // Another key: the MIC does not match.
        let other = try #require(BTHomeBindkey(hex: "00112233445566778899aabbccddeeff"))
        #expect(i.interpret(advert(other.seal(objects: [0x00, 0x07, 0x3A, 0x01], address: address, counter: 200), at: 33)).intents.isEmpty)
        let rejected = logs.entries.filter { $0.message.description == "BTHome advert rejected" }
        #expect(rejected.count >= 3)
    }

    @Test("remapping takes effect at once; removing a button stops it")
    func remap() throws {
        let (i, _) = try interpreter()
        var mapping = ButtonMapping()
        mapping.single = .snooze
        i.replace([try ButtonConfig(address: Self.address, kind: .bthome, name: "bedside", mapping: mapping)])
        #expect(i.interpret(advert([0x40, 0x00, 0x01, 0x3A, 0x01], at: 0)).intents.first?.action == .snooze)
        i.replace([])
        #expect(i.interpret(advert([0x40, 0x00, 0x02, 0x3A, 0x01], at: 1)).intents.isEmpty)
    }
}
