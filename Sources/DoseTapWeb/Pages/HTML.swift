import DoseTapCore
import Foundation

/// HTML text: everything that is not our own markup goes through `escape`.
enum HTML {
    /// Text for an element or an attribute: control characters made visible (`DisplayText`), then `& < > " '`
    /// as entities.
    static func escape(_ text: some StringProtocol, maxLength: Int = 4096) -> String {
        if let ascii = escapeASCII(text, maxLength: maxLength) { return ascii }
        var out = ""
        for c in DisplayText.escaped(text, maxLength: maxLength, doublingBackslashes: false) {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    /// `escape` of a printable ASCII text no longer than `maxLength` (what nearly every text is), byte by
    /// byte: `DisplayText` changes none of it. Nil for anything else (the general path).
    private static func escapeASCII(_ text: some StringProtocol, maxLength: Int) -> String? {
        let utf8 = text.utf8
        guard utf8.count <= maxLength else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count + 16)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): out.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\""): out.append(contentsOf: "&quot;".utf8)
            case UInt8(ascii: "'"): out.append(contentsOf: "&#39;".utf8)
            case 0x20...0x7E: out.append(byte)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    struct NavItem {
        var path: String
        var title: String
    }

    static let navigation = [NavItem(path: "/", title: "Tonight"), NavItem(path: "/alarms", title: "Alarms"),
                             NavItem(path: "/batteries", title: "Batteries"), NavItem(path: "/buttons", title: "Buttons"), NavItem(path: "/sounds", title: "Sounds"),
                             NavItem(path: "/history", title: "History")]

    /// The scheme of the page being answered: "dark" or "light" (the person's choice, or dark after bedtime),
    /// nil to follow the browser's `prefers-color-scheme`.
    @TaskLocal static var theme: String?
    /// The person's own choice ("light", "dark"), nil for automatic.
    @TaskLocal static var themeChoice: String?

    /// Automatic, light or dark: links (no script needed), each back to the page it was chosen on.
    static func themeSwitch(current: String) -> String {
        let back = current.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "%2F"
        let items = [("auto", "Automatic (dark after bedtime)"), ("light", "Light"), ("dark", "Dark")].map { value, title -> String in
            let chosen = (themeChoice ?? "auto") == value
            return "<li><a href=\"/theme?set=\(value)&amp;back=\(back)\"\(chosen ? " aria-current=\"true\"" : "")>\(escape(title))\(chosen ? " (chosen)" : "")</a></li>"
        }.joined()
        return "<footer><nav aria-label=\"Theme\"><ul class=\"theme\">\(items)</ul></nav></footer>"
    }

    /// A whole page: no script or style inline (the CSP forbids them), everything from /static.
    static func page(title: String, current: String?, body: String, scripts: Bool = true) -> String {
        let nav = current == nil ? "" : """
            <nav aria-label="Pages"><ul>\(navigation.map { item in
                "<li><a href=\"\(item.path)\"\(item.path == current ? " aria-current=\"page\"" : "")>\(escape(item.title))</a></li>"
            }.joined())</ul></nav>
            """
        return """
            <!doctype html>
            <html lang="en"\(theme.map { " data-theme=\"\($0)\"" } ?? "")>
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light dark">
            <title>\(escape(title)) · DoseTap</title>
            <link rel="stylesheet" href="/static/app.css">
            \(scripts ? "<script src=\"/static/app.js\" defer></script>" : "")
            </head>
            <body>
            <a class="skip" href="#main">Skip to content</a>
            <header><p class="brand">DoseTap</p>\(nav)</header>
            <main id="main" tabindex="-1">
            \(body)
            </main>
            \(current == nil ? "" : themeSwitch(current: current!))
            </body>
            </html>

            """
    }

    /// A part of a page that follows the agent's event stream (`/events?page=NAME`): its version lets the
    /// stream send only what the page does not show yet.
    static func live(_ name: String, _ fragment: String) -> String {
        "<div id=\"live-\(name)\" data-live=\"\(name)\" data-version=\"\(TonightPage.version(fragment))\">\(fragment)</div>"
    }

    static func hiddenCSRF(_ token: String) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(token))\">"
    }
}
