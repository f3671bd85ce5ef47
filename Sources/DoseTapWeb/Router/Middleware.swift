import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

// The dashboard's middleware, in the order `DashboardRouter` stacks it for every route (see there).

/// The security headers on every answer, errors and streams included: a content security policy, no
/// sniffing, no framing, the referrer kept to this origin, and nothing cached unless the route said so.
struct SecurityHeaders: RouterMiddleware {
    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        WebDashboard.securityHeaders(&response.headers)
        return response
    }
}

/// The one place an error becomes an answer: bad input with its status, a use case's "no" by its kind, an
/// unknown route as 404, anything else as a logged 500 that says nothing was recorded. JSON for the API, a
/// short page otherwise; one line, never a stack trace.
struct ErrorAnswers: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let api = WebDashboard.isAPI(path)
        do {
            return try await next(request, context)
        } catch let error as WebInputError {
            return WebDashboard.error(error.status, error.message, api: api, headers: error.headers)
        } catch let error as UseCaseError {
            return WebDashboard.error(error, api: api)
        } catch let error as HTTPError where error.status == .notFound {
            return WebDashboard.error(.notFound, "no such page: \(path)", api: api)
        } catch let error as HTTPError {
            return WebDashboard.error(error.status, error.body ?? error.status.reasonPhrase, api: api)
        } catch {
            logger.error("web: \(request.method) \(path) failed", metadata: ["error": "\(error)"])
            return WebDashboard.error(.internalServerError, "the request failed; nothing was recorded", api: api)
        }
    }
}

/// Who is calling (the socket's peer credentials or the TCP address) and what they may do (a trusted local
/// peer, a paired browser's session, or nothing), into the context for the middleware and routes after it.
struct ClientIdentity: RouterMiddleware {
    let dashboard: WebDashboard

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        var context = context
        context.peer = if let channel = context.channel { await WebPeer.of(channel) } else { .tcp(address: "unknown") }
        context.access = dashboard.access(request, peer: context.peer)
        return try await next(request, context)
    }
}

/// The rate limit: a paired browser's session has a budget of its own, apart from the anonymous traffic of
/// its address (every local user shares 127.0.0.1: their requests must never lock the owner out, #25). Over
/// the budget a request waits its turn; far over it, the client is refused for five minutes.
struct RateLimit: RouterMiddleware {
    let dashboard: WebDashboard

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        let clock = dashboard.clock
        let key = WebDashboard.rateKey(context.access, peer: context.peer)
        switch dashboard.limiter.withLock({ $0.admit(key, at: clock.now()) }) {
        case .serve: break
        case .wait(let until):
            if await WebDashboard.waitTurn(until: until, clock: clock) == .cancelled {
                throw WebInputError(.serviceUnavailable, "the dashboard is stopping")
            }
        case .refused(let until, let first):
            let limit = dashboard.limiter.withLock { $0.refuseLimit }
            if first { dashboard.logger.warning("web: refusing \(key) for 5 minutes: more than \(limit) requests in a minute") }
            let seconds = max(1, Int(until.timeIntervalSince(clock.now()).rounded(.up)))
            var headers = HTTPFields()
            headers[.retryAfter] = "\(seconds)"
            throw WebInputError(.tooManyRequests, "too many requests from this client (more than \(limit) in a minute): refused for \(seconds) s",
                                headers: headers)
        }
        return try await next(request, context)
    }
}

/// The pages' colour scheme for the rest of the request: the person's choice (a cookie), else dark between
/// bedtime and wake time. Only a page needs the night (read from the settings): not the API, a stream or an asset.
struct ThemeChoice: RouterMiddleware {
    let dashboard: WebDashboard

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let choice = request.cookies[WebDashboard.themeCookie].map { String($0.value) }.flatMap { ["light", "dark"].contains($0) ? $0 : nil }
        let theme = choice ?? (WebDashboard.isAPI(path) || path.hasPrefix("/static/") ? nil : dashboard.isNight() ? "dark" : nil)
        return try await HTML.$themeChoice.withValue(choice) {
            try await HTML.$theme.withValue(theme) { try await next(request, context) }
        }
    }
}

/// A state change from another site's page (a browser says so in `Origin`) is refused, paired or not.
struct OriginCheck: RouterMiddleware {
    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        if request.method != .get && request.method != .head, let origin = request.headers[.origin] {
            // HTTP/1.1 keeps the Host header as a header (HTTP/2 would give :authority).
            let host = request.headers[HTTPField.Name("Host")!] ?? request.head.authority ?? ""
            guard origin == "http://\(host)" || origin == "https://\(host)" else {
                throw WebInputError(.forbidden, "cross-site request refused")
            }
        }
        return try await next(request, context)
    }
}

/// Past the public routes, only a trusted local peer or a paired browser: the API says how to pair, a page
/// shows the pairing form.
struct PairingRequired: RouterMiddleware {
    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        guard context.access != .none else {
            if WebDashboard.isAPI(request.uri.path) {
                throw WebInputError(.unauthorized, "this browser is not paired: run dosetap web link on the DoseTap machine")
            }
            return WebDashboard.html(PairingPage.render(error: nil), status: .unauthorized)
        }
        return try await next(request, context)
    }
}

/// Every state change of a paired browser carries its session's CSRF token: in `X-CSRF-Token` (the API and
/// the pages' scripts) or as the form's `csrf` field (a plain form post; the form read here is handed on in
/// the context). A trusted local peer has no browser to be tricked: no token.
struct CSRFCheck: RouterMiddleware {
    let dashboard: WebDashboard

    func handle(_ request: Request, context: WebContext, next: (Request, WebContext) async throws -> Response) async throws -> Response {
        guard request.method != .get && request.method != .head else { return try await next(request, context) }
        if case .local = context.access { return try await next(request, context) }
        var request = request
        var context = context
        var token = request.headers[HTTPField.Name("X-CSRF-Token")!]
        if token == nil {
            let body = try await WebDashboard.body(request)
            let form = FormDecoding.fields(String(buffer: body))
            request.body = .init(buffer: body)
            context.form = form
            token = form["csrf"]
        }
        guard let key = context.access.csrfKey, dashboard.tokens.csrfValid(token, for: key) else {
            throw WebInputError(.forbidden, "missing or wrong CSRF token: reload the page and try again")
        }
        return try await next(request, context)
    }
}
