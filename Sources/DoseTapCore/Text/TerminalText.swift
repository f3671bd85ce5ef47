/// Text a program printed for a terminal, as plain text: every ECMA-48 control sequence removed whole —
/// CSI (`ESC [ … final`, colours), OSC (`ESC ] … BEL` or `ESC \`, a window title), DCS, SOS, PM and APC
/// strings, two- and three-character escapes, and their 8-bit C1 forms — and every other control character
/// turned into a space. So the digits inside `ESC ] 0;title BEL` or `ESC [ 31 m` are never read as data.
public enum TerminalText {
    public static func plain(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0
        /// Skips a control string (OSC, DCS, SOS, PM, APC) from index `i` to its terminator: BEL, ST (`ESC \`)
        /// or the 8-bit ST (U+009C). An unterminated string runs to the end.
        func skipString() {
            while i < scalars.count {
                let c = scalars[i].value
                if c == 0x07 || c == 0x9C { i += 1; return }
                if c == 0x1B, i + 1 < scalars.count, scalars[i + 1] == "\\" { i += 2; return }
                i += 1
            }
        }
        /// Skips a CSI's parameters and intermediates to its final byte (0x40…0x7E).
        func skipCSI() {
            while i < scalars.count {
                let c = scalars[i].value
                i += 1
                if (0x40...0x7E).contains(c) { return }
                if !(0x20...0x3F).contains(c) { return } // malformed: stop at the first byte that cannot belong
            }
        }
        while i < scalars.count {
            let scalar = scalars[i]
            let c = scalar.value
            switch c {
            case 0x1B:
                i += 1
                guard i < scalars.count else { break }
                let next = scalars[i].value
                i += 1
                switch next {
                case 0x5B: skipCSI() // [
                case 0x5D, 0x50, 0x58, 0x5E, 0x5F: skipString() // ] P X ^ _
                case 0x20...0x2F:
                    // nF escape: intermediates, then one final byte.
                    while i < scalars.count, (0x20...0x2F).contains(scalars[i].value) { i += 1 }
                    if i < scalars.count { i += 1 }
                default: break // a two-character escape: both dropped
                }
            case 0x9B: i += 1; skipCSI()
            case 0x9D, 0x90, 0x98, 0x9E, 0x9F: i += 1; skipString()
            case 0x00...0x08, 0x0B...0x1F, 0x7F...0x9F:
                out.append(" ")
                i += 1
            default:
                out.append(scalar)
                i += 1
            }
        }
        return String(out)
    }
}
