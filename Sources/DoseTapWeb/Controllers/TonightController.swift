import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Tonight's page and `/api/dose/…`: the dose commands of the command line, with the same refusals.
struct TonightController: DashboardController {
    let dashboard: WebDashboard

    func addRoutes(to router: Router<WebContext>) {
        router.get("/", use: page)
        router.get("/tonight/fragment", use: fragment)
        router.get("/api/tonight", use: tonightJSON)
        router.get("/api/session", use: session)
        router.post("/tonight/:action", use: formAction)
        router.post("/api/dose/:action", use: apiAction)
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        var headers = HTTPFields()
        let flash = d.takeFlash(request, &headers)
        let csrf = d.csrf(context.access)
        guard flash == nil else {
            return WebDashboard.html(TonightPage.render(status: try d.doses.status(), csrf: csrf, flash: flash), headers: headers)
        }
        return WebDashboard.html(try d.views.view(.init(view: "/", session: csrf, variant: WebDashboard.themeVariant), now: d.clock.now()) {
            let status = try d.doses.status()
            return (TonightPage.render(status: status, csrf: csrf, flash: nil), Self.nextChange(status))
        }, headers: headers)
    }

    @Sendable func fragment(_ request: Request, _ context: WebContext) async throws -> Response {
        WebDashboard.html(TonightPage.fragment(status: try dashboard.doses.status(), csrf: dashboard.csrf(context.access)))
    }

    @Sendable func tonightJSON(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        return WebDashboard.response(.ok, "application/json", try d.views.view(.init(view: "/api/tonight", session: "", variant: ""), now: d.clock.now()) {
            let status = try d.doses.status()
            return (status.json(in: d.clock.timeZone).text + "\n", Self.nextChange(status))
        })
    }

    @Sendable func session(_ request: Request, _ context: WebContext) async throws -> Response {
        WebDashboard.json(.object([("csrfToken", .string(dashboard.csrf(context.access)))]))
    }

    /// A dose button of the page: the flash on Tonight after a redirect, or (a script asking for JSON) the
    /// outcome with the new fragment.
    @Sendable func formAction(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let form = try await WebDashboard.form(request, context)
        let command = try Self.command(context.parameters.get("action") ?? "", late: form["late"] == "yes", reason: form["reason"],
                                       event: form["event"])
        let submission = try d.doses.submit(command, source: .web)
        let flash = Self.flash(submission)
        if request.headers[.accept]?.contains("application/json") == true {
            let fragment = TonightPage.fragment(status: submission.status, csrf: d.csrf(context.access))
            return WebDashboard.json(.object([
                ("recorded", .bool(flash.recorded)),
                ("announce", .string(TonightPage.renderFlash(flash))),
                ("tonight", .string(fragment)),
                ("version", .string(TonightPage.version(fragment))),
            ]))
        }
        return try d.redirect("/", flash: flash)
    }

    /// `POST /api/dose/take|skip|snooze|undo` with `late`, `reason`, `event`: 200 with the outcome, 409 refused.
    @Sendable func apiAction(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let body = try await WebDashboard.jsonBody(request)
        let late: Bool
        switch body["late"] {
        case nil, is NSNull: late = false
        case let value as Bool: late = value
        default: throw WebInputError(.badRequest, "late must be true or false")
        }
        let reason: String?
        switch body["reason"] {
        case nil, is NSNull: reason = nil
        case let value as String: reason = value
        default: throw WebInputError(.badRequest, "reason must be alert, side-effects or other")
        }
        let event: String?
        switch body["event"] {
        case nil, is NSNull: event = nil
        case let value as String: event = value
        default: throw WebInputError(.badRequest, "event must be an event id (a string) from GET /api/tonight")
        }
        let command = try Self.command(context.parameters.get("action") ?? "", late: late, reason: reason, event: event)
        let submission = try d.doses.submit(command, source: .web)
        if case .refused = submission.outcome { return WebDashboard.json(submission.json(in: d.clock.timeZone), status: .conflict) }
        return WebDashboard.json(submission.json(in: d.clock.timeZone))
    }

    /// When tonight's text would next change: the next minute of the night (its minutes count from Dose 1's
    /// second) or of the wall clock (the night's date, bedtime), whichever comes first.
    static func nextChange(_ status: NightStatus) -> Date {
        ViewCache.nextMinute(after: status.now, anchoredAt: status.session?.dose1.at)
    }

    /// Undo and Snooze name the event they act on (`event`: `lastAction.id` and `reminderSetBy` of
    /// `GET /api/tonight`, hidden fields of the page's forms), so a second submit of the same click does nothing.
    static func command(_ name: String, late: Bool, reason: String?, event: String? = nil) throws -> DoseCommand {
        func named(_ what: String) throws -> UUID {
            guard let event, !event.isEmpty else {
                let field = what == "undo" ? "lastAction.id" : what == "discard" ? "setAside[].id" : "reminderSetBy"
                throw WebInputError(.badRequest, "\(what) names the event it acts on: send event (\(field) of GET /api/tonight)")
            }
            guard let id = UUID(uuidString: event) else {
                throw WebInputError(.badRequest, "event must be an event id, not '\(DisplayText.escaped(event, maxLength: 40))'")
            }
            return id
        }
        switch name {
        case "take": return .take(confirmLate: late)
        case "snooze": return .snoozeReminder(setBy: try named("snooze"))
        case "undo": return .undoEvent(try named("undo"))
        case "discard": return .discard(reference: try named("discard").uuidString)
        case "skip":
            guard let reason, !reason.isEmpty else { return .skip(nil) }
            guard let parsed = SkipReason(rawValue: reason), SkipReason.userChoices.contains(parsed) else {
                throw WebInputError(.badRequest, "reason must be alert, side-effects or other (not '\(DisplayText.escaped(reason, maxLength: 40))')")
            }
            return .skip(parsed)
        default:
            throw WebInputError(.notFound, "no such action: \(DisplayText.escaped(name, maxLength: 40))")
        }
    }

    static func flash(_ submission: DoseSubmission) -> Flash {
        switch submission.outcome {
        case .recorded(_, let confirmation, _): Flash(recorded: true, message: confirmation, nudge: submission.nudge)
        case .refused(let refusal, _): Flash(recorded: false, message: refusal.message)
        }
    }
}

extension DoseSubmission {
    var status: NightStatus {
        switch outcome {
        case .recorded(_, _, let status), .refused(_, let status): status
        }
    }
}
