import DoseTapCore
import PropertyBased
import Testing

/// Device, user and sysfs text in the terminal and the log: controls escaped, long text cut.
@Suite("DisplayText")
struct DisplayTextTests {
    @Test("controls, DEL, C1 and bidi/format characters become visible escapes; plain text is unchanged")
    func escapes() {
        #expect(DisplayText.escaped("bedside button") == "bedside button")
        #expect(DisplayText.escaped("Ünïcödé ✓ 日本") == "Ünïcödé ✓ 日本")
        #expect(DisplayText.escaped("\u{1B}[2J\u{1B}]0;pwned\u{07}") == "\\x1b[2J\\x1b]0;pwned\\x07")
        #expect(DisplayText.escaped("ok\rFAKE LINE\n") == "ok\\rFAKE LINE\\n")
        #expect(DisplayText.escaped("a\tb\u{7F}c\u{85}d\u{9B}e\u{0}") == "a\\tb\\x7fc\\x85d\\x9be\\x00")
        #expect(DisplayText.escaped("evil\u{202E}gpj.exe") == "evil\\u{202e}gpj.exe")
        #expect(DisplayText.escaped("\u{2066}x\u{2069}\u{200B}\u{FEFF}\u{2028}") == "\\u{2066}x\\u{2069}\\u{200b}\\u{feff}\\u{2028}")
        // A backslash is doubled, so an escape in the output is always one DisplayText wrote.
        #expect(DisplayText.escaped("C:\\x1b") == "C:\\\\x1b")
    }

    @Test("long text is cut with an ellipsis at maxLength characters, not before")
    func length() {
        let long = String(repeating: "a", count: 100_000)
        #expect(DisplayText.escaped(long, maxLength: 64) == String(repeating: "a", count: 64) + "…")
        #expect(DisplayText.escaped(String(repeating: "a", count: 64), maxLength: 64) == String(repeating: "a", count: 64))
        #expect(DisplayText.escaped(String(repeating: "a", count: 65), maxLength: 64) == String(repeating: "a", count: 64) + "…")
        #expect(DisplayText.escaped(String(repeating: "\u{1B}", count: 10), maxLength: 3) == "\\x1b\\x1b\\x1b…")
        #expect(DisplayText.escaped(nil as String?, placeholder: "(no name)") == "(no name)")
    }

    @Test("any text: the output has no control or format character and is bounded")
    func property() async {
        await propertyCheck(count: 1000, input: Gen.uint32(in: 0...0x10FFFF).array(of: 0...200)) { values in
            let text = String(String.UnicodeScalarView(values.compactMap(Unicode.Scalar.init)))
            let shown = DisplayText.escaped(text, maxLength: 50)
            #expect(!shown.unicodeScalars.contains { DisplayText.needsEscaping($0) && $0 != "\\" })
            #expect(shown.unicodeScalars.count <= 50 * 10 + 1)
        }
    }
}
