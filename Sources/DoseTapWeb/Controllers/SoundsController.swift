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

/// `/sounds…` and `/api/feedback…`, `/api/sounds…`: the feedback settings (`dosetap feedback …`) and the preview.
struct SoundsController: DashboardController {
    let dashboard: WebDashboard
    let sounds: WebSounds

    func addRoutes(to router: Router<WebContext>) {
        router.get("/sounds", use: page)
        router.post("/sounds/:change", use: change)
        router.post("/sounds/events/:event", use: changeEvent)
        router.get("/api/feedback", use: feedback)
        router.get("/api/sounds", use: list)
        router.post("/api/feedback", use: apiChange)
        router.patch("/api/feedback", use: apiChange)
        router.post("/api/feedback/events/:event", use: apiChangeEvent)
        router.patch("/api/feedback/events/:event", use: apiChangeEvent)
        router.post("/api/sounds/preview", use: apiPreview)
        router.post("/api/sounds/stop", use: apiStop)
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let settings = sounds.settings
        var headers = HTTPFields()
        let flash = d.takeFlash(request, &headers)
        let playing = sounds.preview?.playing
        let csrf = d.csrf(context.access)
        func render() throws -> String {
            let (feedback, plans, choices) = try settings.screen()
            return SoundsPage.render(feedback: feedback, plans: plans, sounds: choices, playing: playing, csrf: csrf, flash: flash)
        }
        guard flash == nil else { return WebDashboard.html(try render(), headers: headers) }
        // The settings are in the store (a new generation on a change), the sound playing is part of the
        // key; the machine's sounds are listed outside the store, so the page is kept for a second at most.
        let now = d.clock.now()
        return WebDashboard.html(try d.views.view(.init(view: "/sounds", session: csrf, variant: WebDashboard.themeVariant + "|" + (playing ?? "")), now: now) {
            (try render(), WebDashboard.soundsValidity(now))
        }, headers: headers)
    }

    func attempt(_ body: () throws -> (message: String, note: String?)) throws -> Response {
        try dashboard.formOutcome(back: "/sounds", body)
    }

    func preview() throws -> SoundPreview {
        guard let preview = sounds.preview else { throw WebInputError(.notFound, "no sound preview here") }
        return preview
    }

    /// `/sounds/global|preview|stop`.
    @Sendable func change(_ request: Request, _ context: WebContext) async throws -> Response {
        let settings = sounds.settings
        let form = try await WebDashboard.form(request, context)
        switch context.parameters.get("change") {
        case "global":
            let change = try WebDashboard.globalChange(sound: form["sound"], haptics: form["haptics"], intensity: form["intensity"], quiet: form["quiet"])
            return try attempt {
                try settings.changeFeedback(change)
                return ("sound and vibration for every event", change.haptics == true && !settings.hapticsSupported ? SoundsPage.notSupported : nil)
            }
        case "preview":
            let preview = try preview()
            let name = try WebDashboard.required(form["sound"], "sound")
            return try attempt { ("playing \(try preview.play(name).name)", nil) }
        case "stop":
            let preview = try preview()
            return try attempt { (preview.stop().map { "stopped \($0)" } ?? "nothing was playing", nil) }
        default:
            throw HTTPError(.notFound)
        }
    }

    @Sendable func changeEvent(_ request: Request, _ context: WebContext) async throws -> Response {
        let settings = sounds.settings
        let form = try await WebDashboard.form(request, context)
        let event = try WebDashboard.event(context.parameters.get("event") ?? "")
        let change = try WebDashboard.eventChange(chime: form["chime"], sound: form["sound"], haptics: form["haptics"], intensity: form["intensity"])
        return try attempt {
            let pending = try settings.changeEvent(event, change)
            return ("\(SoundsPage.title(event)): sound and vibration", pending ? WebDashboard.timerRunning : nil)
        }
    }

    @Sendable func feedback(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let settings = sounds.settings
        let now = d.clock.now()
        return WebDashboard.response(.ok, "application/json", try d.views.view(.init(view: "/api/feedback", session: "", variant: ""), now: now) {
            let (feedback, plans, _) = try settings.screen()
            return (JSON.object([("feedback", feedback.json), ("plans", .array(plans.map(\.json)))]).text + "\n", WebDashboard.soundsValidity(now))
        })
    }

    @Sendable func list(_ request: Request, _ context: WebContext) async throws -> Response {
        WebDashboard.json(.object([("sounds", .array(sounds.settings.sounds().map(\.json))), ("playing", .optional(sounds.preview?.playing))]))
    }

    @Sendable func apiChange(_ request: Request, _ context: WebContext) async throws -> Response {
        let settings = sounds.settings
        let body = try await WebDashboard.jsonBody(request)
        let change = try WebDashboard.globalChange(sound: try WebDashboard.word(body, "sound"), haptics: try WebDashboard.flag(body, "haptics"),
                                                   intensity: try WebDashboard.word(body, "intensity"), quiet: try WebDashboard.flag(body, "quiet"))
        return dashboard.apiAnswer {
            try settings.changeFeedback(change)
            return try settings.feedback().json
        }
    }

    @Sendable func apiChangeEvent(_ request: Request, _ context: WebContext) async throws -> Response {
        let settings = sounds.settings
        let event = try WebDashboard.event(context.parameters.get("event") ?? "")
        let body = try await WebDashboard.jsonBody(request)
        let change = try WebDashboard.eventChange(chime: try WebDashboard.flag(body, "chime"), sound: try WebDashboard.word(body, "sound"),
                                                  haptics: try WebDashboard.flag(body, "haptics", orDefault: true), intensity: try WebDashboard.word(body, "intensity"))
        return dashboard.apiAnswer {
            let pending = try settings.changeEvent(event, change)
            return .object([("event", .string(event.rawValue)), ("settings", try settings.feedback().settings.event(event).json),
                            ("plan", try settings.resolve(event).json), ("timerRunning", .bool(pending)),
                            ("message", pending ? .string(WebDashboard.timerRunning) : .null)])
        }
    }

    @Sendable func apiPreview(_ request: Request, _ context: WebContext) async throws -> Response {
        let preview = try preview()
        let body = try await WebDashboard.jsonBody(request)
        let name = try WebDashboard.required(try WebDashboard.text(body, "sound"), "sound")
        return dashboard.apiAnswer { .object([("playing", .string(try preview.play(name).name))]) }
    }

    @Sendable func apiStop(_ request: Request, _ context: WebContext) async throws -> Response {
        let preview = try preview()
        _ = try await WebDashboard.jsonBody(request)
        return WebDashboard.json(.object([("stopped", .optional(preview.stop()))]))
    }
}

extension WebDashboard {
    static let timerRunning = "Timer is running, changes will apply next time"

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

    /// A JSON whole number (absent or null: nil), as JSON Schema's integer: `26` or `26.0`, one number in JSON (#51: a
    /// whole number written with a fraction was refused). Not a string, a fraction or a Boolean: `refusal` says why.
    static func wholeNumber(_ body: [String: Any], _ key: String, _ refusal: String) throws -> Int? {
        switch body[key] {
        case nil, is NSNull: return nil
        case let value as Int: return value
        case let value as Double where value.rounded() == value && abs(value) < 1e15: return Int(value)
        default: throw WebInputError(.badRequest, refusal)
        }
    }

    /// A JSON string field that names something (a sound, an intensity): absent or null is nil, an empty string is
    /// bad input (in a form an empty field means "unchanged"; a JSON body leaves the key out or sends null).
    static func word(_ body: [String: Any], _ key: String) throws -> String? {
        guard let value = try text(body, key) else { return nil }
        guard !value.isEmpty else { throw WebInputError(.badRequest, "\(key) is empty: leave it out to keep it as it is") }
        return value
    }

    /// A JSON on/off field: true or false (absent or null: nil), as the form's "on"/"off"; with `orDefault`, also
    /// "default" (Use global default). Any other value is bad input: the forms' words are not the API's (#51).
    static func flag(_ body: [String: Any], _ key: String, orDefault: Bool = false) throws -> String? {
        switch body[key] {
        case nil, is NSNull: return nil
        case let value as Bool: return value ? "on" : "off"
        case let value as String where orDefault && value == "default": return value
        default: throw WebInputError(.badRequest, orDefault ? "\(key) must be true, false or \"default\"" : "\(key) must be true or false")
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
