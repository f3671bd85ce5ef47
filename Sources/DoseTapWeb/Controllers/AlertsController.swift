import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

extension WebDashboard {
    /// `/batteries/alerts/…` and `/api/alerts…`: the use cases and the checks of `dosetap alerts …`, with the
    /// same messages.
    func alertsRoute(_ request: Request, method: HTTPRequest.Method, path: String, access: Access, api: Bool) async throws -> Response {
        guard let alerts = usageAlerts else { return Self.error(.notFound, "no usage alerts here", api: api) }
        let parts = path.split(separator: "/").map(String.init)
        func attempt(_ body: () throws -> String) throws -> Response {
            do {
                return try redirect("/batteries#alerts", flash: Flash(recorded: true, message: try body(), verb: "saved"))
            } catch let error as UseCaseError {
                return try redirect("/batteries#alerts", flash: Flash(recorded: false, message: error.description, verb: "saved"))
            }
        }
        switch (method, parts.count) {
        case (.post, 3) where parts[0] == "batteries" && parts[1] == "alerts":
            let form = try await Self.form(request)
            try checkCSRF(request, form: form, access: access)
            switch parts[2] {
            case "thresholds":
                return try attempt {
                    let (warning, critical) = try Self.thresholds(form["warning"], form["critical"])
                    guard warning != nil || critical != nil else { throw UseCaseError("nothing to change: give warning, critical or both") }
                    let settings = try alerts.setThresholds(warning: warning, critical: critical)
                    return "alerts at \(settings.thresholds.warning) % used (warning) and \(settings.thresholds.critical) % used (critical)"
                }
            case "source":
                let name = try Self.required(form["name"], "name")
                return try attempt {
                    let view = try alerts.changeSource(name, try Self.sourceChanges(warning: form["warning"], critical: form["critical"],
                                                                                     alerts: form["alerts"], reset: form["reset"] == "yes"))
                    return "\(view.name): \(view.enabled ? "alerts at \(view.thresholds.warning) / \(view.thresholds.critical) % used" : "alerts off")"
                }
            case "snooze":
                return try attempt {
                    let until = try alerts.snooze(try AlertUseCases.snoozeDuration(form["duration"] ?? ""))
                    return until.map { "alerts snoozed until \(ClockText(timeZone: clock.timeZone).time($0))" } ?? "alerts are on"
                }
            case "clear-history":
                guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "clearing the history needs confirm=yes") }
                return try attempt {
                    let gone = try alerts.clearHistory()
                    return "cleared \(gone) alert\(gone == 1 ? "" : "s") from the history"
                }
            default: break
            }
        case (.get, 2) where parts[1] == "alerts":
            return Self.json(try alerts.overview().json(now: clock.now(), in: clock.timeZone))
        case (.get, 3) where parts[1] == "alerts" && parts[2] == "history":
            return Self.json(.object([("history", .array(try alerts.history().map { $0.json(in: clock.timeZone) }))]))
        case (.post, 3) where parts[1] == "alerts":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            func number(_ key: String) throws -> String? {
                switch body[key] {
                case nil, is NSNull: return nil
                case let value as Int: return "\(value)"
                default: throw WebInputError(.badRequest, "\(key) must be a whole number of percent used")
                }
            }
            let now = clock.now()
            switch parts[2] {
            case "thresholds":
                let warning = try number("warning"), critical = try number("critical")
                return apiAnswer {
                    let (w, c) = try Self.thresholds(warning, critical)
                    guard w != nil || c != nil else { throw UseCaseError("nothing to change: give warning, critical or both") }
                    _ = try alerts.setThresholds(warning: w, critical: c)
                    return try alerts.overview().json(now: now, in: clock.timeZone)
                }
            case "source":
                let name = try Self.required(try Self.text(body, "name"), "name")
                let warning = try number("warning"), critical = try number("critical")
                let enabled: String?
                switch body["enabled"] {
                case nil, is NSNull: enabled = nil
                case let value as Bool: enabled = value ? "on" : "off"
                default: throw WebInputError(.badRequest, "enabled must be true or false")
                }
                let reset = body["reset"] as? Bool == true
                return apiAnswer {
                    let view = try alerts.changeSource(name, try Self.sourceChanges(warning: warning, critical: critical, alerts: enabled, reset: reset))
                    return .object([("name", .string(view.name)), ("warning", .int(view.thresholds.warning)), ("critical", .int(view.thresholds.critical)),
                                    ("enabled", .bool(view.enabled)), ("state", .string(view.state))])
                }
            case "snooze":
                let duration = try Self.text(body, "duration") ?? ""
                return apiAnswer {
                    let until = try alerts.snooze(try AlertUseCases.snoozeDuration(duration))
                    return .object([("snoozedUntil", until.map { .string($0.rfc3339(in: clock.timeZone)) } ?? .null)])
                }
            default: break
            }
        default: break
        }
        return Self.error(.notFound, "no such page: \(path)", api: api)
    }

    /// The thresholds as typed: each empty (unchanged) or a whole number in its range — the command line's checks.
    static func thresholds(_ warning: String?, _ critical: String?) throws -> (Int?, Int?) {
        func parse(_ text: String?, _ name: String) throws -> Int? {
            guard let text, !text.isEmpty else { return nil }
            guard let n = AlertUseCases.percent(text) else {
                throw UseCaseError("\(name) must be a whole number of percent used (not '\(DisplayText.escaped(text, maxLength: 20))')")
            }
            return n
        }
        let w = try parse(warning, "warning"), c = try parse(critical, "critical")
        try AlertUseCases.checkRanges(warning: w, critical: c)
        return (w, c)
    }

    /// One source's change, as `dosetap alerts source` checks it.
    static func sourceChanges(warning: String?, critical: String?, alerts: String?, reset: Bool) throws -> [AlertUseCases.SourceChange] {
        let (w, c) = try thresholds(warning, critical)
        if reset {
            guard w == nil, c == nil, alerts == nil || alerts == "" else {
                throw UseCaseError("reset goes alone: it forgets the source's own settings")
            }
            return [.reset]
        }
        var changes: [AlertUseCases.SourceChange] = []
        if let w { changes.append(.warning(w)) }
        if let c { changes.append(.critical(c)) }
        switch alerts {
        case nil, "": break
        case "on": changes.append(.enable)
        case "off": changes.append(.disable)
        case let other?: throw UseCaseError("alerts must be on or off (not '\(DisplayText.escaped(other, maxLength: 20))')")
        }
        guard !changes.isEmpty else { throw UseCaseError("nothing to change: give warning, critical, alerts on or off, or reset") }
        return changes
    }
}

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
