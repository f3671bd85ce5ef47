import DoseTapCore
import DoseTapCrypto
import Foundation
import PropertyBased
import Testing

/// The one Bluetooth-address parser and the one hex-bytes parser: ASCII only, and no address that
/// is not a device's.
@Suite("BluetoothAddress and HexBytes")
struct AddressAndHexTests {
    @Test("addresses: colons or dashes, any case, canonical upper case with colons")
    func accepted() throws {
        #expect(try BluetoothAddress(parsing: "a4:c1:38:8d:18:b2").description == "A4:C1:38:8D:18:B2")
        #expect(try BluetoothAddress(parsing: "A4-C1-38-8D-18-B2").description == "A4:C1:38:8D:18:B2")
        // BLE random static addresses (two top bits set): the lowest bit is not a group bit for them.
        #expect(BluetoothAddress("FF:FF:10:0E:8A:2C") != nil)
        #expect(BluetoothAddress("C3:00:00:00:00:01") != nil)
        #expect(BluetoothAddress("FF:FF:FF:FF:FF:FE") != nil)
    }

    @Test("addresses: non-ASCII digits, wrong shapes, all-zero, broadcast and multicast are refused with a reason")
    func refused() {
        for bad in ["", "A4:C1:38:8D:18", "A4:C1:38:8D:18:B2:00", "A4:C1:38:8D:18:G2", "A4C1388D18B2", "A4:C1:38:8D:1:B2",
                    "A4:C1-38:8D:18:B2", " A4:C1:38:8D:18:B2", "A4:C1:38:8D:18:B2\n", "A4:C1:38:8D:18:Ｂ2", "A4:C1:38:8D:18:\u{FF12}2",
                    "A4:C1:38:8D:18:٢2", "+4:C1:38:8D:18:B2", "A4.C1.38.8D.18.B2"] {
            #expect(throws: BluetoothAddress.Invalid.syntax, "\(bad.debugDescription)") { try BluetoothAddress(parsing: bad) }
            #expect(BTHomeAddress(bad) == nil, "\(bad.debugDescription)")
        }
        #expect(throws: BluetoothAddress.Invalid.allZero) { try BluetoothAddress(parsing: "00:00:00:00:00:00") }
        #expect(throws: BluetoothAddress.Invalid.broadcast) { try BluetoothAddress(parsing: "ff:ff:ff:ff:ff:ff") }
        #expect(throws: BluetoothAddress.Invalid.multicast) { try BluetoothAddress(parsing: "01:00:5E:00:00:01") }
        #expect(throws: BluetoothAddress.Invalid.multicast) { try BluetoothAddress(parsing: "11:22:33:44:55:66") }
        // Either side of the group bit and of the random-static exemption.
        #expect(BluetoothAddress("10:22:33:44:55:66") != nil)
        #expect(BluetoothAddress("BF:22:33:44:55:66") == nil)
        #expect(BluetoothAddress("7F:22:33:44:55:66") == nil)
        #expect(BluetoothAddress("BE:22:33:44:55:66") != nil)
        for reason in [BluetoothAddress.Invalid.syntax, .allZero, .broadcast, .multicast] {
            #expect(!reason.description.isEmpty && !reason.description.contains("\n"))
        }
        // A refused but well-formed address keeps a spelling, only to remove what an older version stored.
        #expect(BluetoothAddress.canonicalSpelling("11-22-33-44-55-66") == "11:22:33:44:55:66")
        #expect(BluetoothAddress.canonicalSpelling("11:22:33:44:55:６6") == nil)
    }

    @Test("every six bytes: the canonical text parses back to them, or the bytes are refused by the same rule")
    func roundTrip() async {
        await propertyCheck(count: 2000, input: Gen.uint8().array(of: 6...6), Gen.bool) { bytes, dashes in
            let text = bytes.map { HexBytes.string([$0], uppercase: bytes[5] & 0x80 != 0) }.joined(separator: dashes ? "-" : ":")
            let checked = try? BluetoothAddress(checking: bytes)
            let parsed = BluetoothAddress(text)
            #expect(parsed == checked)
            if let parsed { #expect(BluetoothAddress(parsed.description) == parsed && parsed.bytes == bytes) }
        }
    }

    @Test("hex bytes: ASCII digits only, even length, an exact count when asked")
    func hexBytes() throws {
        #expect(try HexBytes.parse("00ff7Aa0") == [0x00, 0xFF, 0x7A, 0xA0])
        #expect(try HexBytes.parse("") == [])
        #expect(throws: HexBytes.Invalid.self) { try HexBytes.parse("abc") }
        #expect(throws: HexBytes.Invalid.self) { try HexBytes.parse("0x12") }
        #expect(throws: HexBytes.Invalid.self) { try HexBytes.parse("12 34") }
        #expect(throws: HexBytes.Invalid.self) { try HexBytes.parse("１２") }
        #expect(throws: HexBytes.Invalid.self) { try HexBytes.parse("1234", count: 3) }
        #expect(HexBytes.string([0x0A, 0xFF]) == "0aff")
    }

    /// Finding: a full-width "２" passed `isHexDigit`, the key parser then failed, and the button ran
    /// without its key.
    @Test("bindkeys: a full-width or other non-ASCII digit is refused everywhere, with a one-line reason")
    func bindkeys() throws {
        let good = "231d39c1d7cc1ab1aee224cd096db932"
        #expect(BTHomeBindkey(hex: good) != nil)
        #expect(BTHomeBindkey(hex: good.uppercased()) != nil)
        for bad in ["\u{FF12}31d39c1d7cc1ab1aee224cd096db932", "٢31d39c1d7cc1ab1aee224cd096db932",
                    "231d39c1d7cc1ab1aee224cd096db93２", String(good.dropLast()), good + "0", "231d39c1d7cc1ab1aee224cd096db93g"] {
            #expect(BTHomeBindkey(hex: bad) == nil, "\(bad)")
            if case .failure(let problem) = ButtonConfig.parseBindkey(bad) {
                #expect(problem.description.hasPrefix("invalid bindkey") && !problem.description.contains("\n"))
            } else {
                Issue.record("accepted \(bad)")
            }
            #expect(throws: ButtonConfig.Invalid.self) { try ButtonConfig(address: "A4:C1:38:8D:18:B2", kind: .bthome, bindkey: bad) }
        }
    }

    @Test("random text: the bindkey check and the key parser agree (no key the check accepts and the parser drops)")
    func bindkeyAgreement() async {
        let alphabet = Array("0123456789abcdefABCDEFgz２٢ \u{FF41}")
        await propertyCheck(count: 2000, input: Gen.int(in: 0...(alphabet.count - 1)).array(of: 30...34)) { picks in
            let text = String(picks.map { alphabet[$0] })
            let accepted = (try? ButtonConfig(address: "A4:C1:38:8D:18:B2", kind: .bthome, bindkey: text)) != nil
            #expect(accepted == (BTHomeBindkey(hex: text) != nil), "\(text)")
        }
    }
}
