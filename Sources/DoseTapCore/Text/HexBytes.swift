/// The one hex parser for text that reaches DoseTap from outside (bindkeys, Bluetooth addresses):
/// ASCII digits `0-9`, `a-f` and `A-F` only. `Character.isHexDigit` also accepts full-width and other
/// Unicode hex digits ("２"), which `UInt8(_:radix:)` then refuses: a check and a parser that disagree.
public enum HexBytes {
    /// Why a text is not hex bytes: one line, for an error message.
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// The value of one ASCII hex digit, nil for anything else.
    @inlinable
    public static func value(ofASCIIHexDigit byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `text` as bytes: an even number of ASCII hex digits, nothing else (no spaces, no `0x`).
    /// With `count`, exactly that many bytes.
    public static func parse(_ text: some StringProtocol, count: Int? = nil) throws(Invalid) -> [UInt8] {
        let utf8 = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for (offset, unit) in utf8.enumerated() {
            guard let nibble = value(ofASCIIHexDigit: unit) else {
                let position = offset + 1 - nonASCIIContinuationBytes(utf8[..<offset])
                throw Invalid("character \(position) is not a hex digit (only ASCII 0-9 and a-f)")
            }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard high == nil else { throw Invalid("an odd number of hex digits (\(utf8.count))") }
        if let count, bytes.count != count {
            throw Invalid("expected \(count * 2) hex digits, got \(text.count) characters")
        }
        return bytes
    }

    /// Hex bytes, or nil.
    public static func parseOrNil(_ text: some StringProtocol, count: Int? = nil) -> [UInt8]? {
        try? parse(text, count: count)
    }

    /// Lower-case hex, two digits per byte.
    public static func string(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// UTF-8 continuation bytes before a position: turns a byte offset into a character position.
    private static func nonASCIIContinuationBytes(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.filter { $0 & 0xC0 == 0x80 }.count
    }
}
