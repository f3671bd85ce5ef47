import Foundation

/// A line of the agent's log as swift-log's `StreamLogHandler` writes it on standard error (and so as the
/// journal keeps it under systemd):
/// `2026-11-24T07:12:51+0000 info dosetap.agent: button=Bedside level=80 [DoseTapAgent] iTag battery`.
public enum AgentLogLine {
    public static let levels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The record of a line, or nil when the line is not in that format (then it is kept whole as the
    /// message by the journal source, or left out by the file source).
    public static func parse(_ line: some StringProtocol) -> LogRecord? {
        let line = String(line)
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let time = timestamp(parts[0]), levels.contains(String(parts[1])) else { return nil }
        // "<label>:<metadata> [<source>] <message>": the label is one word ending in a colon (older
        // swift-log wrote "<label> :").
        let rest = parts[2]
        guard let colon = rest.firstIndex(of: ":"), !rest[..<colon].trimmingCharacters(in: .whitespaces).contains(" ") else { return nil }
        let afterLabel = Array(rest[rest.index(after: colon)...].unicodeScalars)
        guard let source = sourceMarker(afterLabel) else { return nil }
        let metadataText = String(String.UnicodeScalarView(afterLabel[..<source.lowerBound])).trimmingCharacters(in: .whitespaces)
        let message = String(String.UnicodeScalarView(afterLabel[source.upperBound...]))
        return LogRecord(time: time, level: String(parts[1]), message: message, metadata: fields(metadataText))
    }

    static func isKeyScalar(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 48...57, 65...90, 97...122, 95, 46, 45: true  // 0-9 A-Z a-z _ . -
        default: false
        }
    }

    /// The first ` [Module] ` (or ` [Module]` at the end): the range to drop between metadata and message.
    static func sourceMarker(_ s: [Unicode.Scalar]) -> Range<Int>? {
        var i = 0
        while i + 3 < s.count + 1 {
            if s[i] == " ", i + 1 < s.count, s[i + 1] == "[" {
                var j = i + 2
                while j < s.count, isKeyScalar(s[j]) { j += 1 }
                if j > i + 2, j < s.count, s[j] == "]" {
                    if j + 1 == s.count { return i..<(j + 1) }
                    if s[j + 1] == " " { return i..<(j + 2) }
                }
            }
            i += 1
        }
        return nil
    }

    /// `a=1 b=two words c=3` → a, b, c (a value runs to the next ` key=`).
    public static func fields(_ text: String) -> [LogRecord.Field] {
        guard !text.isEmpty else { return [] }
        let s = Array(text.unicodeScalars)
        // Where each `key=` starts (at the start or after a space) and where its value starts.
        var keys: [(start: Int, key: Range<Int>, value: Int)] = []
        var i = 0
        while i < s.count {
            if i == 0 || s[i - 1] == " " {
                var j = i
                while j < s.count, isKeyScalar(s[j]) { j += 1 }
                if j > i, j < s.count, s[j] == "=" {
                    keys.append((i == 0 ? 0 : i - 1, i..<j, j + 1))
                    i = j + 1
                    continue
                }
            }
            i += 1
        }
        func slice(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(s[range])) }
        guard !keys.isEmpty else { return [LogRecord.Field("", text)] }
        var out: [LogRecord.Field] = []
        if keys[0].start > 0 { out.append(LogRecord.Field("", slice(0..<keys[0].start))) }
        for (n, key) in keys.enumerated() {
            let end = n + 1 < keys.count ? keys[n + 1].start : s.count
            out.append(LogRecord.Field(slice(key.key), slice(key.value..<max(key.value, end))))
        }
        return out
    }

    /// `2026-11-24T07:12:51+0000` (strftime's `%Y-%m-%dT%H:%M:%S%z`).
    public static func timestamp(_ text: some StringProtocol) -> Date? {
        let t = Array(text.utf8)
        guard t.count == 24, t[4] == UInt8(ascii: "-"), t[7] == UInt8(ascii: "-"), t[10] == UInt8(ascii: "T"),
              t[13] == UInt8(ascii: ":"), t[16] == UInt8(ascii: ":"), t[19] == UInt8(ascii: "+") || t[19] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(t[i]) else { return nil }
                value = value * 10 + Int(t[i] - UInt8(ascii: "0"))
            }
            return value
        }
        guard let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
              let mi = number(14..<16), let s = number(17..<19), let oh = number(20..<22), let om = number(22..<24),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61, oh < 24, om < 60 else { return nil }
        guard d <= CivilTime.daysInMonth(year: y, month: mo) else { return nil }
        let local = TimeInterval(CivilTime.days(year: y, month: mo, day: d) * 86_400 + h * 3600 + mi * 60 + s)
        let offset = (oh * 3600 + om * 60) * (t[19] == UInt8(ascii: "-") ? -1 : 1)
        return Date(timeIntervalSince1970: local - TimeInterval(offset))
    }
}
