@testable import DoseTapCore
import DoseTapPresenters
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// `JSONValue` reads the agent's small records without Foundation's readers (#29): on any document it must read
/// what `JSONSerialization` reads, and refuse what the grammar refuses — never crash, whatever the bytes.
@Suite("JSONValue: RFC 8259, as JSONSerialization reads it")
struct JSONValueTests {
    /// Foundation's reading of a document, in JSONValue's terms (nil: it refused).
    static func foundation(_ bytes: [UInt8]) -> JSONValue? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return nil }
        return convert(object)
    }

    static func convert(_ any: Any) -> JSONValue? {
        switch any {
        case is NSNull: return .null
        case let n as NSNumber:
            // JSONSerialization gives booleans as NSNumber too: their type code ("c") tells them apart.
            let type = String(cString: n.objCType)
            if type == "c" { return .bool(n.boolValue) }
            // An integer literal: an integer type code, and within an Int.
            if ["q", "i", "l", "s"].contains(type) { return .integer(n.intValue) }
            return .number(n.doubleValue)
        case let s as String: return .string(s)
        case let a as [Any]:
            var items: [JSONValue] = []
            for item in a { guard let v = convert(item) else { return nil }; items.append(v) }
            return .array(items)
        case let o as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (k, v) in o { guard let value = convert(v) else { return nil }; members[k] = value }
            return .object(members)
        default: return nil
        }
    }

    /// Equal, numbers within 10⁻¹³ of each other: JSONSerialization on Linux does not round every decimal to the nearest
    /// Double (it reads -902746.3758226751 as -902746.3758226756); this reader does (`Double(String)`, `exactNumbers`).
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.number(let x)?, .number(let y)?): return x == y || abs(x - y) <= 1e-13 * max(abs(x), abs(y))
        case (.array(let x)?, .array(let y)?): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x)?, .object(let y)?): return x.keys == y.keys && x.allSatisfy { same($0.value, y[$0.key]) }
        default: return a == b
        }
    }

    /// A random document, written by our own writer (`JSON`), nested up to `depth`.
    static func document(_ rng: inout SplitMix64, depth: Int) -> JSON {
        let strings = ["", "a", "Dose 2", "é ü 💊", "\"quoted\"", "back\\slash", "tab\tnew\nline", "\u{01}\u{1F}", "/", "\u{FFFF}", "日本"]
        switch Int.random(in: 0..<(depth > 0 ? 8 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int.random(in: -1_000_000_000...1_000_000_000, using: &rng))
        case 3: return .number(Double.random(in: -1e6...1e6, using: &rng))
        case 4: return .string(strings.randomElement(using: &rng)!)
        case 5, 6:
            return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in document(&rng, depth: depth - 1) })
        default:
            return .object((0..<Int.random(in: 0...4, using: &rng)).map { i in
                (strings.randomElement(using: &rng)! + "\(i)", document(&rng, depth: depth - 1))
            })
        }
    }

    @Test("any document our writer makes: read as JSONSerialization reads it")
    func randomDocuments() async {
        await propertyCheck(count: 1000, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            let text = Self.document(&rng, depth: 4).text
            let bytes = Array(text.utf8)
            let ours = JSONValue.parse(bytes)
            #expect(ours != nil, "\(text)")
            #expect(Self.same(ours, Self.foundation(bytes)), "\(text)")
        }
    }

    static let hostile: [String] = [
        "", " ", "{", "}", "[", "[,1]", "{\"a\" 1}", "{a:1}", "{'a':1}", "01", "-", "-0", "1.", ".5", "1e", "1e+",
        "+1", "0x10", "NaN", "Infinity", "1e400", "-1e400", "tru", "nul", "true false", "[1] x", "\"\\x\"", "\"\\u12\"", "\"\\uD800\"",
        "\"\\uDC00\"", "\"\\uD800\\u0041\"", "\"\\uD83D\\uDC8A\"", "\"a\nb\"", "\"\u{7F}\"", "[\"\\u0000\"]", "{\"a\":1,\"a\":2}",
        "[1e-400]", "-0.0", "1E5", "[0.1e1]", "123456789012345678901234567890", "{\"\":null}", " [ 1 , 2 ] ", "\t\n\r[]\t",
    ]

    /// What JSONSerialization on Linux reads and RFC 8259 does not: a trailing comma, a byte-order mark. The agent
    /// writes neither; this reader refuses them (a record so damaged is not trusted).
    static let lenientInFoundation = ["[1,]", "{\"a\":1,}", "\u{FEFF}{}", "[1,2,]"]

    @Test("hostile documents: the grammar's verdict, as JSONSerialization gives it (stricter where it is lenient)")
    func hostileDocuments() {
        for text in Self.hostile {
            let bytes = Array(text.utf8)
            #expect(Self.same(JSONValue.parse(bytes), Self.foundation(bytes)), "\(text.debugDescription)")
        }
        for text in Self.lenientInFoundation {
            #expect(JSONValue.parse(text) == nil, "\(text.debugDescription)")
            #expect(Self.foundation(Array(text.utf8)) != nil, "\(text.debugDescription): Foundation refuses it now")
        }
        // Bytes that are not UTF-8, a NUL, an overlong form, a surrogate written in UTF-8: refused.
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x00, 0x22],
                               [0x22, 0xE2, 0x82, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22]] {
            #expect(JSONValue.parse(bytes) == nil, "\(bytes)")
            #expect(Self.foundation(bytes) == nil, "\(bytes)")
        }
    }

    @Test("nesting beyond the limit is refused, not a crash; at the limit it is read")
    func depth() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(JSONValue.parse(deep) == nil)
        for limit in [JSONValue.maximumDepth, 32, 1] {
            let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
            #expect(JSONValue.parse(atLimit, maximumDepth: limit) != nil, "\(limit)")
            let beyond = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
            #expect(JSONValue.parse(beyond, maximumDepth: limit) == nil, "\(limit)")
        }
        #expect(JSONValue.parse("1", maximumDepth: 1) == .integer(1))
    }

    @Test("random bytes and truncations: no crash, and a verdict only on a whole document")
    func randomBytes() async {
        let sample = Array("{\"pid\":12,\"method\":null,\"reason\":\"no RTC \\u00e9\",\"fix\":\"install\",\"list\":[1,2.5e3,true]}".utf8)
        for cut in 0..<sample.count {
            #expect(JSONValue.parse(sample[0..<cut]) == nil, "cut at \(cut)")
        }
        #expect(JSONValue.parse(sample)?["list"] == .array([.integer(1), .number(2500), .bool(true)]))
        await propertyCheck(count: 2000, input: Gen.uint8().array(of: 0...40)) { bytes in
            let ours = JSONValue.parse(bytes)
            if ours != nil { #expect(Self.same(ours, Self.foundation(bytes)), "\(bytes)") }
        }
    }

    @Test("numbers: the nearest Double, so what Swift writes reads back exactly")
    func exactNumbers() async {
        await propertyCheck(count: 2000, input: Gen.double(in: -1e300...1e300)) { d in
            #expect(JSONValue.parse("\(d)") == .number(d), "\(d)")
            #expect(JSONValue.parse("[\(d / 1e290)]") == .array([.number(d / 1e290)]), "\(d)")
        }
    }

    @Test("whole numbers: integral and within an Int; anything else is not one")
    func integers() {
        #expect(JSONValue.parse("150") == .integer(150))
        #expect(JSONValue.parse("-0") == .integer(0))
        #expect(JSONValue.parse("150.0") == .number(150))
        #expect(JSONValue.parse("99999999999999999999") == .number(1e20))
        #expect(JSONValue.integer(7).number == 7)
        #expect(JSONValue.number(150).integer == 150)
        #expect(JSONValue.number(-0.0).integer == 0)
        #expect(JSONValue.parse("1.5e2")?.integer == 150)
        #expect(JSONValue.number(150.5).integer == nil)
        #expect(JSONValue.number(1e30).integer == nil)
        #expect(JSONValue.string("150").integer == nil)
        #expect(JSONValue.bool(true).integer == nil)
    }
}
