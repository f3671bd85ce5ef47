import DoseTapCore

/// HTML text: everything that is not our own markup goes through `escape`.
enum HTML {
    /// Text for an element or an attribute: control characters made visible (`DisplayText`), then `& < > " '`
    /// as entities.
    static func escape(_ text: some StringProtocol, maxLength: Int = 4096) -> String {
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

    struct NavItem {
        var path: String
        var title: String
    }

    static let navigation = [NavItem(path: "/", title: "Tonight"), NavItem(path: "/alarms", title: "Alarms"),
                             NavItem(path: "/batteries", title: "Batteries"), NavItem(path: "/history", title: "History")]

    /// A whole page: no script or style inline (the CSP forbids them), everything from /static.
    static func page(title: String, current: String?, body: String, scripts: Bool = true) -> String {
        let nav = current == nil ? "" : """
            <nav aria-label="Pages"><ul>\(navigation.map { item in
                "<li><a href=\"\(item.path)\"\(item.path == current ? " aria-current=\"page\"" : "")>\(escape(item.title))</a></li>"
            }.joined())</ul></nav>
            """
        return """
            <!doctype html>
            <html lang="en">
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
            </body>
            </html>

            """
    }

    static func hiddenCSRF(_ token: String) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(escape(token))\">"
    }
}
