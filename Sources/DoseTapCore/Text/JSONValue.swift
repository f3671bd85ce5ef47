/// A JSON document as read (RFC 8259, strictly): what the agent's small records say — the night it learned
/// (`NightLearning(json:)`), its status files for the command line (whether it can wake the machine, whether the
/// alarm can be heard) — and the dashboard's request bodies (`StrictJSON`, #25: no trailing comma, `1` is not
/// `true`). Writing is `JSON`'s (DoseTapPresenters), which keeps keys in order.
///
/// Why not Foundation's readers: `JSONSerialization` and `JSONDecoder` cost a one-shot command (`dosetap alarm list
/// --json`, `status --format waybar`) 0.6 and 2.3 million instructions of run-time type lookups at their first use
/// (#29; docs/performance.md), a third of the whole command. This reader is plain Swift on the bytes;
/// `JSONValueTests` hold it to `JSONSerialization` on random documents and to the grammar on hostile ones.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number written as an integer (no fraction, no exponent) that an `Int` holds.
    case integer(Int)
    /// Any other number.
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// A key given twice keeps its last value (as Foundation's readers do), unless the reader refuses duplicate
    /// keys (`parse(_:maximumDepth:refusingDuplicateKeys:)`: the dashboard's request bodies, #51).
    case object([String: JSONValue])

    /// How many levels of arrays and objects a document may nest by default (a hostile file cannot exhaust the
    /// stack): a value inside this many containers is refused.
    public static let maximumDepth = 128

    /// The document `bytes` hold (UTF-8), or nil when they are not one JSON value — a syntax error, invalid UTF-8,
    /// a control character in a string, a lone surrogate, a number beyond a Double, a value nested `maximumDepth`
    /// deep, anything but blanks after the value.
    /// With `refusingDuplicateKeys`, an object that names a key twice (at any depth, compared as decoded text) is
    /// not a document either.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = JSONValue.maximumDepth,
                             refusingDuplicateKeys: Bool = false) -> JSONValue? {
        let buffer = Array(bytes)
        var reader = Reader(bytes: buffer, maximumDepth: maximumDepth, refusingDuplicateKeys: refusingDuplicateKeys)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipBlanks()
        return reader.position == buffer.count ? value : nil
    }

    /// `parse` of a text's UTF-8.
    public static func parse(_ text: String, maximumDepth: Int = JSONValue.maximumDepth) -> JSONValue? {
        parse(Array(text.utf8), maximumDepth: maximumDepth)
    }

    /// The member `key` of an object; nil for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// Any number, as a Double.
    public var number: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .number(let n): n
        default: nil
        }
    }
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var isNull: Bool { self == .null }

    /// A number that is a whole number an `Int` holds (150, 150.0, 1.5e2), else nil.
    public var integer: Int? {
        if case .integer(let i) = self { return i }
        guard case .number(let n) = self, n == n.rounded(.towardZero), n >= -9.2e18, n <= 9.2e18 else { return nil }
        return Int(exactly: n)
    }

    private struct Reader {
        let bytes: [UInt8]
        let maximumDepth: Int
        let refusingDuplicateKeys: Bool
        var position = 0

        init(bytes: [UInt8], maximumDepth: Int, refusingDuplicateKeys: Bool) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
            self.refusingDuplicateKeys = refusingDuplicateKeys
        }

        mutating func skipBlanks() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < maximumDepth else { return nil }
            skipBlanks()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { return nil }
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
            for i in 0..<count where bytes[position + i] != expected[i] { return nil }
            position += count
            return value
        }

        mutating func object(depth: Int) -> JSONValue? {
            position += 1
            var members: [String: JSONValue] = [:]
            skipBlanks()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipBlanks()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipBlanks()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                guard let member = value(depth: depth + 1) else { return nil }
                if refusingDuplicateKeys, members[key] != nil { return nil }
                members[key] = member
                skipBlanks()
                guard position < bytes.count else { return nil }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                guard bytes[position] == UInt8(ascii: "}") else { return nil }
                position += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            position += 1
            var items: [JSONValue] = []
            skipBlanks()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipBlanks()
                guard position < bytes.count else { return nil }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                guard bytes[position] == UInt8(ascii: "]") else { return nil }
                position += 1
                return .array(items)
            }
        }

        /// A string from its opening quote: escapes resolved, UTF-8 checked.
        mutating func string() -> String? {
            position += 1
            var scalars = String.UnicodeScalarView()
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    position += 1
                    guard position < bytes.count else { return nil }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        if (0xD800...0xDBFF).contains(unit) {
                            // A high surrogate: its low one must follow as another \u escape.
                            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else { return nil }
                            position += 2
                            guard let low = hex4(), (0xDC00...0xDFFF).contains(low),
                                  let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) else { return nil }
                            scalars.append(scalar)
                        } else {
                            guard let scalar = Unicode.Scalar(unit) else { return nil }  // a lone low surrogate
                            scalars.append(scalar)
                        }
                    default: return nil
                    }
                case 0x00..<0x20:
                    return nil
                case 0x00..<0x80:
                    scalars.append(Unicode.Scalar(byte))
                    position += 1
                default:
                    guard let scalar = utf8Scalar() else { return nil }
                    scalars.append(scalar)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var unit: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = HexBytes.value(ofASCIIHexDigit: bytes[position]) else { return nil }
                unit = unit << 4 | UInt32(digit)
                position += 1
            }
            return unit
        }

        /// One scalar of two to four UTF-8 bytes (the shortest form only, no surrogates).
        mutating func utf8Scalar() -> Unicode.Scalar? {
            let lead = bytes[position]
            let (count, initial, minimum): (Int, UInt32, UInt32) =
                switch lead {
                case 0xC2...0xDF: (2, UInt32(lead & 0x1F), 0x80)
                case 0xE0...0xEF: (3, UInt32(lead & 0x0F), 0x800)
                case 0xF0...0xF4: (4, UInt32(lead & 0x07), 0x10000)
                default: (0, 0, 0)
                }
            guard count > 0, position + count <= bytes.count else { return nil }
            var value = initial
            for i in 1..<count {
                let next = bytes[position + i]
                guard next & 0xC0 == 0x80 else { return nil }
                value = value << 6 | UInt32(next & 0x3F)
            }
            guard value >= minimum, let scalar = Unicode.Scalar(value) else { return nil }
            position += count
            return scalar
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`: an integer an `Int` holds as one, anything else as
        /// the nearest Double; nil beyond a Double's range.
        mutating func number() -> JSONValue? {
            var integral = true
            let start = position
            func digits() -> Int {
                let first = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
                return position - first
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count else { return nil }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
            } else {
                guard digits() > 0 else { return nil }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                integral = false
                guard digits() > 0 else { return nil }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                integral = false
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { return nil }
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if integral, let value = Int(text) { return .integer(value) }
            guard let value = Double(text), value.isFinite else { return nil }
            return .number(value)
        }
    }
}
