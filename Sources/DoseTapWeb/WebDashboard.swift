import DoseTapAgent
import DoseTapCore
import DoseTapStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The dashboard's request context: the connection, so the responder can ask who is calling.
public struct WebContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: (any Channel)?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The local web dashboard (#14): pages and a JSON API over the agent's use cases. One responder for every
/// route, so the order is the same everywhere: the rate limit, then the public routes, then access (the
/// session or a trusted local peer), then CSRF on every state change.
public final class WebDashboard: Sendable {
    public static let sessionCookie = "dosetap_session"
    static let flashCookie = "dosetap_flash"
    static let maxBody = 16 * 1024

    let doses: DoseUseCases
    let events: EventBus
    let clock: any Scheduling
    let tokens: WebTokens
    let desk: PairingDesk
    let ownUID: UInt32
    let logger: Logger
    let databaseChanges: @Sendable () -> AsyncStream<Void>?
    let alarms: AlarmUseCases?
    let batteries: WebBatteries?
    /// What stands between an alarm and its being heard: "This machine may sleep through the alarm: …",
    /// "This machine cannot play the alarm: …"; empty when nothing does.
    let alarmWarnings: @Sendable () -> [String]
    let limiter: Mutex<RateLimiter>
    /// The alarms ringing now, as the agent's event stream told (alarm ids).
    let ringingAlarms = Mutex<Set<Int>>([])
    let sounds: WebSounds?
    let buttons: WebButtons?
    /// This machine's name and whether a household broker is set: the backup rules (#12); nil hides backups.
    let household: AlarmUseCases.Household?
    /// The usage alerts of every battery (#13), shown on the Batteries page.
    let usageAlerts: AlertUseCases?
    /// Rendered views kept while nothing they show changed (`ViewCache`).
    let views: ViewCache
    /// The bedtime and wake time (minutes of the day) as read at a store generation.
    let nightHours = Mutex<(generation: Int, bed: Int, wake: Int)?>(nil)

    public init(doses: DoseUseCases, events: EventBus, clock: any Scheduling, secret: WebSecret, ownUID: UInt32 = getuid(),
                logger: Logger, databaseChanges: @escaping @Sendable () -> AsyncStream<Void>? = { nil },
                alarms: AlarmUseCases? = nil, alarmWarnings: @escaping @Sendable () -> [String] = { [] },
                batteries: WebBatteries? = nil, sounds: WebSounds? = nil, buttons: WebButtons? = nil,
                redeemedCodes dataDirectory: URL? = nil, household: AlarmUseCases.Household? = nil, usageAlerts: AlertUseCases? = nil,
                rateLimit: RateLimiter = RateLimiter(), storeGeneration: (@Sendable () -> Int)? = nil) {
        self.limiter = Mutex(rateLimit)
        self.views = ViewCache(storeGeneration: storeGeneration)
        self.usageAlerts = usageAlerts
        self.household = household
        self.sounds = sounds
        self.buttons = buttons
        self.alarms = alarms
        self.batteries = batteries
        self.alarmWarnings = alarmWarnings
        self.doses = doses
        self.events = events
        self.clock = clock
        self.tokens = WebTokens(secret: secret)
        self.desk = PairingDesk(tokens: tokens, dataDirectory: dataDirectory)
        self.ownUID = ownUID
        self.logger = logger
        self.databaseChanges = databaseChanges
    }

    /// The responder of every listener.
    public var responder: some HTTPResponder<WebContext> { DashboardResponder(dashboard: self) }

    // MARK: - Answers

    static func securityHeaders(_ fields: inout HTTPFields) {
        fields[.contentSecurityPolicy] = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        fields[.xContentTypeOptions] = "nosniff"
        // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on form posts, which the origin check
        // refuses; the pairing code still never leaves for another site.
        fields[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        fields[HTTPField.Name("X-Frame-Options")!] = "DENY"
        if fields[.cacheControl] == nil { fields[.cacheControl] = "no-store" }
    }

    static func response(_ status: HTTPResponse.Status, _ contentType: String, _ text: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        securityHeaders(&fields)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        response(status, "text/html; charset=utf-8", text, headers: headers)
    }

    static func json(_ value: JSON, status: HTTPResponse.Status = .ok) -> Response {
        response(status, "application/json", value.text + "\n")
    }

    /// A one-line error: JSON for the API (and scripts), a short page otherwise. Never a stack trace.
    /// The one place a use case's "no" becomes an HTTP status: by its kind, never by its words.
    static func status(for error: UseCaseError) -> HTTPResponse.Status {
        switch error.kind {
        case .invalid: .badRequest
        case .notFound: .notFound
        case .refused: .conflict
        case .unavailable: .serviceUnavailable
        }
    }

    /// A use case's "no" as an answer: its status by kind, its sentence as the message.
    static func error(_ error: UseCaseError, api: Bool) -> Response {
        Self.error(status(for: error), error.description, api: api)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String, api: Bool, headers: HTTPFields = [:]) -> Response {
        let line = DisplayText.escaped(message, maxLength: 300)
        if api {
            var r = response(status, "application/json", JSON.object([("error", .string(line))]).text + "\n", headers: headers)
            r.status = status
            return r
        }
        return html(HTML.page(title: "Error", current: "/", body: "<h1>\(HTML.escape(status.reasonPhrase))</h1><p class=\"refusal\" role=\"alert\">\(HTML.escape(line))</p><p><a href=\"/\">Back to Tonight</a></p>", scripts: false), status: status, headers: headers)
    }

    static func redirect(_ location: String, cookies: [String] = []) -> Response {
        var fields = HTTPFields()
        fields[.location] = location
        for cookie in cookies { fields.append(HTTPField(name: .setCookie, value: cookie)) }
        securityHeaders(&fields)
        return Response(status: .seeOther, headers: fields)
    }

    func sessionCookie(_ value: String) -> String {
        "\(Self.sessionCookie)=\(value); Path=/; Max-Age=\(Int(WebTokens.sessionLifetime)); HttpOnly; SameSite=Strict"
    }

    // MARK: - Routing

    /// Who may do what on this request.
    enum Access: Equatable {
        /// A Unix-socket peer of our own uid: no pairing, no CSRF (no browser is involved).
        case local(uid: UInt32)
        case session(id: String)
        case none

        var csrfKey: String? {
            switch self {
            case .local(let uid): "unix:\(uid)"
            case .session(let id): id
            case .none: nil
            }
        }
    }

    func access(_ request: Request, peer: WebPeer) -> Access {
        if peer.isTrustedLocal(ownUID: ownUID) { return .local(uid: ownUID) }
        if let cookie = request.cookies[Self.sessionCookie]?.value, let id = tokens.session(String(cookie), now: clock.now()) {
            return .session(id: id)
        }
        return .none
    }

    /// The rate limit's key: the session (a paired browser), the uid (the Unix socket), or the address for
    /// requests that are neither ("anonymous").
    static func rateKey(_ access: Access, peer: WebPeer) -> String {
        switch access {
        case .session(let id): "session:\(id)"
        case .local: peer.clientKey
        case .none: "anonymous:\(peer.clientKey)"
        }
    }

    /// A queued request's wait for its turn, on the scheduling port. It ends (`.cancelled`) when the agent stops:
    /// the listener waits for every request it holds before it closes, and SIGTERM with 90 requests queued
    /// once took 91 s (#25). A stopping agent answers them 503 at once.
    static func waitTurn(until deadline: Date, clock: any Scheduling) async -> WakeReason {
        if Task.isShuttingDownGracefully { return .cancelled }
        let sleeper = Task { await clock.sleep(until: deadline) }
        return await withTaskCancellationHandler {
            await withGracefulShutdownHandler { await sleeper.value } onGracefulShutdown: { sleeper.cancel() }
        } onCancel: {
            sleeper.cancel()
        }
    }

    public func respond(to request: Request, peer: WebPeer) async -> Response {
        let path = request.uri.path
        let api = path.hasPrefix("/api/") || path == "/events"
        // 1. The rate limit: a paired browser's session has a budget of its own, apart from the anonymous traffic of
        // its address (every local user shares 127.0.0.1: their requests must never lock the owner out, #25).
        let key = Self.rateKey(access(request, peer: peer), peer: peer)
        let decision = limiter.withLock { $0.admit(key, at: clock.now()) }
        switch decision {
        case .serve: break
        case .wait(let until):
            if await Self.waitTurn(until: until, clock: clock) == .cancelled {
                return Self.error(.serviceUnavailable, "the dashboard is stopping", api: api)
            }
        case .refused(let until, let first):
            if first {
                logger.warning("web: refusing \(key) for 5 minutes: more than \(limiter.withLock { $0.refuseLimit }) requests in a minute")
            }
            let seconds = max(1, Int(until.timeIntervalSince(clock.now()).rounded(.up)))
            var headers = HTTPFields()
            headers[.retryAfter] = "\(seconds)"
            return Self.error(.tooManyRequests, "too many requests from this client (more than \(limiter.withLock { $0.refuseLimit }) in a minute): refused for \(seconds) s", api: api, headers: headers)
        }
        let choice = request.cookies[Self.themeCookie].map { String($0.value) }.flatMap { ["light", "dark"].contains($0) ? $0 : nil }
        // Only a page needs the scheme (the night is read from the settings): not the API, the stream or an asset.
        let theme = choice ?? (api || path.hasPrefix("/static/") ? nil : isNight() ? "dark" : nil)
        do {
            return try await HTML.$themeChoice.withValue(choice) {
                try await HTML.$theme.withValue(theme) { try await route(request, peer: peer, path: path, api: api) }
            }
        } catch let error as WebInputError {
            return Self.error(error.status, error.message, api: api)
        } catch let error as UseCaseError {
            return Self.error(error, api: api)
        } catch {
            logger.error("web: \(request.method) \(path) failed", metadata: ["error": "\(error)"])
            return Self.error(.internalServerError, "the request failed; nothing was recorded", api: api)
        }
    }

    private func route(_ request: Request, peer: WebPeer, path: String, api: Bool) async throws -> Response {
        let method = request.method
        // 2. Public: the assets, the API's description, pairing.
        switch (method, path) {
        case (.get, "/static/app.css"): return Self.staticAsset(StaticAssets.css, "text/css; charset=utf-8")
        case (.get, "/static/app.js"): return Self.staticAsset(StaticAssets.js, "text/javascript; charset=utf-8")
        case (.get, "/api/openapi.json"): return Self.response(.ok, "application/json", OpenAPIDocument.json)
        case (.get, "/theme"):
            // Only this browser's own cookie changes (like a language switch): no session or CSRF needed.
            let set = request.uri.queryParameters["set"].map(String.init) ?? "auto"
            guard ["auto", "light", "dark"].contains(set) else { throw WebInputError(.badRequest, "set must be auto, light or dark") }
            let back = request.uri.queryParameters["back"].map(String.init) ?? "/"
            let location = HTML.navigation.contains { $0.path == back } ? back : "/"
            let cookie = set == "auto" ? "\(Self.themeCookie)=; Path=/; Max-Age=0; SameSite=Strict"
                : "\(Self.themeCookie)=\(set); Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict"
            return Self.redirect(location, cookies: [cookie])
        case (.get, "/pair"):
            guard let code = request.uri.queryParameters["code"] else { return Self.html(PairingPage.render(error: nil)) }
            return pair(code: String(code))
        case (.post, "/pair"):
            try checkOrigin(request)
            let form = try await Self.form(request)
            return pair(code: form["code"] ?? "")
        default: break
        }
        // 3. Access.
        let access = access(request, peer: peer)
        guard access != .none else {
            if api { return Self.error(.unauthorized, "this browser is not paired: run dosetap web link on the DoseTap machine", api: true) }
            return Self.html(PairingPage.render(error: nil), status: .unauthorized)
        }
        // 4. CSRF on every state change.
        if method != .get && method != .head {
            try checkOrigin(request)
        }
        switch (method, path) {
        case (.get, "/"):
            var headers = HTTPFields()
            let flash = takeFlash(request, &headers)
            guard flash == nil else {
                return Self.html(TonightPage.render(status: try doses.status(), csrf: csrf(access), flash: flash), headers: headers)
            }
            let csrf = csrf(access)
            return Self.html(try views.view(.init(view: "/", session: csrf, variant: Self.themeVariant), now: clock.now()) {
                let status = try doses.status()
                return (TonightPage.render(status: status, csrf: csrf, flash: nil), Self.nextChange(status))
            }, headers: headers)
        case (.get, "/tonight/fragment"):
            return Self.html(TonightPage.fragment(status: try doses.status(), csrf: csrf(access)))
        case (.get, "/events"):
            let version = request.uri.queryParameters["version"].map(String.init)
            let page = request.uri.queryParameters["page"].map(String.init) ?? "tonight"
            guard page == "tonight" || liveFragment(page, csrf: "") != nil else {
                throw WebInputError(.notFound, "no live page '\(DisplayText.escaped(page, maxLength: 20))'")
            }
            return liveUpdates(csrf: csrf(access), version: version.flatMap { $0.count <= 32 ? $0 : nil }, page: page)
        case (.get, "/api/events"):
            return eventStream()
        case (.get, "/api/tonight"):
            return Self.response(.ok, "application/json", try views.view(.init(view: "/api/tonight", session: "", variant: ""), now: clock.now()) {
                let status = try doses.status()
                return (status.json(in: clock.timeZone).text + "\n", Self.nextChange(status))
            })
        case (.get, "/batteries"):
            guard let batteries else { return Self.error(.notFound, "no batteries here", api: false) }
            let now = clock.now()
            var headers = HTTPFields()
            let flash = takeFlash(request, &headers)
            let csrf = csrf(access)
            func render() -> String {
                var alerts = ""
                if let usageAlerts, let overview = try? usageAlerts.overview() {
                    alerts = AlertsSection.render(overview, history: (try? usageAlerts.history()) ?? [], now: now, timeZone: clock.timeZone, csrf: csrf)
                }
                return BatteriesPage.render(status: batteries.now(), samples: batteries.samples(now.addingTimeInterval(-24 * 3600)),
                                            others: batteries.others(), now: now, timeZone: clock.timeZone, alerts: alerts, flash: flash)
            }
            guard flash == nil else { return Self.html(render(), headers: headers) }
            // The battery is read outside the store: its readings come as events (a udev change, a poll while
            // discharging), and the page is drawn again at least every minute (the chart, time to empty).
            return Self.html(views.view(.init(view: "/batteries", session: csrf, variant: Self.themeVariant), now: now) {
                (render(), ViewCache.nextMinute(after: now))
            }, headers: headers)
        case (.get, "/api/batteries"):
            guard let batteries else { return Self.error(.notFound, "no batteries here", api: true) }
            guard let status = batteries.now() else { return Self.error(.serviceUnavailable, "the power supplies cannot be read", api: true) }
            return Self.json(status.json)
        case (.get, "/history"), (.get, "/history.csv"):
            let (key, range) = try HistoryPage.range(request.uri.queryParameters["range"])
            let export = try DoseHistory(store: DataStore(database: doses.repository.database), clock: clock).export(range)
            if path == "/history" {
                return Self.html(HistoryPage.render(csv: export.csv, unreadable: export.unreadable.count, selected: key))
            }
            var headers = HTTPFields()
            headers[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"dosetap-\(key).csv\""
            return Self.response(.ok, "text/csv; charset=utf-8", export.csv, headers: headers)
        case (.get, "/api/session"):
            return Self.json(.object([("csrfToken", .string(csrf(access)))]))
        case (.post, _) where path.hasPrefix("/tonight/"):
            let form = try await Self.form(request)
            try checkCSRF(request, form: form, access: access)
            let command = try Self.command(String(path.dropFirst("/tonight/".count)), late: form["late"] == "yes", reason: form["reason"],
                                           event: form["event"])
            let submission = try doses.submit(command, source: .web)
            let flash = Self.flash(submission)
            if request.headers[.accept]?.contains("application/json") == true {
                let fragment = TonightPage.fragment(status: submission.status, csrf: csrf(access))
                return Self.json(.object([
                    ("recorded", .bool(flash.recorded)),
                    ("announce", .string(TonightPage.renderFlash(flash))),
                    ("tonight", .string(fragment)),
                    ("version", .string(TonightPage.version(fragment))),
                ]))
            }
            return try redirect("/", flash: flash)
        case (.post, _) where path.hasPrefix("/api/dose/"):
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let late: Bool
            switch body["late"] {
            case nil: late = false
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
            let command = try Self.command(String(path.dropFirst("/api/dose/".count)), late: late, reason: reason, event: event)
            let submission = try doses.submit(command, source: .web)
            if case .refused = submission.outcome { return Self.json(submission.json(in: clock.timeZone), status: .conflict) }
            return Self.json(submission.json(in: clock.timeZone))
        default:
            if path == "/alarms" || path.hasPrefix("/alarms/") || path == "/api/alarms" || path.hasPrefix("/api/alarms/") {
                return try await alarmRoute(request, method: method, path: path, access: access, api: api)
            }
            if path.hasPrefix("/batteries/alerts/") || path == "/api/alerts" || path.hasPrefix("/api/alerts/") {
                return try await alertsRoute(request, method: method, path: path, access: access, api: api)
            }
            if path == "/sounds" || path.hasPrefix("/sounds/") || path.hasPrefix("/api/feedback") || path.hasPrefix("/api/sounds") {
                return try await soundsRoute(request, method: method, path: path, access: access, api: api)
            }
            if path == "/buttons" || path.hasPrefix("/buttons/") || path == "/api/buttons" || path.hasPrefix("/api/buttons/") {
                return try await buttonsRoute(request, method: method, path: path, access: access, api: api)
            }
            return Self.error(.notFound, "no such page: \(path)", api: api)
        }
    }

    static let themeCookie = "dosetap_theme"

    /// Between the configured bedtime and wake time (setup's answers), on this machine's clock: the pages are
    /// dark unless the person chose light. The two times are read again after every change of the store.
    func isNight() -> Bool {
        let generation = views.generation()?.store
        let hours: (bed: Int, wake: Int)
        if let generation, let kept = nightHours.withLock({ $0 }), kept.generation == generation {
            hours = (kept.bed, kept.wake)
        } else {
            let settings = (try? SettingsRepository(database: doses.repository.database).load()) ?? .defaults
            // Core's TimeOfDay reads the stored answers, as every other part does (an unreadable one: no night).
            func minutes(_ text: String) -> Int? { (try? TimeOfDay(parsing: text)).map { $0.hour * 60 + $0.minute } }
            hours = (minutes(settings.bedtime) ?? -1, minutes(settings.wakeTime) ?? -1)
            if let generation { nightHours.withLock { $0 = (generation, hours.bed, hours.wake) } }
        }
        let (bed, wake) = hours
        guard bed >= 0, wake >= 0, bed != wake else { return false }
        // The minute of the day on this machine's clock, from its offset (a Calendar per request is costly).
        let date = clock.now()
        let local = Int(date.timeIntervalSince1970.rounded(.down)) + clock.timeZone.secondsFromGMT(for: date)
        let day = 24 * 60
        let now = ((local / 60) % day + day) % day
        return bed > wake ? (now >= bed || now < wake) : (now >= bed && now < wake)
    }

    /// The theme of the page being answered, as a part of a cached view's key.
    static var themeVariant: String { "\(HTML.theme ?? "auto")/\(HTML.themeChoice ?? "auto")" }

    /// When tonight's text would next change: the next minute of the night (its minutes count from Dose 1's
    /// second) or of the wall clock (the night's date, bedtime), whichever comes first.
    static func nextChange(_ status: NightStatus) -> Date {
        ViewCache.nextMinute(after: status.now, anchoredAt: status.session?.dose1.at)
    }

    /// Flash cookie read once by the next page.
    func takeFlash(_ request: Request, _ headers: inout HTTPFields) -> Flash? {
        guard let raw = request.cookies[Self.flashCookie]?.value, let bytes = Base64URL.decode(raw) else { return nil }
        headers.append(HTTPField(name: .setCookie, value: "\(Self.flashCookie)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"))
        return try? JSONDecoder().decode(Flash.self, from: Data(bytes))
    }

    func redirect(_ location: String, flash: Flash) throws -> Response {
        let encoded = Base64URL.encode(Array(try JSONEncoder().encode(flash)))
        return Self.redirect(location, cookies: ["\(Self.flashCookie)=\(encoded); Path=/; Max-Age=60; HttpOnly; SameSite=Strict"])
    }

    /// The Alarms page and `/api/alarms`: the alarm use cases of the command line (`dosetap alarm …`).
    private func alarmRoute(_ request: Request, method: HTTPRequest.Method, path: String, access: Access, api: Bool) async throws -> Response {
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
            func render() throws -> String {
                let (views, unusable) = try alarms.list()
                let unusableLines = unusable.map { "Alarm \($0.id) cannot be read: \($0.reason)" }
                return AlarmsPage.render(alarms: views, unusable: unusableLines, warnings: warnings,
                                         timeZone: clock.timeZone, csrf: csrf, flash: flash, backups: backups(views, alarms), ringing: ringing)
            }
            guard flash == nil else { return Self.html(try render(), headers: headers) }
            // The wake and sound warnings (files) and the alarms ringing are read per request: part of the key. The next
            // occurrence and the battery forecast are drawn again at least every minute.
            let variant = Self.themeVariant + "|" + warnings.joined(separator: "\n") + "|" + ringing.sorted().map(String.init).joined(separator: ",")
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

    /// The live part of a page other than Tonight, as its page shows it now; nil for no such page.
    func liveFragment(_ page: String, csrf: String) -> String? {
        switch page {
        case "alarms":
            guard let alarms, let (views, unusable) = try? alarms.list() else { return nil }
            return AlarmsPage.fragment(alarms: views, unusable: unusable.map { "Alarm \($0.id) cannot be read: \($0.reason)" },
                                       warnings: alarmWarnings(), timeZone: clock.timeZone, csrf: csrf, backups: backups(views, alarms),
                                       ringing: ringingAlarms.withLock { $0 })
        case "batteries":
            guard let batteries else { return nil }
            let now = clock.now()
            return BatteriesPage.fragment(status: batteries.now(), samples: batteries.samples(now.addingTimeInterval(-24 * 3600)),
                                          others: batteries.others(), now: now, timeZone: clock.timeZone)
        case "buttons":
            guard let buttons, let (rows, _) = try? buttons.rows() else { return nil }
            return ButtonsPage.fragment(rows: rows, timeZone: clock.timeZone, csrf: csrf)
        default:
            return nil
        }
    }

    /// What the pages remember of the event stream: the last press of each button, the alarms ringing.
    func remember(_ event: AgentEvent) {
        switch event {
        case .buttonPressed(let address, let gesture): buttons?.recordPress(address: address, gesture: gesture, at: clock.now())
        case .alarmRinging(let ring, _): ringingAlarms.withLock { _ = $0.insert(ring.alarmID) }
        case .alarmEnded(let ring), .alarmMissed(let ring, _): ringingAlarms.withLock { _ = $0.remove(ring.alarmID) }
        default: break
        }
        // After what is remembered changed: a view drawn from now on shows it.
        views.eventSeen()
    }

    /// Remembers the event stream for the pages, from the agent's start to its stop.
    struct Recorder: Service {
        let dashboard: WebDashboard

        func run() async throws {
            for await event in dashboard.events.subscribe().cancelOnGracefulShutdown() { dashboard.remember(event) }
        }
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

    private static func staticAsset(_ text: String, _ type: String) -> Response {
        var headers = HTTPFields()
        headers[.cacheControl] = "max-age=3600"
        return response(.ok, type, text, headers: headers)
    }

    func csrf(_ access: Access) -> String { access.csrfKey.map(tokens.csrfToken(for:)) ?? "" }

    private func pair(code: String) -> Response {
        do {
            let session = try desk.redeem(code.trimmingCharacters(in: .whitespaces), now: clock.now())
            logger.notice("web: a browser was paired")
            return Self.redirect("/", cookies: [sessionCookie(session)])
        } catch {
            return Self.html(PairingPage.render(error: error.description), status: .forbidden)
        }
    }

    /// A request from another site's page (a browser says so in `Origin`) is refused, paired or not.
    private func checkOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin] else { return }
        // HTTP/1.1 keeps the Host header as a header (HTTP/2 would give :authority).
        let host = request.headers[HTTPField.Name("Host")!] ?? request.head.authority ?? ""
        guard origin == "http://\(host)" || origin == "https://\(host)" else {
            throw WebInputError(.forbidden, "cross-site request refused")
        }
    }

    func checkCSRF(_ request: Request, form: [String: String], access: Access) throws {
        if case .local = access { return }
        guard let key = access.csrfKey,
              tokens.csrfValid(request.headers[HTTPField.Name("X-CSRF-Token")!] ?? form["csrf"], for: key) else {
            throw WebInputError(.forbidden, "missing or wrong CSRF token: reload the page and try again")
        }
    }

    /// Undo and Snooze name the event they act on (`event`: `lastAction.id` and `reminderSetBy` of
    /// `GET /api/tonight`, hidden fields of the page's forms), so a second submit of the same click does nothing.
    static func command(_ name: String, late: Bool, reason: String?, event: String? = nil) throws -> DoseCommand {
        func named(_ what: String) throws -> UUID {
            guard let event, !event.isEmpty else {
                throw WebInputError(.badRequest, "\(what) names the event it acts on: send event (\(what == "undo" ? "lastAction.id" : "reminderSetBy") of GET /api/tonight)")
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

    static func body(_ request: Request) async throws -> ByteBuffer {
        var request = request
        do {
            return try await request.collectBody(upTo: maxBody)
        } catch {
            throw WebInputError(.contentTooLarge, "the request body is larger than \(maxBody / 1024) KiB")
        }
    }

    /// An `application/x-www-form-urlencoded` body.
    static func form(_ request: Request) async throws -> [String: String] {
        let buffer = try await body(request)
        return FormDecoding.fields(String(buffer: buffer))
    }

    /// A JSON object body (empty means `{}`).
    static func jsonBody(_ request: Request) async throws -> [String: Any] {
        let buffer = try await body(request)
        guard buffer.readableBytes > 0 else { return [:] }
        // Strict (#25): no trailing comma, `true` is not `1`.
        guard let object = try? StrictJSON.parse(Array(buffer.readableBytesView)), let fields = object as? [String: Any] else {
            throw WebInputError(.badRequest, "the body must be a JSON object such as {\"reason\": \"alert\"}")
        }
        return fields
    }
}

extension DoseSubmission {
    var status: NightStatus {
        switch outcome {
        case .recorded(_, _, let status), .refused(_, let status): status
        }
    }
}

/// Bad input, as a status and one line.
struct WebInputError: Error {
    var status: HTTPResponse.Status
    var message: String
    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }
}

enum FormDecoding {
    static func fields(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            if let value, out[name] == nil { out[name] = value }
        }
        return out
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

struct DashboardResponder: HTTPResponder {
    typealias Context = WebContext
    let dashboard: WebDashboard

    func respond(to request: Request, context: WebContext) async throws -> Response {
        let peer: WebPeer = if let channel = context.channel { await WebPeer.of(channel) } else { .tcp(address: "unknown") }
        return await dashboard.respond(to: request, peer: peer)
    }
}
