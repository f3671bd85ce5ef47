/// The TOML that reaches TOMLKit.
///
/// toml++ 3.4 (the parser under TOMLKit) asserts, instead of reporting an error, on some malformed
/// input: a table header whose name begins with a character a key cannot begin with (`[!]`,
/// `[.battery]`, `[[` alone on a line) or an array with a misplaced brace (`time = [}`). The process
/// aborts (`Assertion ... failed`; built with NDEBUG it would be undefined behaviour instead). Found by
/// Fuzz/Config.
///
/// config.toml needs little of TOML, so every line is checked against that subset first and anything
/// else is refused in one line, before toml++ sees it: blank and comment lines, `[table]` and
/// `[[array.of.tables]]` headers with dotted or quoted names, and `key = value` lines whose value is a
/// one-line string, a bare token (number, boolean, inf, nan, date), a one-line array of those, or an
/// inline table of those. Not accepted: nested arrays, multi-line strings or arrays, control characters.
enum TOMLSubset {
    /// "line N: …" for the first line outside the subset, nil when every line is inside it.
    static func problem(in text: String) -> String? {
        var number = 0
        // By scalars: "\r\n" is one Character, and would not split on "\n".
        for line in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            var scalars = Array(line)
            if number == 1, scalars.first == "\u{FEFF}" { scalars.removeFirst() }
            if scalars.last == "\r" { scalars.removeLast() }
            if let control = scalars.first(where: { $0 != "\t" && $0.properties.generalCategory == .control }) {
                return "line \(number): control character \(control.escaped(asASCII: true)) is not allowed"
            }
            var reader = LineReader(scalars: scalars)
            guard reader.line() else {
                return "line \(number): expected a [table], a key = value (a string, number or inline table) or a comment"
            }
        }
        return nil
    }

    /// A message with control characters escaped, for `ConfigurationError`: toml++ quotes the character
    /// it "saw" and DoseTap quotes values and keys, and any of them can hold a line break (TOML escapes),
    /// but a configuration error is one line (found by Fuzz/Config).
    static func oneLine(_ message: String) -> String {
        var out = ""
        for scalar in message.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                out += scalar.escaped(asASCII: true)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private struct LineReader {
        let scalars: [Unicode.Scalar]
        var i = 0
        static let maximumDepth = 8

        var current: Unicode.Scalar? { i < scalars.count ? scalars[i] : nil }

        mutating func skipBlanks() { while current == " " || current == "\t" { i += 1 } }

        mutating func eat(_ scalar: Unicode.Scalar) -> Bool {
            guard current == scalar else { return false }
            i += 1
            return true
        }

        /// Blanks, then the end of the line or a comment.
        mutating func end() -> Bool {
            skipBlanks()
            return current == nil || current == "#"
        }

        mutating func line() -> Bool {
            if end() { return true }
            if eat("[") {
                // `[[name]]`: an array of tables (`[[alerts.command]]`), its brackets together.
                let arrayOfTables = eat("[")
                skipBlanks()
                guard dottedKey() else { return false }
                skipBlanks()
                return eat("]") && (!arrayOfTables || eat("]")) && end()
            }
            return keyValue(depth: 0) && end()
        }

        mutating func keyValue(depth: Int) -> Bool {
            guard dottedKey() else { return false }
            skipBlanks()
            guard eat("=") else { return false }
            skipBlanks()
            return value(depth: depth)
        }

        mutating func dottedKey() -> Bool {
            guard key() else { return false }
            while true {
                let mark = i
                skipBlanks()
                guard eat(".") else { i = mark; return true }
                skipBlanks()
                guard key() else { return false }
            }
        }

        mutating func key() -> Bool {
            if current == "\"" || current == "'" { return string() }
            let start = i
            while let c = current, c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "-" { i += 1 }
            return i > start
        }

        /// A one-line basic ("…", with escapes) or literal ('…') string; not a multi-line one.
        mutating func string() -> Bool {
            guard let quote = current else { return false }
            if i + 2 < scalars.count, scalars[i + 1] == quote, scalars[i + 2] == quote { return false }
            i += 1
            while let c = current {
                i += 1
                if c == quote { return true }
                if quote == "\"", c == "\\" {
                    guard current != nil else { return false }
                    i += 1
                }
            }
            return false
        }

        mutating func value(depth: Int) -> Bool {
            switch current {
            case "\"", "'":
                return string()
            case "{":
                return depth < Self.maximumDepth && inlineTable(depth: depth + 1)
            case "[":
                return array()
            default:
                // Numbers, booleans, inf, nan, dates and times (with a T, not a blank): toml++ tells them apart.
                let start = i
                while let c = current, c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) || "_+-.:".unicodeScalars.contains(c) {
                    i += 1
                }
                return i > start
            }
        }

        /// A one-line array of strings and bare tokens (`command = ["upsc", "ups@localhost", "battery.charge"]`);
        /// no nested arrays or tables, a trailing comma allowed.
        mutating func array() -> Bool {
            guard eat("[") else { return false }
            skipBlanks()
            if eat("]") { return true }
            while true {
                guard current != "[", current != "{", value(depth: Self.maximumDepth) else { return false }
                skipBlanks()
                if eat("]") { return true }
                guard eat(",") else { return false }
                skipBlanks()
                if eat("]") { return true }
            }
        }

        mutating func inlineTable(depth: Int) -> Bool {
            guard eat("{") else { return false }
            skipBlanks()
            if eat("}") { return true }
            while true {
                guard keyValue(depth: depth) else { return false }
                skipBlanks()
                if eat("}") { return true }
                guard eat(",") else { return false }
                skipBlanks()
            }
        }
    }
}
