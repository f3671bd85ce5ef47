import Foundation

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
