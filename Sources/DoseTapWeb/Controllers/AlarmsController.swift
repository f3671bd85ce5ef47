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

/// The Alarms page and `/api/alarms`: the alarm use cases of the command line (`dosetap alarm …`); the
/// backups' routes when the household's backups apply here.
struct AlarmsController: DashboardController {
    let dashboard: WebDashboard
    let alarms: AlarmUseCases

    func addRoutes(to router: Router<WebContext>) {
        router.get("/alarms", use: page)
        router.post("/alarms/add", use: add)
        router.post("/alarms/:id/:change", use: change)
        router.get("/api/alarms", use: list)
        router.post("/api/alarms", use: apiAdd)
        router.patch("/api/alarms/:id", use: apiEdit)
        router.delete("/api/alarms/:id", use: apiRemove)
        if dashboard.answerRing != nil {
            router.post("/api/ringing/:answer", use: apiAnswerRing)
        }
        if dashboard.household != nil {
            router.post("/alarms/:id/backup/:change", use: changeBackup)
            router.get("/api/alarms/:id/backups", use: apiBackups)
            router.post("/api/alarms/:id/backups", use: apiChangeBackups)
        }
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let alarms = self.alarms
        var headers = HTTPFields()
        let flash = d.takeFlash(request, &headers)
        let csrf = d.csrf(context.access)
        let warnings = d.alarmWarnings()
        let ringing = d.ringingAlarms.withLock { $0 }
        let backupsRinging = d.backupsRinging
        func render() throws -> String {
            let (views, unusable) = try alarms.list()
            let unusableLines = unusable.map { "Alarm \($0.id) cannot be read: \($0.reason)" }
            return AlarmsPage.render(alarms: views, unusable: unusableLines, warnings: warnings,
                                     timeZone: d.clock.timeZone, csrf: csrf, flash: flash, backups: d.backups(views, alarms), ringing: ringing,
                                     backupsRinging: backupsRinging)
        }
        guard flash == nil else { return WebDashboard.html(try render(), headers: headers) }
        // The wake and sound warnings (files) and the alarms ringing are read per request: part of the key. The next
        // occurrence and the battery forecast are drawn again at least every minute.
        let variant = WebDashboard.themeVariant + "|" + warnings.joined(separator: "\n") + "|" + ringing.sorted().map(String.init).joined(separator: ",")
            + "|" + backupsRinging.joined(separator: "\n")
        let now = d.clock.now()
        return WebDashboard.html(try d.views.view(.init(view: "/alarms", session: csrf, variant: variant), now: now) {
            (try render(), ViewCache.nextMinute(after: now))
        }, headers: headers)
    }

    /// A form's change, then back to the page with the outcome: a use case's "no" is the page's message.
    func attempt(_ body: () throws -> String) throws -> Response {
        try dashboard.formOutcome(back: "/alarms", body)
    }

    static func id(_ context: WebContext) throws -> Int {
        let text = context.parameters.get("id") ?? ""
        guard let id = Int(text), id > 0, text.count < 10 else {
            throw WebInputError(.notFound, "no alarm '\(DisplayText.escaped(text, maxLength: 20))'")
        }
        return id
    }

    static func fields(_ form: [String: String]) -> AlarmUseCases.Fields {
        AlarmUseCases.Fields(time: form["time"].flatMap { $0.isEmpty ? nil : $0 }, label: form["label"].flatMap { $0.isEmpty ? nil : $0 },
                             repetition: form["repeat"].flatMap { $0.isEmpty ? nil : $0 })
    }

    @Sendable func add(_ request: Request, _ context: WebContext) async throws -> Response {
        let form = try await WebDashboard.form(request, context)
        return try attempt { "alarm \(try alarms.add(Self.fields(form)).alarm.time) added" }
    }

    /// `/alarms/ID/edit|enable|disable|delete`.
    @Sendable func change(_ request: Request, _ context: WebContext) async throws -> Response {
        let form = try await WebDashboard.form(request, context)
        let alarmID = try Self.id(context)
        switch context.parameters.get("change") {
        case "edit":
            // The label as the form showed it (control characters escaped), sent back unchanged: the stored
            // label stays exact (#25).
            var changes = Self.fields(form)
            if let label = form["label"], label == form["label-shown"] { changes.label = nil }
            let edited = changes
            return try attempt { "alarm \(try alarms.edit(id: alarmID, edited).alarm.time) saved" }
        case "enable": return try attempt { "alarm \(try alarms.setEnabled(id: alarmID, true).alarm.time) turned on" }
        case "disable": return try attempt { "alarm \(try alarms.setEnabled(id: alarmID, false).alarm.time) turned off" }
        case "delete":
            guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "deleting an alarm needs confirm=yes") }
            return try attempt { "alarm \(try alarms.remove(id: alarmID).time) deleted" }
        default:
            throw HTTPError(.notFound)
        }
    }

    /// `/alarms/ID/backup/on|off|add|move|remove`.
    @Sendable func changeBackup(_ request: Request, _ context: WebContext) async throws -> Response {
        guard let household = dashboard.household else { throw HTTPError(.notFound) }
        let form = try await WebDashboard.form(request, context)
        let alarmID = try Self.id(context)
        let change = try WebDashboard.backupChange(context.parameters.get("change") ?? "",
                                                   target: form["target"] ?? form["kind"].map { "\($0):\(form["value"] ?? "")" },
                                                   to: form["to"], confirmed: form["confirm"] == "yes")
        return try attempt {
            let view = try alarms.changeBackups(id: alarmID, change, household: household)
            let what = switch change {
            case .on: "backup of alarm \(alarmID) turned on"
            case .off: "backup of alarm \(alarmID) turned off"
            case .add(let t): "\(WebDashboard.shown(t)) added to the backups of alarm \(alarmID)"
            case .move(let t, let to): "\(WebDashboard.shown(t)) moved to place \(to)"
            case .remove(let t): "\(WebDashboard.shown(t)) deleted from the backups of alarm \(alarmID)"
            }
            return what + (view.note.map { ". Note: \($0)" } ?? "")
        }
    }

    @Sendable func list(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let alarms = self.alarms
        let now = d.clock.now()
        return WebDashboard.response(.ok, "application/json", try d.views.view(.init(view: "/api/alarms", session: "", variant: ""), now: now) {
            let (views, _) = try alarms.list()
            return (JSON.object([("alarms", .array(views.map { $0.json(in: d.clock.timeZone) }))]).text + "\n", ViewCache.nextMinute(after: now))
        })
    }

    /// An alarm's fields in a JSON body: time, label, repeat (strings), enabled (true or false).
    static func fields(_ body: [String: Any]) throws -> AlarmUseCases.Fields {
        let enabled: Bool?
        switch body["enabled"] {
        case nil, is NSNull: enabled = nil
        case let value as Bool: enabled = value
        default: throw WebInputError(.badRequest, "enabled must be true or false")
        }
        return AlarmUseCases.Fields(time: try WebDashboard.text(body, "time"), label: try WebDashboard.text(body, "label"),
                                    repetition: try WebDashboard.text(body, "repeat"), enabled: enabled)
    }

    @Sendable func apiAdd(_ request: Request, _ context: WebContext) async throws -> Response {
        let fields = try Self.fields(try await WebDashboard.jsonBody(request))
        return dashboard.apiAnswer { try alarms.add(fields).json(in: dashboard.clock.timeZone) }
    }

    @Sendable func apiEdit(_ request: Request, _ context: WebContext) async throws -> Response {
        let fields = try Self.fields(try await WebDashboard.jsonBody(request))
        let alarmID = try Self.id(context)
        // As `dosetap alarm edit` with no option: a PATCH that changes nothing is refused, not answered 200 (#51).
        guard fields.time != nil || fields.label != nil || fields.repetition != nil || fields.enabled != nil else {
            throw WebInputError(.badRequest, "nothing to change: give time, label, repeat or enabled")
        }
        return dashboard.apiAnswer { try alarms.edit(id: alarmID, fields).json(in: dashboard.clock.timeZone) }
    }

    @Sendable func apiRemove(_ request: Request, _ context: WebContext) async throws -> Response {
        let alarmID = try Self.id(context)
        return dashboard.apiAnswer { _ = try alarms.remove(id: alarmID); return .object([("deleted", .int(alarmID))]) }
    }

    /// `POST /api/ringing/stop|snooze` (#51): the alarm ringing here (this machine's or a household backup) answered by
    /// the agent, as a button answers it — the sound ends at once and the answer is saved, or kept in memory while the
    /// store cannot take it (`dosetap alarm stop` asks this when it cannot write the answer itself). Through the Unix
    /// socket the answer is the command line's (`by` cli), else the dashboard's. 200 `{"answered": "stop"}`; 409 when
    /// no alarm rings.
    @Sendable func apiAnswerRing(_ request: Request, _ context: WebContext) async throws -> Response {
        guard let answerRing = dashboard.answerRing else { throw HTTPError(.notFound) }
        let name = context.parameters.get("answer") ?? ""
        let outcome: AlarmRingOutcome
        switch name {
        case "stop": outcome = .stopped
        case "snooze": outcome = .snoozed
        default: throw HTTPError(.notFound)
        }
        let by: AlarmRingEnder = if case .local = context.access { .cli } else { .web }
        guard answerRing(outcome, by) else { throw WebInputError(.conflict, "no alarm is ringing") }
        return WebDashboard.json(.object([("answered", .string(name)), ("by", .string(by.rawValue))]))
    }

    @Sendable func apiBackups(_ request: Request, _ context: WebContext) async throws -> Response {
        let alarmID = try Self.id(context)
        return dashboard.apiAnswer { try WebDashboard.backupsJSON(try alarms.backups(id: alarmID), alarms: alarms, timeZone: dashboard.clock.timeZone) }
    }

    /// `{"action": "on|off|add|move|remove", "target": …, "to": N}`.
    @Sendable func apiChangeBackups(_ request: Request, _ context: WebContext) async throws -> Response {
        guard let household = dashboard.household else { throw HTTPError(.notFound) }
        let alarmID = try Self.id(context)
        let body = try await WebDashboard.jsonBody(request)
        let to = try WebDashboard.wholeNumber(body, "to", "to must be a position from 1")
        if let to, to < 1 { throw WebInputError(.badRequest, "to must be a position from 1") }
        let target = try WebDashboard.text(body, "target")
        // The target's bound holds whatever the action (on and off name none; a long one used to pass unread, #51).
        if let target, target.count > 300 { throw WebInputError(.badRequest, "the target is too long") }
        let change = try WebDashboard.backupChange(try WebDashboard.text(body, "action") ?? "", target: target, to: to.map(String.init), confirmed: true)
        return dashboard.apiAnswer {
            try WebDashboard.backupsJSON(try alarms.changeBackups(id: alarmID, change, household: household), alarms: alarms,
                                         timeZone: dashboard.clock.timeZone)
        }
    }
}

extension WebDashboard {
    /// Each alarm's backups and timing preview, when the household's backups apply here.
    func backups(_ views: [AlarmView], _ alarms: AlarmUseCases) -> [Int: AlarmsPage.Backups] {
        var backups: [Int: AlarmsPage.Backups] = [:]
        guard household != nil else { return backups }
        for view in views {
            guard let list = try? alarms.backups(id: view.alarm.id) else { continue }
            do {
                backups[view.alarm.id] = AlarmsPage.Backups(view: list, preview: try alarms.preview(id: view.alarm.id).slots)
            } catch {
                backups[view.alarm.id] = AlarmsPage.Backups(view: list, preview: [], previewProblem: "\(error)")
            }
        }
        return backups
    }

    /// A target as a person reads it (a formatted phone number).
    static func shown(_ target: String) -> String { (try? BackupTarget(parsing: target))?.displayName ?? target }

    /// A backup action of the page or the API: on, off, add TARGET, move TARGET to N, remove TARGET (confirmed).
    static func backupChange(_ verb: String, target: String?, to: String?, confirmed: Bool) throws -> AlarmUseCases.BackupChange {
        func needTarget() throws -> String {
            guard let target, !target.isEmpty, !target.hasSuffix(":") else {
                throw WebInputError(.badRequest, "\(verb) needs a target: device:NAME, push:URL or phone:NUMBER")
            }
            guard target.count <= 300 else { throw WebInputError(.badRequest, "the target is too long") }
            return target
        }
        switch verb {
        case "on": return .on
        case "off": return .off
        case "add": return .add(try needTarget())
        case "remove":
            guard confirmed else { throw WebInputError(.badRequest, "deleting a backup needs confirm=yes") }
            return .remove(try needTarget())
        case "move":
            guard let to, let position = Int(to) else { throw WebInputError(.badRequest, "move needs to: a position from 1") }
            return .move(try needTarget(), to: position)
        default:
            throw WebInputError(.badRequest, "action must be on, off, add, move or remove")
        }
    }

    /// `alarm backup ID list --json`'s object, with the timing preview of `alarm preview ID --json`.
    static func backupsJSON(_ view: AlarmUseCases.BackupsView, alarms: AlarmUseCases, timeZone: TimeZone) throws -> JSON {
        let preview = try? alarms.preview(id: view.alarm.id)
        return .object([
            ("alarm", .int(view.alarm.id)), ("enabled", .bool(view.enabled)),
            ("targets", .array(view.targets.map { t in
                .object([("target", .string(t.description)), ("kind", .string(t.kind)), ("name", .string(t.displayName)),
                         ("sublabel", .optional(t.sublabel))])
            })),
            ("note", .optional(view.note)),
            ("preview", preview.map { p in
                .array(p.slots.map { .object([("at", .string($0.at.rfc3339(in: timeZone))), ("target", .string($0.target.description)),
                                              ("action", .string($0.target.action))]) })
            } ?? .null),
        ])
    }
}
