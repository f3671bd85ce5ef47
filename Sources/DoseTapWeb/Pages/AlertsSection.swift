import DoseTapApp
import DoseTapCore
import Foundation

/// The usage-alert settings on the Batteries page (#13): thresholds, each source with its own thresholds
/// and on/off, snooze, and the history.
enum AlertsSection {
    static func stateText(_ state: String) -> String {
        switch state {
        case "ok": "OK"
        case "warning": "Warning"
        case "critical": "Critical"
        case "off": "Alerts off"
        case "unreadable": "Cannot be read"
        default: state
        }
    }

    static func render(_ overview: AlertOverview, history: [AlertRecord], now: Date, timeZone: TimeZone, csrf: String) -> String {
        let clock = ClockText(timeZone: timeZone)
        let t = overview.settings.thresholds
        var out = "<section id=\"alerts\" aria-labelledby=\"alerts-title\"><h2 id=\"alerts-title\">Usage alerts</h2>"
        out += "<p>Alerts at \(t.warning) % used (warning) and \(t.critical) % used (critical).</p>"
        if overview.settings.isSnoozed(at: now), let until = overview.settings.snoozedUntil {
            out += "<p><strong>Snoozed until \(HTML.escape(clock.time(until))).</strong> What still exceeds a threshold alerts when it ends.</p>"
        }
        out += """
            <form method="post" action="/batteries/alerts/thresholds" class="settings-form">\(HTML.hiddenCSRF(csrf))
            <label for="alerts-warning">Warning at (% used, 10–99)</label>
            <input id="alerts-warning" name="warning" type="number" min="10" max="99" inputmode="numeric" value="\(t.warning)">
            <label for="alerts-critical">Critical at (% used, 5–95)</label>
            <input id="alerts-critical" name="critical" type="number" min="5" max="95" inputmode="numeric" value="\(t.critical)">
            <button type="submit">Save thresholds</button></form>
            <form method="post" action="/batteries/alerts/snooze" class="settings-form">\(HTML.hiddenCSRF(csrf))
            <label for="alerts-snooze">Snooze every alert</label>
            <select id="alerts-snooze" name="duration"><option value="15m">15 minutes</option><option value="1h">1 hour</option><option value="4h">4 hours</option><option value="24h">24 hours</option><option value="off">Off (alerts on)</option></select>
            <button type="submit">Set snooze</button></form>
            <h3>Each battery</h3>
            """
        if overview.sources.isEmpty {
            out += "<p>No batteries found (the system battery, peripherals, UPS, buttons).</p>"
        } else {
            out += "<ul class=\"events\">"
            for (i, source) in overview.sources.enumerated() {
                let name = HTML.escape(source.name, maxLength: 80)
                let usage = source.usage.map { String(format: "%.0f %% used (%.0f %% left)", $0, 100 - $0) } ?? "not read"
                let own = source.thresholds != t ? " (its own thresholds)" : ""
                out += """
                    <li class="event"><h4>\(name)</h4>
                    <p>\(HTML.escape(source.kind.rawValue)) · \(HTML.escape(usage)) · <strong>\(HTML.escape(stateText(source.state)))</strong> · alerts at \(source.thresholds.warning) / \(source.thresholds.critical) % used\(own)</p>
                    <details><summary>Change \(name)</summary>
                    <form method="post" action="/batteries/alerts/source" class="settings-form">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="name" value="\(HTML.escape(source.name, maxLength: 300))">
                    <label for="source-\(i)-warning">Its warning (% used)</label><input id="source-\(i)-warning" name="warning" type="number" min="10" max="99" inputmode="numeric" value="\(source.thresholds.warning)">
                    <label for="source-\(i)-critical">Its critical (% used)</label><input id="source-\(i)-critical" name="critical" type="number" min="5" max="95" inputmode="numeric" value="\(source.thresholds.critical)">
                    <label for="source-\(i)-alerts">Alerts</label><select id="source-\(i)-alerts" name="alerts">\(SoundsPage.options([("on", "On"), ("off", "Off")], selected: source.enabled ? "on" : "off"))</select>
                    <button type="submit">Save \(name)</button></form>
                    <form method="post" action="/batteries/alerts/source" class="action">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="name" value="\(HTML.escape(source.name, maxLength: 300))"><input type="hidden" name="reset" value="yes">
                    <button type="submit">Back to the global thresholds for \(name)</button></form></details></li>
                    """
            }
            out += "</ul>"
        }
        out += "<h3>History</h3>"
        if history.isEmpty {
            out += "<p>No alerts yet.</p>"
        } else {
            out += "<table><caption>The alerts given, newest first</caption><thead><tr><th scope=\"col\">When</th><th scope=\"col\">Source</th><th scope=\"col\">Used</th><th scope=\"col\">Level</th></tr></thead><tbody>"
            for r in history.prefix(50) {
                out += "<tr><td>\(HTML.escape(r.at.clock(in: timeZone)))</td><td>\(HTML.escape(r.source, maxLength: 80))</td><td>\(String(format: "%.0f", r.usage)) %</td><td>\(HTML.escape(r.level.rawValue))</td></tr>"
            }
            out += "</tbody></table>"
            out += """
                <details><summary>Clear the history…</summary>
                <form method="post" action="/batteries/alerts/clear-history">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="confirm" value="yes">
                <button type="submit">Yes, forget \(history.count) alert\(history.count == 1 ? "" : "s")</button></form></details>
                """
        }
        return out + "</section>"
    }
}
