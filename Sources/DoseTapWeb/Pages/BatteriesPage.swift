import DoseTapApp
import DoseTapCore
import Foundation

/// Where the Batteries page reads from: the battery now (with its drain), the stored samples of the
/// system battery, and the latest level of every other source (button cells).
public struct WebBatteries: Sendable {
    public var now: @Sendable () -> BatteryStatus?
    public var samples: @Sendable (_ since: Date) -> [BatterySample]
    public var others: @Sendable () -> [(source: String, level: Double, at: Date)]

    public init(now: @escaping @Sendable () -> BatteryStatus?, samples: @escaping @Sendable (Date) -> [BatterySample],
                others: @escaping @Sendable () -> [(source: String, level: Double, at: Date)]) {
        self.now = now
        self.samples = samples
        self.others = others
    }
}

enum BatteriesPage {
    static func render(status: BatteryStatus?, samples: [BatterySample], others: [(source: String, level: Double, at: Date)],
                       now: Date, timeZone: TimeZone, alerts: String = "", flash: Flash? = nil) -> String {
        var body = "<h1>Batteries</h1>"
        body += "<div id=\"announce\" role=\"status\" aria-live=\"polite\">\(flash.map(TonightPage.renderFlash) ?? "")</div>"
        body += HTML.live("batteries", fragment(status: status, samples: samples, others: others, now: now, timeZone: timeZone)) + alerts
        return HTML.page(title: "Batteries", current: "/batteries", body: body)
    }

    /// The live part: the battery now, the chart, the supplies, the other sources.
    static func fragment(status: BatteryStatus?, samples: [BatterySample], others: [(source: String, level: Double, at: Date)],
                         now: Date, timeZone: TimeZone) -> String {
        let clock = ClockText(timeZone: timeZone)
        var body = "<h2>This machine</h2>"
        if let status, status.state.present {
            var rows: [(String, String)] = []
            if let level = status.state.level { rows.append(("Level", "\(Int(level.rounded())) %")) }
            rows.append(("Status", status.state.onAC ? "On AC power (\(status.state.status.rawValue))" : "On battery (\(status.state.status.rawValue))"))
            let drain = status.drain.percentPerHour.map { String(format: "%.1f %%/h", $0) } ?? "Not known yet"
            rows.append(("Drain", "\(drain) (\(sourceText(status.drain.source)))"))
            if let hours = status.hoursToEmpty {
                let minutes = Int((hours * 60).rounded(.down))
                rows.append(("Time to empty", "\(minutes / 60) h \(minutes % 60) min"))
            }
            rows.append(("Powers itself off at", "\(PowerOffPolicy.percentText(status.powerOff.percentage)) %"))
            body += "<dl class=\"facts\">" + rows.map { "<dt>\(HTML.escape($0.0))</dt><dd>\(HTML.escape($0.1))</dd>" }.joined() + "</dl>"
        } else {
            body += "<p>No system battery found: this machine runs on mains power (or its battery cannot be read).</p>"
        }
        body += "<h2>The last 24 hours</h2>" + chart(samples: samples, now: now, clock: clock)
        if let supplies = status?.state.supplies, !supplies.isEmpty {
            body += "<h2>Power supplies</h2><table><caption>Every power supply as read now</caption><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Type</th><th scope=\"col\">Status</th><th scope=\"col\">Level</th></tr></thead><tbody>"
            for s in supplies {
                let kind = s.scope.rawValue == "Device" ? "\(s.type.name) (a device's own)" : s.type.name
                body += "<tr><td>\(HTML.escape(s.name))</td><td>\(HTML.escape(kind))</td><td>\(HTML.escape(s.online == true ? "online" : s.status.rawValue))</td><td>\(s.level.map { "\(Int($0.rounded())) %" } ?? "—")</td></tr>"
            }
            body += "</tbody></table>"
        }
        body += "<h2>Buttons and other sources</h2>"
        if others.isEmpty {
            body += "<p>No battery levels from buttons or other sources yet.</p>"
        } else {
            body += "<table><caption>Latest level of each source</caption><thead><tr><th scope=\"col\">Source</th><th scope=\"col\">Level</th><th scope=\"col\">Seen</th></tr></thead><tbody>"
            for o in others.sorted(by: { $0.source < $1.source }) {
                body += "<tr><td>\(HTML.escape(o.source))</td><td>\(Int(o.level.rounded())) %</td><td>\(HTML.escape(clock.time(o.at)))</td></tr>"
            }
            body += "</tbody></table>"
        }
        return body
    }

    static func sourceText(_ source: DrainSource) -> String {
        switch source {
        case .hardware: "from the battery's own rate"
        case .history: "fitted from the recorded levels"
        case .unknown: "not enough data"
        }
    }

    /// The level over the last 24 hours as an SVG drawn here (no script, no library), with a text summary
    /// for screen readers and for anyone who cannot see the line.
    static func chart(samples: [BatterySample], now: Date, clock: ClockText) -> String {
        let start = now.addingTimeInterval(-24 * 3600)
        let points = samples.filter { $0.at >= start && $0.at <= now && $0.level.isFinite }
        guard let first = points.first, let last = points.last else {
            return "<p>No levels recorded in the last 24 hours.</p>"
        }
        let width = 600.0, height = 200.0, left = 40.0, bottom = 24.0
        func x(_ d: Date) -> Double { left + (d.timeIntervalSince(start) / (24 * 3600)) * (width - left - 8) }
        func y(_ level: Double) -> Double { 8 + (1 - min(max(level, 0), 100) / 100) * (height - bottom - 8) }
        let line = points.map { String(format: "%.1f,%.1f", x($0.at), y($0.level)) }.joined(separator: " ")
        let low = points.map(\.level).min() ?? 0, high = points.map(\.level).max() ?? 0
        let summary = "From \(Int(first.level.rounded())) % at \(clock.time(first.at)) to \(Int(last.level.rounded())) % at \(clock.time(last.at)); lowest \(Int(low.rounded())) %, highest \(Int(high.rounded())) % (\(points.count) readings)."
        var grid = ""
        for level in [0, 50, 100] {
            grid += String(format: "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", left, width - 8, y(Double(level)), y(Double(level)))
            grid += String(format: "<text x=\"%.0f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%d%%</text>", left - 4, y(Double(level)) + 4, level)
        }
        for hoursAgo in [24, 12, 0] {
            let d = now.addingTimeInterval(-Double(hoursAgo) * 3600)
            let anchor = hoursAgo == 24 ? "start" : hoursAgo == 0 ? "end" : "middle"
            grid += "<text x=\"\(String(format: "%.1f", x(d)))\" y=\"\(Int(height) - 6)\" class=\"axis\" text-anchor=\"\(anchor)\">\(hoursAgo == 0 ? "now" : "\(hoursAgo) h ago")</text>"
        }
        return """
            <figure class="chart">
            <svg viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-labelledby="chart-title chart-desc" focusable="false">
            <title id="chart-title">Battery level, last 24 hours</title><desc id="chart-desc">\(HTML.escape(summary))</desc>
            \(grid)<polyline points="\(line)" class="level"/>
            </svg>
            <figcaption>\(HTML.escape(summary))</figcaption>
            </figure>
            """
    }
}
