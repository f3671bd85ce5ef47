import Foundation

/// A JSON value with keys in the order they were written, so the output is stable and readable.
enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    static func optional(_ value: Double?, places: Int = 2) -> JSON {
        value.map { .number($0.rounded(places: places)) } ?? .null
    }

    static func optional(_ value: Int?) -> JSON { value.map { .int($0) } ?? .null }
    static func optional(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }

    var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .number(let d):
            if !d.isFinite {
                out += "null"
            } else if d == d.rounded(), abs(d) < 1e15 {
                out += String(Int64(d))
            } else {
                out += "\(d)"
            }
        case .string(let s): JSON.escape(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (i, (key, value)) in pairs.enumerated() {
                if i > 0 { out += "," }
                JSON.escape(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    private static func escape(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

enum Terminal {
    static let isTTY = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func colored(_ text: String, _ color: String) -> String {
        guard isTTY else { return text }
        let code = switch color {
        case "red": "\u{1B}[1;31m"
        case "orange": "\u{1B}[1;38;5;208m"
        default: ""
        }
        return code.isEmpty ? text : code + text + "\u{1B}[0m"
    }
}
