import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// `/batteries/alerts/…` (the forms of the Batteries page) and `/api/alerts…`: the use cases and the checks of
/// `dosetap alerts …`, with the same messages.
struct AlertsController: DashboardController {
    let dashboard: WebDashboard
    let alerts: AlertUseCases

    func addRoutes(to router: Router<WebContext>) {
        router.post("/batteries/alerts/:change", use: change)
        router.get("/api/alerts", use: overview)
        router.get("/api/alerts/history", use: history)
        router.post("/api/alerts/:change", use: apiChange)
    }

    func attempt(_ body: () throws -> String) throws -> Response {
        try dashboard.formOutcome(back: "/batteries#alerts", body)
    }

    /// `/batteries/alerts/thresholds|source|snooze|clear-history`.
    @Sendable func change(_ request: Request, _ context: WebContext) async throws -> Response {
        let alerts = self.alerts
        let zone = dashboard.clock.timeZone
        let form = try await WebDashboard.form(request, context)
        switch context.parameters.get("change") {
        case "thresholds":
            return try attempt {
                let (warning, critical) = try WebDashboard.thresholds(form["warning"], form["critical"])
                guard warning != nil || critical != nil else { throw UseCaseError("nothing to change: give warning, critical or both") }
                let settings = try alerts.setThresholds(warning: warning, critical: critical)
                return "alerts at \(settings.thresholds.warning) % used (warning) and \(settings.thresholds.critical) % used (critical)"
            }
        case "source":
            let name = try WebDashboard.required(form["name"], "name")
            return try attempt {
                let view = try alerts.changeSource(name, try WebDashboard.sourceChanges(warning: form["warning"], critical: form["critical"],
                                                                                         alerts: form["alerts"], reset: form["reset"] == "yes"))
                return "\(view.name): \(view.enabled ? "alerts at \(view.thresholds.warning) / \(view.thresholds.critical) % used" : "alerts off")"
            }
        case "snooze":
            return try attempt {
                let until = try alerts.snooze(try AlertUseCases.snoozeDuration(form["duration"] ?? ""))
                return until.map { "alerts snoozed until \(ClockText(timeZone: zone).time($0))" } ?? "alerts are on"
            }
        case "clear-history":
            guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "clearing the history needs confirm=yes") }
            return try attempt {
                let gone = try alerts.clearHistory()
                return "cleared \(gone) alert\(gone == 1 ? "" : "s") from the history"
            }
        default:
            throw HTTPError(.notFound)
        }
    }

    @Sendable func overview(_ request: Request, _ context: WebContext) async throws -> Response {
        WebDashboard.json(try alerts.overview().json(now: dashboard.clock.now(), in: dashboard.clock.timeZone))
    }

    @Sendable func history(_ request: Request, _ context: WebContext) async throws -> Response {
        WebDashboard.json(.object([("history", .array(try alerts.history().map { $0.json(in: dashboard.clock.timeZone) }))]))
    }

    /// `POST /api/alerts/thresholds|source|snooze`.
    @Sendable func apiChange(_ request: Request, _ context: WebContext) async throws -> Response {
        let alerts = self.alerts
        let zone = dashboard.clock.timeZone
        let body = try await WebDashboard.jsonBody(request)
        func number(_ key: String) throws -> String? {
            try WebDashboard.wholeNumber(body, key, "\(key) must be a whole number of percent used").map(String.init)
        }
        let now = dashboard.clock.now()
        switch context.parameters.get("change") {
        case "thresholds":
            let warning = try number("warning"), critical = try number("critical")
            return dashboard.apiAnswer {
                let (w, c) = try WebDashboard.thresholds(warning, critical)
                guard w != nil || c != nil else { throw UseCaseError("nothing to change: give warning, critical or both") }
                _ = try alerts.setThresholds(warning: w, critical: c)
                return try alerts.overview().json(now: now, in: zone)
            }
        case "source":
            let name = try WebDashboard.required(try WebDashboard.text(body, "name"), "name")
            let warning = try number("warning"), critical = try number("critical")
            let enabled: String?
            switch body["enabled"] {
            case nil, is NSNull: enabled = nil
            case let value as Bool: enabled = value ? "on" : "off"
            default: throw WebInputError(.badRequest, "enabled must be true or false")
            }
            let reset: Bool
            switch body["reset"] {
            case nil, is NSNull: reset = false
            case let value as Bool: reset = value
            default: throw WebInputError(.badRequest, "reset must be true or false")
            }
            return dashboard.apiAnswer {
                let view = try alerts.changeSource(name, try WebDashboard.sourceChanges(warning: warning, critical: critical, alerts: enabled, reset: reset))
                return .object([("name", .string(view.name)), ("warning", .int(view.thresholds.warning)), ("critical", .int(view.thresholds.critical)),
                                ("enabled", .bool(view.enabled)), ("state", .string(view.state))])
            }
        case "snooze":
            let duration = try WebDashboard.text(body, "duration") ?? ""
            return dashboard.apiAnswer {
                let until = try alerts.snooze(try AlertUseCases.snoozeDuration(duration))
                return .object([("snoozedUntil", until.map { .string($0.rfc3339(in: zone)) } ?? .null)])
            }
        default:
            throw HTTPError(.notFound)
        }
    }
}

extension WebDashboard {
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
