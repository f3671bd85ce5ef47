import DoseTapApp
import DoseTapCore

/// The nights as a table (the CSV export's columns, newest first) and the CSV itself to download: the same
/// export as `dosetap export csv`.
enum HistoryPage {
    static let ranges: [(String, String, DoseHistory.ExportRange)] = [
        ("30d", "Last 30 days", .last(days: 30)), ("90d", "Last 90 days", .last(days: 90)), ("all", "All", .all),
    ]

    static func range(_ text: Substring?) throws -> (String, DoseHistory.ExportRange) {
        let key = text.map(String.init) ?? "30d"
        guard let found = ranges.first(where: { $0.0 == key }) else {
            throw WebInputError(.badRequest, "range must be 30d, 90d or all (not '\(DisplayText.escaped(key, maxLength: 20))')")
        }
        return (found.0, found.2)
    }

    /// The fields of one CSV line (RFC 4180: quotes doubled inside quoted fields).
    static func fields(_ line: Substring) -> [String] {
        var out: [String] = []
        var field = ""
        var quoted = false
        var it = line.makeIterator()
        while let c = it.next() {
            if quoted {
                if c == "\"" {
                    if let next = it.next() {
                        if next == "\"" { field.append("\"") } else { quoted = false; if next == "," { out.append(field); field = "" } else { field.append(next) } }
                    } else { quoted = false }
                } else { field.append(c) }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                out.append(field)
                field = ""
            } else {
                field.append(c)
            }
        }
        out.append(field)
        return out
    }

    static func render(csv: String, unreadable: Int, selected: String) -> String {
        let lines = csv.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" }).filter { !$0.isEmpty }
        let rows = lines.dropFirst().map(fields).reversed()
        var body = "<h1>History</h1>"
        body += "<form method=\"get\" action=\"/history\" class=\"range\"><label for=\"range\">Nights</label><select id=\"range\" name=\"range\">"
        body += ranges.map { "<option value=\"\($0.0)\"\($0.0 == selected ? " selected" : "")>\(HTML.escape($0.1))</option>" }.joined()
        body += "</select><button type=\"submit\">Show</button></form>"
        body += "<p><a href=\"/history.csv?range=\(selected)\" download>Download these nights as CSV</a></p>"
        if unreadable > 0 {
            body += "<p class=\"refusal\">\(unreadable) entr\(unreadable == 1 ? "y" : "ies") of the dose log cannot be read and \(unreadable == 1 ? "is" : "are") left out (see dosetap data).</p>"
        }
        if rows.isEmpty {
            body += "<p>No nights in this range.</p>"
        } else {
            body += "<table><caption>Nights, newest first</caption><thead><tr>"
            body += ["Night", "Dose 1", "Dose 2", "Interval", "On time", "Skipped"].map { "<th scope=\"col\">\($0)</th>" }.joined()
            body += "</tr></thead><tbody>"
            for row in rows {
                let cells = (row + Array(repeating: "", count: max(0, 6 - row.count))).prefix(6)
                let shown = cells.enumerated().map { i, value -> String in
                    switch (i, value) {
                    case (_, ""): "—"
                    case (3, _): "\(value) min"
                    case (4, "true"), (5, "true"): "Yes"
                    case (4, "false"), (5, "false"): "No"
                    default: value
                    }
                }
                body += "<tr><th scope=\"row\">\(HTML.escape(shown[0]))</th>" + shown.dropFirst().map { "<td>\(HTML.escape($0))</td>" }.joined() + "</tr>"
            }
            body += "</tbody></table>"
        }
        return HTML.page(title: "History", current: "/history", body: body)
    }
}
