import DoseTapCore
import Foundation

/// A JSON value with keys in the order they were written, so the output is stable and readable. Every
/// face that speaks JSON (the command line's `--json`, the coming web API) writes it with this type and
/// the presenters beside it, so the same fact has the same spelling everywhere.
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func optional(_ value: Double?, places: Int = 2) -> JSON {
        value.map { .number($0.rounded(places: places)) } ?? .null
    }

    public static func optional(_ value: Int?) -> JSON { value.map { .int($0) } ?? .null }
    public static func optional(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }
    public static func optional(_ value: Bool?) -> JSON { value.map { .bool($0) } ?? .null }

    /// The compact text: no spaces, keys in order, control characters escaped.
    public var text: String {
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

extension Date {
    /// RFC 3339 with the local offset, e.g. 2026-11-22T06:30:00-05:00: how every face writes an instant.
    ///
    /// Written from the Gregorian calendar's fields (`CivilTime`) and the zone's offset, not with
    /// `ISO8601DateFormatter`, whose locale machinery (ICU) costs a one-shot command milliseconds and megabytes
    /// (#29); the same text, held to it by `RFC3339Tests`: the instant rounded to the millisecond, then its whole
    /// seconds (so 00.9995 s is shown as 01), `Z` for a zero offset.
    public func rfc3339(in timeZone: TimeZone) -> String {
        let milliseconds = ((timeIntervalSinceReferenceDate + 978_307_200) * 1000).rounded()
        let shown = Date(timeIntervalSince1970: (milliseconds / 1000).rounded(.down))
        let c = CivilTime(shown, in: timeZone)
        var text = c.year >= 0 && c.year < 1000 ? c.year.zeroPadded(4) : String(c.year)
        text += "-\(c.month.zeroPadded(2))-\(c.day.zeroPadded(2))T\(c.hour.zeroPadded(2)):\(c.minute.zeroPadded(2)):\(c.second.zeroPadded(2))"
        let offset = timeZone.secondsFromGMT(for: shown)
        guard offset != 0 else { return text + "Z" }
        let minutes = abs(offset) / 60
        return text + (offset < 0 ? "-" : "+") + (minutes / 60).zeroPadded(2) + ":" + (minutes % 60).zeroPadded(2)
    }
}
