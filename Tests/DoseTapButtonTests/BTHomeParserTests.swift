import DoseTapCore
import DoseTapCrypto
import Foundation
import Testing

/// The stateless parse: header, objects, encryption, rejections.
@Suite("BTHome v2 parser")
struct BTHomeParserTests {
    func parse(_ data: String, address: BTHomeAddress = shellyAddress, key: BTHomeBindkey? = nil) -> Result<BTHomeAdvert, BTHomeRejection> {
        BTHome.parse(bytes(data), address: address, decryptor: key)
    }

    func advert(_ data: String, address: BTHomeAddress = shellyAddress, key: BTHomeBindkey? = nil,
                sourceLocation: SourceLocation = #_sourceLocation) throws -> BTHomeAdvert {
        switch parse(data, address: address, key: key) {
        case .success(let advert): return advert
        case .failure(let rejection):
            Issue.record("rejected: \(rejection)", sourceLocation: sourceLocation)
            throw rejection
        }
    }

    func rejection(_ data: String, address: BTHomeAddress = shellyAddress, key: BTHomeBindkey? = nil) -> BTHomeRejection? {
        if case .failure(let r) = parse(data, address: address, key: key) { return r }
        return nil
    }

    func number(_ advert: BTHomeAdvert, _ name: String) -> Double? {
        for o in advert.objects where o.name == name { if case .number(let n) = o.value { return n } }
        return nil
    }

    // MARK: Header

    @Test("device-info byte: bit 0 encrypted, bit 1 embedded MAC, bit 2 trigger-based, bits 5–7 version")
    func deviceInfo() {
        let plain = BTHomeDeviceInfo(rawValue: 0x40)
        #expect(plain.version == 2 && !plain.isEncrypted && !plain.isTriggerBased && !plain.hasEmbeddedAddress)
        let shelly = BTHomeDeviceInfo(rawValue: 0x45)
        #expect(shelly.version == 2 && shelly.isEncrypted && shelly.isTriggerBased && !shelly.hasEmbeddedAddress)
        #expect(BTHomeDeviceInfo(rawValue: 0x42).hasEmbeddedAddress)
        #expect(BTHomeDeviceInfo(rawValue: 0xE0).version == 7)
        #expect(BTHomeDeviceInfo(rawValue: 0x45).description == "0x45")
    }

    @Test("only version 2 is BTHome v2", arguments: [(UInt8(0x00), UInt8(0)), (0x20, 1), (0x60, 3), (0x80, 4), (0xE4, 7)])
    func versions(info: UInt8, version: UInt8) {
        #expect(BTHome.parse([info, 0x01, 0x64], address: shellyAddress, decryptor: nil) == .failure(.badVersion(version)))
    }

    @Test("the trigger-based flag does not change the objects")
    func triggerBased() throws {
        #expect(try advert("44 00 21 01 5e 3a 01").objects == advert("40 00 21 01 5e 3a 01").objects)
        #expect(try advert("44 00 21 01 5e 3a 01").deviceInfo.isTriggerBased)
    }

    // MARK: Buttons

    @Test("Shelly BLU Button1: packet id, battery, one press")
    func shellyButton() throws {
        let a = try advert("40 00 52 01 64 3a 01")
        #expect(a.packetID == 82)
        #expect(a.battery == 100)
        #expect(a.buttons == [0: .press])
        #expect(a.events == [0: .press])
        #expect(a.encryptionCounter == nil)
    }

    @Test("every button event code", arguments: [
        (UInt8(0x00), BTHomeButtonEvent.none, "none", false), (0x01, .press, "press", true),
        (0x02, .doublePress, "double_press", true), (0x03, .triplePress, "triple_press", true),
        (0x04, .longPress, "long_press", true), (0x05, .longDoublePress, "long_double_press", true),
        (0x06, .longTriplePress, "long_triple_press", true), (0x80, .holdPress, "hold_press", true),
        (0x81, .holdRelease, "hold_release", true), (0x07, .unknown(0x07), "unknown_0x07", false),
        (0x7F, .unknown(0x7F), "unknown_0x7F", false), (0x82, .unknown(0x82), "unknown_0x82", false),
        (0xFF, .unknown(0xFF), "unknown_0xFF", false),
    ])
    func buttonEvents(code: UInt8, event: BTHomeButtonEvent, name: String, isEvent: Bool) throws {
        #expect(BTHomeButtonEvent(code: code) == event)
        #expect(event.code == code)
        #expect(event.name == name)
        #expect(event.isEvent == isEvent)
        let a = try advert("40 00 01 3a " + String(format: "%02x", code))
        #expect(a.buttons == [0: event])
        #expect(a.events == (isEvent ? [0: event] : [:]))
    }

    @Test("several 0x3A objects are several buttons, indexed in advert order")
    func multiButton() throws {
        let a = try advert("40 3a 00 3a 01 3a 03")
        #expect(a.buttons == [0: .none, 1: .press, 2: .triplePress])
        #expect(a.events == [1: .press, 2: .triplePress])
        // A four-button remote (Shelly BLU RC Button 4 style): only the third was double-pressed.
        let remote = try advert("44 00 10 01 64 3a 00 3a 00 3a 02 3a 00")
        #expect(remote.events == [2: .doublePress])
        #expect(remote.battery == 100)
    }

    @Test("a periodic beacon (3A 00) carries no event")
    func beacon() throws {
        let a = try advert("44 00 23 01 5e 3a 00")
        #expect(a.buttons == [0: .none])
        #expect(a.events.isEmpty)
        #expect(a.battery == 94)
    }

    // MARK: Sensors

    @Test("common sensors: temperature (signed), humidity, illuminance, voltage, opening, rotation")
    func sensors() throws {
        // Shelly BLU H&T style: packet id, battery, temperature −5.5 °C (0x45 sint16 × 0.1), humidity 47 %.
        let ht = try advert("44 00 0c 01 5d 2e 2f 45 c9 ff")
        #expect(number(ht, "temperature") == -5.5)
        #expect(number(ht, "humidity") == 47)
        #expect(ht.battery == 93)
        // Shelly BLU Door/Window style: illuminance 0 lx, window open, rotation 90.0°.
        let door = try advert("44 00 2a 01 64 05 00 00 00 2d 01 3f 84 03")
        #expect(number(door, "illuminance") == 0)
        #expect(number(door, "rotation") == 90)
        #expect(door.objects.first { $0.id == 0x2D }?.value == .flag(true))
        let mixed = try advert("40 02 ca 09 03 bf 13 05 13 8a 14 0c 78 0b")
        #expect(number(mixed, "temperature") == 25.06)
        #expect(number(mixed, "humidity") == 50.55)
        #expect(number(mixed, "illuminance") == 13460.67)
        #expect(number(mixed, "voltage") == 2.936)
        #expect(mixed.objects.map(\.unit) == ["°C", "%", "lx", "V"])
    }

    @Test("variable-length objects: text, raw and command; zero-length ones are skipped")
    func variableLength() throws {
        let a = try advert("40 3b 02 01 aa bb 53 05 48 65 6c 6c 6f 54 02 ca fe")
        #expect(a.objects.map(\.value) == [.bytes([0x01, 0xAA, 0xBB]), .text("Hello"), .bytes([0xCA, 0xFE])])
        let skipped = try advert("40 53 00 01 50")
        #expect(skipped.objects.map(\.id) == [0x01])
        // Text that is not UTF-8 is dropped, as bthome-ble does.
        #expect(rejection("40 53 01 87") == .noObjects)
    }

    // MARK: Object order and unknown ids (bthome-ble: warn on order, stop at an unknown id)

    @Test("objects out of ascending order are parsed, and flagged")
    func outOfOrder() throws {
        let a = try advert("40 3a 01 01 64 00 05")
        #expect(a.outOfOrder)
        #expect(a.events == [0: .press])
        #expect(a.battery == 100)
        #expect(a.packetID == 5)
        #expect(try !advert("40 00 05 01 64 3a 01").outOfOrder)
        #expect(try !advert("40 3a 00 3a 01").outOfOrder)
    }

    @Test("an unknown object id stops the parse; what came before it is kept")
    func unknownObjectID() throws {
        let a = try advert("40 01 64 3a 01 fe ca 09")
        #expect(a.stop == .unknownObjectID(0xFE, offset: 4))
        #expect(a.events == [0: .press])
        #expect(a.battery == 100)
        #expect(rejection("40 fe ca 09") == .unknownObjectID(0xFE, offset: 0))
        #expect(rejection("40 30 01") == .unknownObjectID(0x30, offset: 0))
    }

    // MARK: Truncation

    @Test("truncated adverts are refused with a reason, cut objects end the parse")
    func truncated() throws {
        #expect(rejection("") == .truncated("no service data"))
        #expect(rejection("40") == .noObjects)
        #expect(rejection("42 01 02 03") == .noObjects) // embedded MAC flag, MAC cut short, no objects
        if case .truncated(let detail)? = rejection("40 02 ca") { #expect(detail.contains("0x02")) } else { Issue.record("not truncated") }
        let a = try advert("40 01 64 02 ca")
        #expect(a.stop == .truncatedObject(0x02, offset: 2))
        #expect(a.battery == 100)
        #expect(rejection("40 53") != nil)
        #expect(rejection("41 00 11 22 33 44 55 66 77 88", address: specAddress, key: specKey).map(\.cause) == "truncated")
    }

    // MARK: Encryption

    @Test("the nonce: MAC in display order, D2 FC, device-info byte, counter as on the air")
    func nonce() {
        let nonce = BTHome.nonce(address: specAddress, deviceInfo: 0x41, counter: bytes("00112233"))
        #expect(hex(nonce) == "5448e68f80a5d2fc4100112233") // bthome.io/encryption
    }

    @Test("bthome.io encryption example: decrypts to 25.06 °C and 50.55 %, counter 0x33221100")
    func specExample() throws {
        let a = try advert("41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14", address: specAddress, key: specKey)
        #expect(number(a, "temperature") == 25.06)
        #expect(number(a, "humidity") == 50.55)
        #expect(a.encryptionCounter == 0x3322_1100)
        // And sealing the same plaintext gives the same bytes.
        let sealed = specKey.seal(objects: bytes("02ca0903bf13"), address: specAddress, counter: 0x3322_1100)
        #expect(hex(sealed) == "41a47266c95f730011223378237214")
    }

    @Test("wrong key, changed byte, other MAC or reversed MAC order: MIC mismatch")
    func micMismatch() {
        let data = "41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14"
        let wrong = BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db933")!
        #expect(rejection(data, address: specAddress, key: wrong) == .micMismatch)
        #expect(rejection(data, address: shellyAddress, key: specKey) == .micMismatch)
        #expect(rejection(data, address: BTHomeAddress(bytes: specAddress.bytes.reversed())!, key: specKey) == .micMismatch)
        var changed = bytes(data)
        for i in 1..<changed.count {
            changed[i] ^= 0x01
            #expect(BTHome.parse(changed, address: specAddress, decryptor: specKey) == .failure(.micMismatch), "byte \(i)")
            changed[i] ^= 0x01
        }
        // The device-info byte is part of the nonce too (0x45 instead of 0x41).
        changed[0] = 0x45
        #expect(BTHome.parse(changed, address: specAddress, decryptor: specKey) == .failure(.micMismatch))
    }

    @Test("encrypted without a key; plaintext with a key (downgrade)")
    func keyPresence() {
        #expect(rejection("41 a4 72 66 c9 5f 73 00 11 22 33 78 23 72 14", address: specAddress) == .encryptedWithoutKey)
        #expect(rejection("40 00 52 01 64 3a 01", key: specKey) == .downgrade)
        #expect(rejection("44 3a 01", key: specKey) == .downgrade)
    }

    @Test("encrypted Shelly-style button advert: press, battery, packet id")
    func encryptedButton() throws {
        let data = specKey.seal(objects: bytes("00 2a 01 64 3a 01"), address: shellyAddress, counter: 1234, deviceInfo: 0x45)
        let a = try advert(hex(data), key: specKey)
        #expect(a.events == [0: .press])
        #expect(a.battery == 100)
        #expect(a.packetID == 0x2A)
        #expect(a.encryptionCounter == 1234)
        #expect(a.deviceInfo.isTriggerBased)
    }

    @Test("device-info bit 1: the advert carries its MAC (reversed), and the nonce uses it")
    func embeddedAddress() throws {
        // Embedded bytes are data, decrypted as they are (not a device address the user typed).
        let other = BTHomeAddress(bytes: [0x11, 0x22, 0x33, 0x44, 0x55, 0x66])!
        let plain = try advert("42 66 55 44 33 22 11 01 64")
        #expect(plain.embeddedAddress == other)
        #expect(plain.battery == 100)
        let sealed = specKey.seal(objects: bytes("3a 02"), address: other, counter: 7, deviceInfo: 0x43)
        #expect(Array(sealed[1..<7]) == other.bytes.reversed())
        // BlueZ reports a different (e.g. random) address; the embedded one decrypts.
        let a = try advert(hex(sealed), address: shellyAddress, key: specKey)
        #expect(a.events == [0: .doublePress])
        #expect(a.embeddedAddress == other)
    }

    // MARK: Addresses and reasons

    @Test("addresses as BlueZ writes them")
    func addresses() {
        #expect(BTHomeAddress("a4:c1:38:8d:18:b2")?.description == "A4:C1:38:8D:18:B2")
        #expect(BTHomeAddress("A4-C1-38-8D-18-B2") == shellyAddress)
        for bad in ["", "A4:C1:38:8D:18", "A4:C1:38:8D:18:B2:00", "A4:C1:38:8D:18:G2", "A4C1388D18B2", "A4:C1:38:8D:1:B2", "A4:C1-38:8D:18:B2"] {
            #expect(BTHomeAddress(bad) == nil, "\(bad)")
        }
        #expect(BTHomeAddress(bytes: [1, 2, 3]) == nil)
    }

    @Test("every rejection has a one-line reason and a distinct cause")
    func reasons() {
        let all: [BTHomeRejection] = [.truncated("x"), .badVersion(1), .unknownObjectID(0xFE, offset: 3), .noObjects,
                                      .encryptedWithoutKey, .micMismatch, .replayedCounter(5, last: 9), .downgrade]
        for r in all { #expect(!r.description.contains("\n") && !r.description.isEmpty) }
        #expect(Set(all.map(\.cause)).count == all.count)
        #expect(BTHomeRejection.replayedCounter(5, last: 9).description.contains("5") )
        #expect(BTHomeDuplicate.packetID(3, last: 3).description.contains("3"))
    }
}
