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

extension WebDashboard {
    /// The Alarms page and `/api/alarms`: the alarm use cases of the command line (`dosetap alarm …`).
    func alarmRoute(_ request: Request, method: HTTPRequest.Method, path: String, access: Access, api: Bool) async throws -> Response {
        guard let alarms else { return Self.error(.notFound, "no alarms here", api: api) }
        let parts = path.split(separator: "/").map(String.init)
        // A use case's "no", in one line: a 400 (API) or the page's message.
        func attempt(_ body: () throws -> String) throws -> Response {
            do {
                let message = try body()
                return try redirect("/alarms", flash: Flash(recorded: true, message: message, verb: "saved"))
            } catch let error as UseCaseError {
                return try redirect("/alarms", flash: Flash(recorded: false, message: error.description, verb: "saved"))
            }
        }
        func id(_ text: String) throws -> Int {
            guard let id = Int(text), id > 0, text.count < 10 else {
                throw WebInputError(.notFound, "no alarm '\(DisplayText.escaped(text, maxLength: 20))'")
            }
            return id
        }
        func apiAnswer(_ body: () throws -> JSON) -> Response {
            do { return Self.json(try body()) } catch let error as UseCaseError {
                return Self.error(error, api: true)
            } catch {
                return Self.error(.badRequest, "\(error)", api: true)
            }
        }
        switch (method, parts.count) {
        case (.get, 1) where parts[0] == "alarms":
            var headers = HTTPFields()
            let flash = takeFlash(request, &headers)
            let csrf = csrf(access)
            let warnings = alarmWarnings()
            let ringing = ringingAlarms.withLock { $0 }
            let backupsRinging = self.backupsRinging
            func render() throws -> String {
                let (views, unusable) = try alarms.list()
                let unusableLines = unusable.map { "Alarm \($0.id) cannot be read: \($0.reason)" }
                return AlarmsPage.render(alarms: views, unusable: unusableLines, warnings: warnings,
                                         timeZone: clock.timeZone, csrf: csrf, flash: flash, backups: backups(views, alarms), ringing: ringing,
                                         backupsRinging: backupsRinging)
            }
            guard flash == nil else { return Self.html(try render(), headers: headers) }
            // The wake and sound warnings (files) and the alarms ringing are read per request: part of the key. The next
            // occurrence and the battery forecast are drawn again at least every minute.
            let variant = Self.themeVariant + "|" + warnings.joined(separator: "\n") + "|" + ringing.sorted().map(String.init).joined(separator: ",")
                + "|" + backupsRinging.joined(separator: "\n")
            let now = clock.now()
            return Self.html(try self.views.view(.init(view: "/alarms", session: csrf, variant: variant), now: now) {
                (try render(), ViewCache.nextMinute(after: now))
            }, headers: headers)
        case (.post, _) where parts[0] == "alarms":
            let form = try await Self.form(request)
            try checkCSRF(request, form: form, access: access)
            func fields() -> AlarmUseCases.Fields {
                AlarmUseCases.Fields(time: form["time"].flatMap { $0.isEmpty ? nil : $0 }, label: form["label"].flatMap { $0.isEmpty ? nil : $0 },
                                     repetition: form["repeat"].flatMap { $0.isEmpty ? nil : $0 })
            }
            if parts.count == 2, parts[1] == "add" {
                return try attempt { "alarm \(try alarms.add(fields()).alarm.time) added" }
            }
            if parts.count == 4, parts[2] == "backup" {
                guard let household else { break }
                let alarmID = try id(parts[1])
                let change = try Self.backupChange(parts[3], target: form["target"] ?? form["kind"].map { "\($0):\(form["value"] ?? "")" },
                                                   to: form["to"], confirmed: form["confirm"] == "yes")
                return try attempt {
                    let view = try alarms.changeBackups(id: alarmID, change, household: household)
                    let what = switch change {
                    case .on: "backup of alarm \(alarmID) turned on"
                    case .off: "backup of alarm \(alarmID) turned off"
                    case .add(let t): "\(Self.shown(t)) added to the backups of alarm \(alarmID)"
                    case .move(let t, let to): "\(Self.shown(t)) moved to place \(to)"
                    case .remove(let t): "\(Self.shown(t)) deleted from the backups of alarm \(alarmID)"
                    }
                    return what + (view.note.map { ". Note: \($0)" } ?? "")
                }
            }
            guard parts.count == 3 else { break }
            let alarmID = try id(parts[1])
            switch parts[2] {
            case "edit":
                // The label as the form showed it (control characters escaped), sent back unchanged: the stored
                // label stays exact (#25).
                var changes = fields()
                if let label = form["label"], label == form["label-shown"] { changes.label = nil }
                let edited = changes
                return try attempt { "alarm \(try alarms.edit(id: alarmID, edited).alarm.time) saved" }
            case "enable": return try attempt { "alarm \(try alarms.setEnabled(id: alarmID, true).alarm.time) turned on" }
            case "disable": return try attempt { "alarm \(try alarms.setEnabled(id: alarmID, false).alarm.time) turned off" }
            case "delete":
                guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "deleting an alarm needs confirm=yes") }
                return try attempt { "alarm \(try alarms.remove(id: alarmID).time) deleted" }
            default: break
            }
        case (.get, 2) where parts[1] == "alarms":
            let now = clock.now()
            return Self.response(.ok, "application/json", try self.views.view(.init(view: "/api/alarms", session: "", variant: ""), now: now) {
                let (views, _) = try alarms.list()
                return (JSON.object([("alarms", .array(views.map { $0.json(in: clock.timeZone) }))]).text + "\n", ViewCache.nextMinute(after: now))
            })
        case (.post, 2) where parts[1] == "alarms", (.patch, 3) where parts[1] == "alarms":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            func text(_ key: String) throws -> String? {
                switch body[key] {
                case nil, is NSNull: return nil
                case let value as String: return value
                default: throw WebInputError(.badRequest, "\(key) must be a string")
                }
            }
            let enabled: Bool?
            switch body["enabled"] {
            case nil, is NSNull: enabled = nil
            case let value as Bool: enabled = value
            default: throw WebInputError(.badRequest, "enabled must be true or false")
            }
            let fields = AlarmUseCases.Fields(time: try text("time"), label: try text("label"), repetition: try text("repeat"), enabled: enabled)
            if parts.count == 2 { return apiAnswer { try alarms.add(fields).json(in: clock.timeZone) } }
            let alarmID = try id(parts[2])
            return apiAnswer { try alarms.edit(id: alarmID, fields).json(in: clock.timeZone) }
        case (.get, 4) where parts[1] == "alarms" && parts[3] == "backups":
            guard household != nil else { break }
            let alarmID = try id(parts[2])
            return apiAnswer { try Self.backupsJSON(try alarms.backups(id: alarmID), alarms: alarms, timeZone: clock.timeZone) }
        case (.post, 4) where parts[1] == "alarms" && parts[3] == "backups":
            guard let household else { break }
            let alarmID = try id(parts[2])
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let to: String?
            switch body["to"] {
            case nil, is NSNull: to = nil
            case let value as Int: to = "\(value)"
            default: throw WebInputError(.badRequest, "to must be a position from 1")
            }
            let change = try Self.backupChange(try Self.text(body, "action") ?? "", target: try Self.text(body, "target"), to: to, confirmed: true)
            return apiAnswer {
                try Self.backupsJSON(try alarms.changeBackups(id: alarmID, change, household: household), alarms: alarms, timeZone: clock.timeZone)
            }
        case (.delete, 3) where parts[1] == "alarms":
            try checkCSRF(request, form: [:], access: access)
            let alarmID = try id(parts[2])
            return apiAnswer { _ = try alarms.remove(id: alarmID); return .object([("deleted", .int(alarmID))]) }
        default: break
        }
        return Self.error(.notFound, "no such page: \(path)", api: api)
    }

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
