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
    /// The household's alarms ringing here as backups (#12), by ring: the line the Alarms page shows.
    let ringingBackups = Mutex<[Int64: String]>([:])
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
            let export = try doses.history.export(range)
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
}

struct DashboardResponder: HTTPResponder {
    typealias Context = WebContext
    let dashboard: WebDashboard

    func respond(to request: Request, context: WebContext) async throws -> Response {
        let peer: WebPeer = if let channel = context.channel { await WebPeer.of(channel) } else { .tcp(address: "unknown") }
        return await dashboard.respond(to: request, peer: peer)
    }
}
