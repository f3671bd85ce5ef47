/// A number as people type it: ASCII digits with an optional sign and decimal point ("55", "-3", "7.5",
/// ".5"). Swift's `Double(_:)` also takes "0x10", "1e3", "inf" and "nan", which no one means as a battery
/// level or a dose. Every face reads typed numbers with this rule.
public enum PlainNumberText {
    public static func parse(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 32 else { return nil }
        var i = 0
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") { i = 1 }
        var digits = 0
        var dots = 0
        for b in bytes[i...] {
            if b == UInt8(ascii: ".") { dots += 1; continue }
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            digits += 1
        }
        guard digits > 0, dots <= 1, let value = Double(text), value.isFinite else { return nil }
        return value
    }
}
