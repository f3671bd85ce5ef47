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

/// How the dashboard answers: pages, JSON, one-line errors (a use case's "no" mapped to a status by its kind),
/// redirects with a flash; the security headers that `SecurityHeaders` puts on every response.
extension WebDashboard {
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
        return Response(status: .seeOther, headers: fields)
    }

    func sessionCookie(_ value: String) -> String {
        "\(Self.sessionCookie)=\(value); Path=/; Max-Age=\(Int(WebTokens.sessionLifetime)); HttpOnly; SameSite=Strict"
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

    /// A form's change, then back to `location` with its outcome in the flash: a use case's "no" is the page's
    /// message (`note`: a second line, such as "Timer is running").
    func formOutcome(back location: String, _ body: () throws -> (message: String, note: String?)) throws -> Response {
        do {
            let (message, note) = try body()
            return try redirect(location, flash: Flash(recorded: true, message: message, verb: "saved", note: note))
        } catch let error as UseCaseError {
            return try redirect(location, flash: Flash(recorded: false, message: error.description, verb: "saved"))
        }
    }

    func formOutcome(back location: String, _ body: () throws -> String) throws -> Response {
        try formOutcome(back: location) { (message: try body(), note: nil) }
    }

    static func staticAsset(_ text: String, _ type: String) -> Response {
        var headers = HTTPFields()
        headers[.cacheControl] = "max-age=3600"
        return response(.ok, type, text, headers: headers)
    }
}
