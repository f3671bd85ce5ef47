import Foundation

/// A strict RFC 8259 reader for request bodies (issue #25): Foundation's reader on Linux took a trailing comma
/// (a body that recorded a Skip) and gave `1` where `true` was asked. Values come back as Swift's own types —
/// `Bool` only for `true`/`false`, `Int` for an integer literal, `Double` for any other number, `String`,
/// `NSNull`, `[Any]`, `[String: Any]` — so `1` is never a `Bool` and `true` never an `Int`.
enum StrictJSON {
    struct Invalid: Error {}

    static let maximumDepth = 32

    static func parse(_ bytes: [UInt8]) throws -> Any {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == bytes.count else { throw Invalid() }
        return value
    }

    struct Reader {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String) throws {
            for byte in literal.utf8 {
                guard index < bytes.count, bytes[index] == byte else { throw Invalid() }
                index += 1
            }
        }

        mutating func value(depth: Int) throws -> Any {
            guard depth < StrictJSON.maximumDepth, index < bytes.count else { throw Invalid() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var object: [String: Any] = [:]
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return object }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Invalid() }
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    skipSpace()
                    object[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard index < bytes.count else { throw Invalid() }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect("}")
                    return object
                }
            case UInt8(ascii: "["):
                index += 1
                var array: [Any] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return array }
                while true {
                    skipSpace()
                    array.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw Invalid() }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect("]")
                    return array
                }
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"): try expect("true"); return true
            case UInt8(ascii: "f"): try expect("false"); return false
            case UInt8(ascii: "n"): try expect("null"); return NSNull()
            default: return try number()
            }
        }

        mutating func string() throws -> String {
            index += 1 // the opening quote
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() throws {
                guard !run.isEmpty else { return }
                guard let text = String(validating: run, as: UTF8.self) else { throw Invalid() }
                scalars.append(contentsOf: text.unicodeScalars)
                run.removeAll()
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    try flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush()
                    guard index < bytes.count else { throw Invalid() }
                    let escape = bytes[index]
                    index += 1
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
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code) {
                            try expect("\\u")
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw Invalid() }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw Invalid() }
                        scalars.append(scalar)
                    default: throw Invalid()
                    }
                case 0..<0x20: throw Invalid() // a raw control character
                default: run.append(byte)
                }
            }
            throw Invalid()
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16),
                  bytes[index..<index + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }) else { throw Invalid() }
            index += 4
            return code
        }

        mutating func number() throws -> Any {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - from
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let first = index
            let whole = digits()
            guard whole > 0, whole == 1 || bytes[first] != UInt8(ascii: "0") else { throw Invalid() }
            var integral = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                integral = false
                guard digits() > 0 else { throw Invalid() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                integral = false
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw Invalid() }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral, let value = Int(text) { return value }
            guard let value = Double(text), value.isFinite else { throw Invalid() }
            return value
        }
    }
}
