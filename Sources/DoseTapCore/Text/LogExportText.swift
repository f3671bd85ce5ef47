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
    typealias Scalars = [Unicode.Scalar]

    /// Each name's lower-case scalars and its token, longest first.
    private let names: [(pattern: Scalars, token: String)]
    private let hash: HashFunction

    public init(buttonNames: [String], hash: @escaping HashFunction) {
        self.hash = hash
        var seen = Set<[Unicode.Scalar]>()
        var names: [(pattern: Scalars, token: String)] = []
        for name in buttonNames where !name.isEmpty {
            let token = "button-" + hash("button", name)
            for variant in [name, DisplayText.escaped(name, maxLength: 1000, doublingBackslashes: false)] {
                let pattern = variant.unicodeScalars.map(Self.lower)
                if seen.insert(pattern).inserted { names.append((pattern, token)) }
            }
        }
        self.names = names.sorted { $0.pattern.count > $1.pattern.count }
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
        var segments: [Segment] = [.plain(Array(text.unicodeScalars))]
        segments = pass(segments, addresses)
        segments = pass(segments, keys)
        segments = pass(segments, amounts)
        segments = pass(segments, buttonNames)
        segments = pass(segments, defaultNames)
        var out = ""
        for segment in segments {
            switch segment {
            case .plain(let scalars): out.unicodeScalars.append(contentsOf: scalars)
            case .replaced(let text): out += text
            }
        }
        return out
    }

    // MARK: Passes (on Unicode scalars: cheap to index, and no separator or hex digit is a combining sequence)

    private enum Segment {
        case plain(Scalars)
        case replaced(String)
    }

    /// A replacement: the scalars `range` of a plain segment become `text`.
    private typealias Finder = (Scalars) -> [(range: Range<Int>, text: String)]

    private func pass(_ segments: [Segment], _ find: Finder) -> [Segment] {
        var out: [Segment] = []
        for segment in segments {
            guard case .plain(let scalars) = segment else { out.append(segment); continue }
            var cursor = 0
            for hit in find(scalars).sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) where hit.range.lowerBound >= cursor {
                if hit.range.lowerBound > cursor { out.append(.plain(Array(scalars[cursor..<hit.range.lowerBound]))) }
                out.append(.replaced(hit.text))
                cursor = hit.range.upperBound
            }
            if cursor < scalars.count { out.append(.plain(Array(scalars[cursor...]))) }
        }
        return out
    }

    /// A scalar as the ASCII character it looks like (`Ａ` → `A`, `٣` → `3`, `：` → `:`), else itself.
    static func folded(_ s: Unicode.Scalar) -> Unicode.Scalar {
        if s.isASCII { return s }
        let compatible = String(s).precomposedStringWithCompatibilityMapping.unicodeScalars
        if compatible.count == 1, let f = compatible.first, f.isASCII { return f }
        if s.properties.numericType == .decimal, let v = s.properties.numericValue, v >= 0, v <= 9, v == v.rounded() {
            return Unicode.Scalar(UInt8(48 + Int(v)))
        }
        return s
    }

    /// Every scalar folded (nothing to do for ASCII text, the usual case).
    static func folded(_ s: Scalars) -> Scalars {
        s.allSatisfy(\.isASCII) ? s : s.map(folded)
    }

    static func lower(_ s: Unicode.Scalar) -> Unicode.Scalar {
        if (65...90).contains(s.value) { return Unicode.Scalar(UInt8(s.value + 32)) }
        if s.isASCII { return s }
        let mapped = s.properties.lowercaseMapping.unicodeScalars
        return mapped.count == 1 ? mapped.first! : s
    }

    static func isHex(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 48...57, 65...70, 97...102: true
        default: false
        }
    }

    static func isDigit(_ s: Unicode.Scalar) -> Bool { (48...57).contains(s.value) }

    static func isWord(_ s: Unicode.Scalar) -> Bool {
        if s.isASCII { return isDigit(s) || (65...90).contains(s.value) || (97...122).contains(s.value) || s == "_" }
        return s.properties.isAlphabetic || s.properties.numericType != nil
    }

    static func isSpace(_ s: Unicode.Scalar) -> Bool { s.properties.isWhitespace }

    /// Where `pattern` (lower case) starts in `lowered`, from `from` on.
    static func find(_ pattern: Scalars, in lowered: Scalars, from: Int = 0) -> [Int] {
        guard !pattern.isEmpty, pattern.count <= lowered.count else { return [] }
        var found: [Int] = []
        var i = from
        let first = pattern[0]
        while i + pattern.count <= lowered.count {
            if lowered[i] == first, lowered[i..<(i + pattern.count)].elementsEqual(pattern) { found.append(i) }
            i += 1
        }
        return found
    }

    private func addresses(_ original: Scalars) -> [(range: Range<Int>, text: String)] {
        let c = Self.folded(original)
        var hits: [(range: Range<Int>, text: String)] = []
        var i = 0
        while i + 17 <= c.count {
            let separator = c[i + 2]
            var ok = (separator == ":" || separator == "-" || separator == "_") && (i == 0 || !Self.isHex(c[i - 1]))
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
                var canonical = ""
                for pair in 0..<6 {
                    if pair > 0 { canonical += ":" }
                    canonical.unicodeScalars.append(contentsOf: [c[i + pair * 3], c[i + pair * 3 + 1]])
                }
                hits.append((i..<(i + 17), "bt-" + hash("bt", canonical.uppercased())))
                i += 17
            } else {
                i += 1
            }
        }
        return hits
    }

    private func keys(_ original: Scalars) -> [(range: Range<Int>, text: String)] {
        let c = Self.folded(original)
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
        let lowered = c.map(Self.lower)
        for start in Self.find(Array("bindkey".unicodeScalars), in: lowered) {
            var k = start + 7
            while k < lowered.count, Self.isSpace(lowered[k]) || "\"'=:".unicodeScalars.contains(lowered[k]) { k += 1 }
            var e = k
            while e < lowered.count, !Self.isSpace(lowered[e]), !"\"',;".unicodeScalars.contains(lowered[e]) { e += 1 }
            if e - k >= 4 { hits.append((k..<e, Self.keyRemoved)) }
        }
        return hits
    }

    static let units: Set<String> = ["g", "gr", "gram", "grams", "gramm", "gramme", "grammes"]

    private func amounts(_ original: Scalars) -> [(range: Range<Int>, text: String)] {
        let c = Self.folded(original).map(Self.lower)
        var hits: [(range: Range<Int>, text: String)] = []
        /// The end of a number (`4`, `4.5`, `4,5`) starting at `i`, or nil.
        func number(at i: Int) -> Int? {
            guard i < c.count, Self.isDigit(c[i]) else { return nil }
            var j = i
            while j < c.count, Self.isDigit(c[j]) { j += 1 }
            if j + 1 < c.count, c[j] == "." || c[j] == ",", Self.isDigit(c[j + 1]) {
                j += 1
                while j < c.count, Self.isDigit(c[j]) { j += 1 }
            }
            return j
        }
        // 4.5 g, 4,5g, 4.5 grams (not "4.5 gb": the unit is a whole word).
        var i = 0
        while i < c.count {
            guard Self.isDigit(c[i]), i == 0 || !(Self.isWord(c[i - 1]) || c[i - 1] == "." || c[i - 1] == ","), let end = number(at: i) else {
                i += 1
                continue
            }
            var k = end
            if k < c.count, c[k] == " " { k += 1 }
            var w = k
            while w < c.count, Self.isWord(c[w]) { w += 1 }
            var unit = ""
            unit.unicodeScalars.append(contentsOf: c[k..<w])
            if Self.units.contains(unit) {
                hits.append((i..<w, Self.amountRemoved))
                i = w
            } else {
                i = end
            }
        }
        // dose1Grams=4.5, "dose2Grams":4.5, grams: 4.5, amount 4.5: the number after the word.
        for keyword in ["gram", "amount"] {
            for start in Self.find(Array(keyword.unicodeScalars), in: c) {
                var k = start + keyword.unicodeScalars.count
                while k < c.count, Self.isWord(c[k]) { k += 1 }
                if k < c.count, c[k] == "\"" || c[k] == "'" { k += 1 }
                while k < c.count, Self.isSpace(c[k]) { k += 1 }
                if k < c.count, c[k] == "=" || c[k] == ":" { k += 1 }
                while k < c.count, Self.isSpace(c[k]) { k += 1 }
                if k < c.count, c[k] == "\"" || c[k] == "'" { k += 1 }
                if let end = number(at: k) { hits.append((k..<end, Self.amountRemoved)) }
            }
        }
        return hits
    }

    private func buttonNames(_ original: Scalars) -> [(range: Range<Int>, text: String)] {
        guard !names.isEmpty else { return [] }
        let lowered = original.map(Self.lower)
        var hits: [(range: Range<Int>, text: String)] = []
        var taken = [Bool](repeating: false, count: original.count)
        for (pattern, token) in names {
            for i in Self.find(pattern, in: lowered) {
                let range = i..<(i + pattern.count)
                let before = i == 0 || !Self.isWord(lowered[i - 1])
                let after = range.upperBound == lowered.count || !Self.isWord(lowered[range.upperBound])
                guard before, after, !taken[range].contains(true) else { continue }
                hits.append((range, token))
                for j in range { taken[j] = true }
            }
        }
        return hits
    }

    /// The name DoseTap gives a button added without one (`bthome-18B2`: the kind and the address's last
    /// two bytes), also for a button removed since: hashed as that button's name would be.
    private func defaultNames(_ original: Scalars) -> [(range: Range<Int>, text: String)] {
        let lowered = original.map(Self.lower)
        var hits: [(range: Range<Int>, text: String)] = []
        for kind in ["bthome-", "itag-", "hid-"] {
            let prefix = Array(kind.unicodeScalars)
            for i in Self.find(prefix, in: lowered) {
                let end = i + prefix.count + 4
                guard end <= lowered.count, i == 0 || !Self.isWord(lowered[i - 1]),
                      lowered[(i + prefix.count)..<end].allSatisfy(Self.isHex),
                      end == lowered.count || !Self.isWord(lowered[end]) else { continue }
                var hex = ""
                hex.unicodeScalars.append(contentsOf: lowered[(i + prefix.count)..<end])
                // As ButtonConfig spells it: the kind in lower case, the hex in upper case.
                hits.append((i..<end, "button-" + hash("button", kind + hex.uppercased())))
            }
        }
        return hits
    }
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
        // By arithmetic: a formatter per row costs more than the rest of the row.
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (y, m, d) = CivilTime.date(days: days)
        let t = seconds - days * 86_400
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, t / 3600, t % 3600 / 60, t % 60)
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

/// Days since 1970-01-01 and back, in the proleptic Gregorian calendar (H. Hinnant's algorithms): the
/// log's many timestamps without a Calendar or a formatter each.
enum CivilTime {
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
