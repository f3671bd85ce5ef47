/// Text from a device, a user or the kernel, made safe for a terminal or a log line: control
/// characters (C0, DEL, C1), bidirectional and other invisible format characters become visible
/// escapes (`\x1b`, `\r`, `\u{202e}`), a backslash is doubled, and long text is cut with an ellipsis.
/// JSON output does not use this: it stays exact (JSON escapes its own controls).
public enum DisplayText {
    /// The default longest text shown, in characters (a BLE name is at most 248 bytes).
    public static let defaultMaxLength = 64

    /// - Parameter doublingBackslashes: false for a log line, where text escaped once already (by a call
    ///   site) must come out unchanged; controls are escaped either way.
    public static func escaped(_ text: some StringProtocol, maxLength: Int = defaultMaxLength, doublingBackslashes: Bool = true) -> String {
        var out = ""
        var shown = 0
        for scalar in text.unicodeScalars {
            if shown >= maxLength {
                out += "…"
                return out
            }
            out += scalar == "\\" && !doublingBackslashes ? "\\" : escape(scalar)
            shown += 1
        }
        return out
    }

    /// An optional text, or a placeholder.
    public static func escaped(_ text: (some StringProtocol)?, placeholder: String, maxLength: Int = defaultMaxLength) -> String {
        guard let text else { return placeholder }
        return escaped(text, maxLength: maxLength)
    }

    /// True when `escaped` would change nothing but the length.
    public static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        isControl(scalar) || isFormat(scalar) || scalar == "\\"
    }

    static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default: break
        }
        if isControl(scalar) {
            return "\\x" + HexBytes.string([UInt8(scalar.value)])
        }
        if isFormat(scalar) {
            return "\\u{" + String(scalar.value, radix: 16) + "}"
        }
        return String(scalar)
    }

    /// C0 controls, DEL and C1 controls.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Invisible characters that change how the rest of the line looks: format characters (Cf: bidi
    /// embeddings, overrides and isolates, zero-width joiners, the BOM, …), line and paragraph
    /// separators, and the unassigned and private-use code points a terminal cannot show honestly.
    static func isFormat(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: true
        default: false
        }
    }
}
