import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// The feedback settings of the dashboard: the use cases of `dosetap feedback …` with this machine's
/// sounds and motor, and the preview of `dosetap sounds preview`.
public struct WebSounds: Sendable {
    public let settings: SettingsUseCases
    public let preview: SoundPreview?

    public init(settings: SettingsUseCases, preview: SoundPreview?) {
        self.settings = settings
        self.preview = preview
    }
}

extension WebDashboard {
    static let timerRunning = "Timer is running, changes will apply next time"

    /// `/sounds…` and `/api/feedback…`, `/api/sounds…`.
    func soundsRoute(_ request: Request, method: HTTPRequest.Method, path: String, access: Access, api: Bool) async throws -> Response {
        guard let sounds else { return Self.error(.notFound, "no sound settings here", api: api) }
        let settings = sounds.settings
        let parts = path.split(separator: "/").map(String.init)
        switch (method, parts.count) {
        case (.get, 1) where parts[0] == "sounds":
            var headers = HTTPFields()
            let flash = takeFlash(request, &headers)
            let playing = sounds.preview?.playing
            let csrf = csrf(access)
            func render() throws -> String {
                let (feedback, plans, choices) = try settings.screen()
                return SoundsPage.render(feedback: feedback, plans: plans, sounds: choices, playing: playing, csrf: csrf, flash: flash)
            }
            guard flash == nil else { return Self.html(try render(), headers: headers) }
            // The settings are in the store (a new generation on a change), the sound playing is part of the
            // key; the machine's sounds are listed outside the store, so the page is kept for a second at most.
            let now = clock.now()
            return Self.html(try views.view(.init(view: "/sounds", session: csrf, variant: Self.themeVariant + "|" + (playing ?? "")), now: now) {
                (try render(), Self.soundsValidity(now))
            }, headers: headers)
        case (.post, _) where parts[0] == "sounds":
            let form = try await Self.form(request)
            try checkCSRF(request, form: form, access: access)
            func attempt(_ body: () throws -> (String, String?)) throws -> Response {
                do {
                    let (message, note) = try body()
                    return try redirect("/sounds", flash: Flash(recorded: true, message: message, verb: "saved", note: note))
                } catch let error as UseCaseError {
                    return try redirect("/sounds", flash: Flash(recorded: false, message: error.description, verb: "saved"))
                }
            }
            switch parts.count == 2 ? parts[1] : parts.count == 3 && parts[1] == "events" ? "events" : "" {
            case "global":
                let change = try Self.globalChange(sound: form["sound"], haptics: form["haptics"], intensity: form["intensity"], quiet: form["quiet"])
                return try attempt {
                    try settings.changeFeedback(change)
                    return ("sound and vibration for every event", change.haptics == true && !settings.hapticsSupported ? SoundsPage.notSupported : nil)
                }
            case "events":
                let event = try Self.event(parts[2])
                let change = try Self.eventChange(chime: form["chime"], sound: form["sound"], haptics: form["haptics"], intensity: form["intensity"])
                return try attempt {
                    let pending = try settings.changeEvent(event, change)
                    return ("\(SoundsPage.title(event)): sound and vibration", pending ? Self.timerRunning : nil)
                }
            case "preview":
                guard let preview = sounds.preview else { throw WebInputError(.notFound, "no sound preview here") }
                let name = try Self.required(form["sound"], "sound")
                return try attempt { ("playing \(try preview.play(name).name)", nil) }
            case "stop":
                guard let preview = sounds.preview else { throw WebInputError(.notFound, "no sound preview here") }
                return try attempt { (preview.stop().map { "stopped \($0)" } ?? "nothing was playing", nil) }
            default: break
            }
        case (.get, 2) where parts[1] == "feedback":
            let now = clock.now()
            return Self.response(.ok, "application/json", try views.view(.init(view: "/api/feedback", session: "", variant: ""), now: now) {
                let (feedback, plans, _) = try settings.screen()
                return (JSON.object([("feedback", feedback.json), ("plans", .array(plans.map(\.json)))]).text + "\n", Self.soundsValidity(now))
            })
        case (.get, 2) where parts[1] == "sounds":
            return Self.json(.object([("sounds", .array(settings.sounds().map(\.json))), ("playing", .optional(sounds.preview?.playing))]))
        case (.post, 2) where parts[1] == "feedback", (.patch, 2) where parts[1] == "feedback":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let change = try Self.globalChange(sound: try Self.text(body, "sound"), haptics: try Self.onOff(body, "haptics"),
                                               intensity: try Self.text(body, "intensity"), quiet: try Self.onOff(body, "quiet"))
            return apiAnswer {
                try settings.changeFeedback(change)
                return try settings.feedback().json
            }
        case (.patch, 4) where parts[1] == "feedback" && parts[2] == "events", (.post, 4) where parts[1] == "feedback" && parts[2] == "events":
            let event = try Self.event(parts[3])
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let change = try Self.eventChange(chime: try Self.onOff(body, "chime"), sound: try Self.text(body, "sound"),
                                              haptics: try Self.onOff(body, "haptics"), intensity: try Self.text(body, "intensity"))
            return apiAnswer {
                let pending = try settings.changeEvent(event, change)
                return .object([("event", .string(event.rawValue)), ("settings", try settings.feedback().settings.event(event).json),
                                ("plan", try settings.resolve(event).json), ("timerRunning", .bool(pending)),
                                ("message", pending ? .string(Self.timerRunning) : .null)])
            }
        case (.post, 3) where parts[1] == "sounds" && (parts[2] == "preview" || parts[2] == "stop"):
            guard let preview = sounds.preview else { throw WebInputError(.notFound, "no sound preview here") }
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            if parts[2] == "stop" { return Self.json(.object([("stopped", .optional(preview.stop()))])) }
            let name = try Self.required(try Self.text(body, "sound"), "sound")
            return apiAnswer { .object([("playing", .string(try preview.play(name).name))]) }
        default: break
        }
        return Self.error(.notFound, "no such page: \(path)", api: api)
    }

    /// How long a view of the sound settings is kept: a second (the machine's sounds are listed outside the
    /// store, from a listing at most a second old: a theme added or removed shows within 2 s).
    static func soundsValidity(_ now: Date) -> Date { min(ViewCache.nextMinute(after: now), now.addingTimeInterval(1)) }

    /// A use case's answer as JSON, or its one-line "no" as a 400 (a 404 for "no button …", "no such …").
    func apiAnswer(_ body: () throws -> JSON) -> Response {
        do { return Self.json(try body()) } catch let error as UseCaseError {
            return Self.error(error, api: true)
        } catch {
            return Self.error(.badRequest, "\(error)", api: true)
        }
    }

    static func event(_ name: String) throws -> FeedbackEvent {
        do { return try FeedbackEvent(validating: name) } catch {
            throw WebInputError(.notFound, "unknown event '\(DisplayText.escaped(name, maxLength: 40))'")
        }
    }

    static func required(_ value: String?, _ name: String) throws -> String {
        guard let value, !value.isEmpty else { throw WebInputError(.badRequest, "\(name) is missing") }
        guard value.count <= 200 else { throw WebInputError(.badRequest, "\(name) is too long") }
        return value
    }

    /// A JSON string field (absent or null: nil).
    static func text(_ body: [String: Any], _ key: String) throws -> String? {
        switch body[key] {
        case nil, is NSNull: return nil
        case let value as String: return value
        default: throw WebInputError(.badRequest, "\(key) must be a string")
        }
    }

    /// A JSON on/off field: true/false, or "on"/"off"/"default" as the forms send it.
    static func onOff(_ body: [String: Any], _ key: String) throws -> String? {
        switch body[key] {
        case nil, is NSNull: return nil
        case let value as Bool: return value ? "on" : "off"
        case let value as String: return value
        default: throw WebInputError(.badRequest, "\(key) must be true, false or \"default\"")
        }
    }

    static func bool(_ value: String?, _ name: String) throws -> Bool? {
        switch value {
        case nil, "": return nil
        case "on", "true": return true
        case "off", "false": return false
        case let other?: throw WebInputError(.badRequest, "\(name) must be on or off (not '\(DisplayText.escaped(other, maxLength: 40))')")
        }
    }

    /// The global change of a form or a JSON body: sound (a name, or "none"), haptics and quiet (on/off), intensity.
    static func globalChange(sound: String?, haptics: String?, intensity: String?, quiet: String?) throws -> SettingsUseCases.FeedbackChange {
        let change = SettingsUseCases.FeedbackChange(
            sound: try sound.flatMap { $0.isEmpty ? nil : $0 == "none" ? .off : .named(try required($0, "sound")) },
            haptics: try bool(haptics, "haptics"), intensity: intensity.flatMap { $0.isEmpty ? nil : $0 }, quiet: try bool(quiet, "quiet"))
        guard !change.isEmpty else { throw WebInputError(.badRequest, "nothing to change: give sound, haptics, intensity or quiet") }
        return change
    }

    /// One event's change: "default" is "Use global default".
    static func eventChange(chime: String?, sound: String?, haptics: String?, intensity: String?) throws -> SettingsUseCases.EventFeedbackChange {
        func override(_ value: String?) -> SettingsUseCases.Override<String>? {
            guard let value, !value.isEmpty else { return nil }
            return value == "default" ? .useGlobal : .set(value)
        }
        let hapticsChange: SettingsUseCases.Override<Bool>?
        switch haptics {
        case nil, "": hapticsChange = nil
        case "default": hapticsChange = .useGlobal
        default: hapticsChange = .set(try bool(haptics, "haptics")!)
        }
        let change = SettingsUseCases.EventFeedbackChange(chime: try bool(chime, "chime"), sound: override(sound), haptics: hapticsChange,
                                                          intensity: override(intensity))
        guard change != SettingsUseCases.EventFeedbackChange() else {
            throw WebInputError(.badRequest, "nothing to change: give chime, sound, haptics or intensity")
        }
        if case .set(let name)? = change.sound, name.count > 200 { throw WebInputError(.badRequest, "sound is too long") }
        return change
    }
}
