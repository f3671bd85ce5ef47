import DoseTapCore
import Foundation

/// A strict RFC 8259 reader for request bodies (issue #25): Foundation's reader on Linux took a trailing comma
/// (a body that recorded a Skip) and gave `1` where `true` was asked. Read by Core's `JSONValue` (the same reader
/// the command line uses for the agent's records, #29), at most 32 levels deep; values come back as Swift's own
/// types — `Bool` only for `true`/`false`, `Int` for an integer literal, `Double` for any other number, `String`,
/// `NSNull`, `[Any]`, `[String: Any]` — so `1` is never a `Bool` and `true` never an `Int`.
enum StrictJSON {
    struct Invalid: Error {}
    /// The document names a key twice in one object (#51: the last one used to win, so what a proxy or a log
    /// read was not what the dashboard did).
    struct DuplicateKey: Error {}

    static let maximumDepth = 32

    static func parse(_ bytes: [UInt8]) throws -> Any {
        guard let value = JSONValue.parse(bytes, maximumDepth: maximumDepth, refusingDuplicateKeys: true) else {
            if JSONValue.parse(bytes, maximumDepth: maximumDepth) != nil { throw DuplicateKey() }
            throw Invalid()
        }
        return any(value)
    }

    static func any(_ value: JSONValue) -> Any {
        switch value {
        case .null: NSNull()
        case .bool(let b): b
        case .integer(let i): i
        case .number(let d): d
        case .string(let s): s
        case .array(let items): items.map(any)
        case .object(let members): members.mapValues(any)
        }
    }
}
