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
        let afterLabel = String(rest[rest.index(after: colon)...])
        guard let source = afterLabel.firstRange(of: #/ \[[A-Za-z0-9_.\-]+\](?: |$)/#) else { return nil }
        let metadataText = afterLabel[..<source.lowerBound].trimmingCharacters(in: .whitespaces)
        let message = String(afterLabel[source.upperBound...])
        return LogRecord(time: time, level: String(parts[1]), message: message, metadata: fields(metadataText))
    }

    /// `a=1 b=two words c=3` → a, b, c (a value runs to the next ` key=`).
    public static func fields(_ text: String) -> [LogRecord.Field] {
        guard !text.isEmpty else { return [] }
        let keys = text.matches(of: #/(?:^| )([A-Za-z0-9_.\-]+)=/#)
        guard !keys.isEmpty else { return [LogRecord.Field("", text)] }
        var out: [LogRecord.Field] = []
        if keys[0].range.lowerBound > text.startIndex {
            out.append(LogRecord.Field("", String(text[..<keys[0].range.lowerBound])))
        }
        for (i, match) in keys.enumerated() {
            let end = i + 1 < keys.count ? keys[i + 1].range.lowerBound : text.endIndex
            out.append(LogRecord.Field(String(match.output.1), String(text[match.range.upperBound..<end])))
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
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        guard let local = calendar.date(from: DateComponents(year: y, month: mo, day: d, hour: h, minute: mi, second: s)) else { return nil }
        let offset = (oh * 3600 + om * 60) * (t[19] == UInt8(ascii: "-") ? -1 : 1)
        return local.addingTimeInterval(-TimeInterval(offset))
    }
}

/// Makes a log safe to hand to a doctor or a helper: Bluetooth addresses and button names become stable
/// short hashes (the same device is the same hash in every export of this install, and nothing else can
/// be read from it), key material is removed, dose amounts are removed.
///
/// - Addresses: six hex pairs separated by `:`, `-` or `_` (BlueZ's object paths: `dev_AA_BB_…`), any
///   case — every spelling `BluetoothAddress` accepts, plus look-alikes in other scripts (full-width
///   `ＡＡ：ＢＢ…`, other decimal digits), which are folded first so a disguised address is hashed too.
///   Refused addresses (all-zero, broadcast) are hashed like any other: the log never says which.
/// - Key material: any run of 32 or more hex digits (a BTHome bindkey is 32), 16 or more separated hex
///   pairs, and whatever follows the word `bindkey`; metadata whose key mentions `bindkey` or `key`
///   material is dropped.
/// - Dose amounts: a number followed by `g`, `gram` or `grams`, the number after a word that mentions
///   grams (`dose1Grams=4.5`, `"dose2Grams":4.5`), and metadata whose key mentions grams or an amount.
/// - Button names: every name of an added button (as typed and as the log escapes it), as a whole word,
///   any case; the default names DoseTap gives (`bthome-18B2`), of removed buttons too; and the values of
///   `button`, `remote`, `name` and `alias` metadata.
public struct LogAnonymizer: Sendable {
    /// (domain, value) → a short lower-case hex hash, stable for this install.
    public typealias HashFunction = @Sendable (_ domain: String, _ value: String) -> String

    private let names: [(text: String, hash: String)]
    private let hash: HashFunction

    public init(buttonNames: [String], hash: @escaping HashFunction) {
        self.hash = hash
        var seen = Set<String>()
        var names: [(text: String, hash: String)] = []
        for name in buttonNames where !name.isEmpty {
            let token = "button-" + hash("button", name)
            for variant in [name, DisplayText.escaped(name, maxLength: 1000, doublingBackslashes: false)] where seen.insert(variant.lowercased()).inserted {
                names.append((variant, token))
            }
        }
        self.names = names.sorted { $0.text.count > $1.text.count }
    }

    public static let keyRemoved = "[key removed]"
    public static let amountRemoved = "[amount removed]"

    /// A record with every field cleaned; metadata that can only be secret or an amount is dropped.
    public func clean(_ record: LogRecord) -> LogRecord {
        var out = record
        out.message = clean(record.message)
        out.metadata = record.metadata.compactMap { field in
            let key = field.key.lowercased()
            if key.contains("bindkey") || key.contains("secret") || key == "key" || key.hasSuffix(".key") { return nil }
            if key.contains("gram") || key.contains("amount") { return nil }
            if ["button", "remote", "name", "alias"].contains(key) {
                let value = field.value.trimmingCharacters(in: .whitespaces)
                let cleaned = clean(value)
                if cleaned != value || value.isEmpty { return LogRecord.Field(clean(field.key), cleaned) }
                return LogRecord.Field(clean(field.key), "button-" + hash("button", value))
            }
            return LogRecord.Field(clean(field.key), clean(field.value))
        }
        return out
    }

    /// Free text cleaned: addresses, key material, amounts, then names (each pass sees only the text the
    /// passes before it left, never a hash they wrote).
    public func clean(_ text: String) -> String {
        var segments: [Segment] = [.plain(Array(text))]
        segments = pass(segments, addresses)
        segments = pass(segments, keys)
        segments = pass(segments, amounts)
        segments = pass(segments, buttonNames)
        segments = pass(segments, defaultNames)
        return segments.map { segment in
            switch segment {
            case .plain(let characters): String(characters)
            case .replaced(let text): text
            }
        }.joined()
    }

    // MARK: Passes

    private enum Segment {
        case plain([Character])
        case replaced(String)
    }

    /// A replacement: the characters `range` of a plain segment become `text`.
    private typealias Finder = ([Character]) -> [(range: Range<Int>, text: String)]

    private func pass(_ segments: [Segment], _ find: Finder) -> [Segment] {
        var out: [Segment] = []
        for segment in segments {
            guard case .plain(let characters) = segment else { out.append(segment); continue }
            var cursor = 0
            for hit in find(characters).sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) where hit.range.lowerBound >= cursor {
                if hit.range.lowerBound > cursor { out.append(.plain(Array(characters[cursor..<hit.range.lowerBound]))) }
                out.append(.replaced(hit.text))
                cursor = hit.range.upperBound
            }
            if cursor < characters.count { out.append(.plain(Array(characters[cursor...]))) }
        }
        return out
    }

    /// A character as the ASCII character it looks like (`Ａ` → `A`, `٣` → `3`, `：` → `:`), else itself.
    static func folded(_ c: Character) -> Character {
        if c.isASCII { return c }
        let compatible = String(c).precomposedStringWithCompatibilityMapping
        if compatible.count == 1, let f = compatible.first, f.isASCII { return f }
        if c.isNumber, let digit = c.wholeNumberValue, (0...9).contains(digit), c.unicodeScalars.count == 1,
           c.unicodeScalars.first!.properties.numericType == .decimal {
            return Character(String(digit))
        }
        return c
    }

    static func isHex(_ c: Character) -> Bool { c.isASCII && c.isHexDigit }

    private func addresses(_ original: [Character]) -> [(range: Range<Int>, text: String)] {
        let c = original.map(Self.folded)
        var hits: [(range: Range<Int>, text: String)] = []
        var i = 0
        while i + 17 <= c.count {
            let separator = c[i + 2]
            var ok = [":", "-", "_"].contains(separator) && (i == 0 || !Self.isHex(c[i - 1]))
            if ok {
                for pair in 0..<6 {
                    let at = i + pair * 3
                    if !(Self.isHex(c[at]) && Self.isHex(c[at + 1])) || (pair > 0 && c[at - 1] != separator) { ok = false; break }
                }
            }
            // Not part of a longer run: no hex digit right after, and no further pair on either side.
            if ok, i + 17 < c.count, Self.isHex(c[i + 17]) || (c[i + 17] == separator && i + 18 < c.count && Self.isHex(c[i + 18])) { ok = false }
            if ok, i >= 2, c[i - 1] == separator, Self.isHex(c[i - 2]) { ok = false }
            if ok {
                let canonical = (0..<6).map { String([c[i + $0 * 3], c[i + $0 * 3 + 1]]).uppercased() }.joined(separator: ":")
                hits.append((i..<(i + 17), "bt-" + hash("bt", canonical)))
                i += 17
            } else {
                i += 1
            }
        }
        return hits
    }

    private func keys(_ original: [Character]) -> [(range: Range<Int>, text: String)] {
        let c = original.map(Self.folded)
        var hits: [(range: Range<Int>, text: String)] = []
        var i = 0
        while i < c.count {
            guard Self.isHex(c[i]) else { i += 1; continue }
            // A contiguous run, or pairs with one separator between them.
            var j = i
            while j < c.count, Self.isHex(c[j]) { j += 1 }
            if j - i >= 32 {
                hits.append((i..<j, Self.keyRemoved))
                i = j
                continue
            }
            var pairs = 0
            var k = i
            var end = i
            while k + 1 < c.count, Self.isHex(c[k]), Self.isHex(c[k + 1]), k + 2 >= c.count || !Self.isHex(c[k + 2]) {
                pairs += 1
                end = k + 2
                guard k + 3 < c.count, [":", "-", " ", "_"].contains(c[k + 2]) else { break }
                k += 3
            }
            if pairs >= 16 {
                hits.append((i..<end, Self.keyRemoved))
                i = end
            } else {
                i = j
            }
        }
        // Whatever follows the word "bindkey" (and a few quotes, colons, equals signs or spaces).
        let text = String(c).lowercased()
        let lowered = Array(text)
        if lowered.count == c.count {
            for match in text.matches(of: #/bindkey[\s"'=:]*([^\s"',;]+)/#) {
                let value = match.output.1
                let start = text.distance(from: text.startIndex, to: value.startIndex)
                let length = value.count
                if length >= 4 { hits.append((start..<(start + length), Self.keyRemoved)) }
            }
        }
        return hits
    }

    private func amounts(_ original: [Character]) -> [(range: Range<Int>, text: String)] {
        let c = original.map(Self.folded)
        let text = String(c)
        guard text.count == c.count else { return [] }
        var hits: [(range: Range<Int>, text: String)] = []
        func add(_ range: Range<String.Index>) {
            let start = text.distance(from: text.startIndex, to: range.lowerBound)
            hits.append((start..<(start + text[range].count), Self.amountRemoved))
        }
        // 4.5 g, 4,5g, 4.5 grams (not "4.5 gb": the unit is a whole word).
        for match in text.matches(of: #/(?i)(?:^|[^\w.,])(\d+(?:[.,]\d+)?\s?(?:g|gr|gram|grams|gramm|gramme|grammes))(?![\p{L}\p{N}_])/#) {
            add(match.output.1.startIndex..<match.output.1.endIndex)
        }
        // dose1Grams=4.5, "dose2Grams":4.5, grams: 4.5, amount 4.5.
        for match in text.matches(of: #/(?i)(?:gram|amount)[\p{L}\p{N}_]*["']?\s*[=:]?\s*["']?(\d+(?:[.,]\d+)?)/#) {
            add(match.output.1.startIndex..<match.output.1.endIndex)
        }
        return hits
    }

    private func buttonNames(_ original: [Character]) -> [(range: Range<Int>, text: String)] {
        guard !names.isEmpty else { return [] }
        let lowered = original.map { c -> Character in
            let l = String(c).lowercased()
            return l.count == 1 ? l.first! : c
        }
        var hits: [(range: Range<Int>, text: String)] = []
        var taken = [Bool](repeating: false, count: original.count)
        for (name, token) in names {
            let pattern = Array(name.lowercased())
            guard !pattern.isEmpty, pattern.count <= lowered.count else { continue }
            var i = 0
            while i + pattern.count <= lowered.count {
                let range = i..<(i + pattern.count)
                let before = i == 0 || !Self.isWordCharacter(lowered[i - 1])
                let after = range.upperBound == lowered.count || !Self.isWordCharacter(lowered[range.upperBound])
                if before, after, Array(lowered[range]) == pattern, !taken[range].contains(true) {
                    hits.append((range, token))
                    for j in range { taken[j] = true }
                    i = range.upperBound
                } else {
                    i += 1
                }
            }
        }
        return hits
    }

    /// The name DoseTap gives a button added without one (`bthome-18B2`: the kind and the address's last
    /// two bytes), also for a button removed since: hashed as that button's name would be.
    private func defaultNames(_ original: [Character]) -> [(range: Range<Int>, text: String)] {
        let text = String(original)
        guard text.count == original.count else { return [] }
        var hits: [(range: Range<Int>, text: String)] = []
        for match in text.matches(of: #/(?i)(?:^|[^\p{L}\p{N}_])((?:bthome|itag|hid)-[0-9a-f]{4})(?![\p{L}\p{N}_])/#) {
            let name = match.output.1
            let start = text.distance(from: text.startIndex, to: name.startIndex)
            // As ButtonConfig spells it: the kind in lower case, the hex in upper case.
            let parts = name.split(separator: "-")
            let canonical = parts[0].lowercased() + "-" + parts[1].uppercased()
            hits.append((start..<(start + name.count), "button-" + hash("button", canonical)))
        }
        return hits
    }

    static func isWordCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
}

/// The anonymised log as CSV: `time,level,message,metadata`, oldest first; the time in UTC (RFC 3339);
/// RFC 4180 quoting; control characters as visible escapes; a cell that a spreadsheet would run as a
/// formula (`=`, `+`, `-`, `@`, a tab or a carriage return first, or their full-width forms) starts with `'`.
public enum LogCSV {
    public static let header = "time,level,message,metadata"

    public static func document(_ records: [LogRecord]) -> String {
        ([header] + records.map(row)).map { $0 + "\r\n" }.joined()
    }

    public static func row(_ record: LogRecord) -> String {
        let metadata = record.metadata.map { $0.key.isEmpty ? $0.value : "\($0.key)=\($0.value)" }.joined(separator: " ")
        return [record.time.map(time) ?? "", record.level, record.message, metadata].map(cell).joined(separator: ",")
    }

    public static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// One cell: visible escapes, the formula guard, then RFC 4180 quoting.
    public static func cell(_ value: String) -> String {
        var text = DisplayText.escaped(value, maxLength: 4000, doublingBackslashes: false)
        if let first = text.unicodeScalars.first, "=+-@\t\r＝＋－＠".unicodeScalars.contains(first) {
            text = "'" + text
        }
        return CSVExport.field(text)
    }
}
