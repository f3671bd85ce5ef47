import DoseTapApp
import DoseTapCore
@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The dashboard on Hummingbird's router (#26 §3): one stack of middleware in one order for every route, an
/// unknown path included, and errors made answers in one place.
@Suite("Web router: one middleware stack for every route")
struct RouterMiddlewareTests {
    static let securityHeaders: [HTTPField.Name] = [.contentSecurityPolicy, .xContentTypeOptions, HTTPField.Name("X-Frame-Options")!,
                                                    HTTPField.Name("Referrer-Policy")!, .cacheControl]

    static func secured(_ response: TestResponse) -> Bool {
        securityHeaders.allSatisfy { response.headers[$0] != nil } && response.headers[.contentSecurityPolicy]!.contains("frame-ancestors 'none'")
    }

    @Test("every answer carries the security headers: a page, an asset, JSON, a redirect, a 401, a 403, a 404")
    func headersEverywhere() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let answers = [
                try await client.execute(uri: "/", method: .get, headers: headers(cookie)),
                try await client.execute(uri: "/static/app.css", method: .get),
                try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie)),
                try await client.execute(uri: "/theme?set=dark", method: .get),
                try await client.execute(uri: "/api/tonight", method: .get),
                try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie)),
                try await client.execute(uri: "/api/nothing-here", method: .get, headers: headers(cookie)),
            ]
            #expect(answers.map(\.status) == [.ok, .ok, .ok, .seeOther, .unauthorized, .forbidden, .notFound])
            for answer in answers { #expect(Self.secured(answer), "\(answer.status): \(answer.headers)") }
            // An asset may be cached (its own Cache-Control stays); a page may not.
            #expect(answers[1].headers[.cacheControl] == "max-age=3600" && answers[0].headers[.cacheControl] == "no-store")
        }
    }

    @Test("an unknown path passes the same stack: unpaired it is the pairing page (401), paired a 404 — JSON under /api/, a page elsewhere")
    func unknownPaths() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let anonymous = try await client.execute(uri: "/no/such/page", method: .get)
            #expect(anonymous.status == .unauthorized && anonymous.text.contains("Pair this browser"))
            let (cookie, csrf) = try await f.pair(client)
            let page = try await client.execute(uri: "/no/such/page", method: .get, headers: headers(cookie))
            #expect(page.status == .notFound && page.text.contains("no such page: /no/such/page") && page.text.contains("<html"))
            let api = try await client.execute(uri: "/api/no-such", method: .get, headers: headers(cookie))
            #expect(api.status == .notFound && api.json["error"] as? String == "no such page: /api/no-such")
            // A known path with a method it does not take is unknown too; a state change still needs its token first.
            let put = try await client.execute(uri: "/api/tonight", method: .put, headers: headers(cookie))
            #expect(put.status == .forbidden)
            let putWithToken = try await client.execute(uri: "/api/tonight", method: .put, headers: headers(cookie, csrf: csrf))
            #expect(putWithToken.status == .notFound)
            // A route parameter that names nothing is a 404 with the route's own words.
            let noAlarm = try await client.execute(uri: "/api/alarms/x1", method: .delete, headers: headers(cookie, csrf: csrf))
            #expect(noAlarm.status == .notFound && noAlarm.json["error"] as? String == "no alarm 'x1'")
        }
    }

    @Test("the order: the origin check before pairing, pairing before CSRF, CSRF before the body is read; the form read for its token reaches the route")
    func order() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            // Another site's form: refused for its origin, paired or not, before anything else is asked.
            let crossSite = try await client.execute(uri: "/tonight/take", method: .post,
                                                     headers: headers(nil, extra: [(.origin, "http://evil.example"), (HTTPField.Name("Host")!, "localhost:8765")]))
            #expect(crossSite.status == .forbidden && crossSite.text.contains("cross-site request refused"))
            // Unpaired, with a body that is not JSON: pairing is asked first (401), the body never read.
            let unpaired = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(nil, json: true), body: ByteBuffer(string: "{"))
            #expect(unpaired.status == .unauthorized)
            let (cookie, csrf) = try await f.pair(client)
            // Paired without a token, the same bad body: CSRF first (403), not the JSON's 400.
            let noToken = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, json: true), body: ByteBuffer(string: "{"))
            #expect(noToken.status == .forbidden)
            let badBody = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: "{"))
            #expect(badBody.status == .badRequest && (badBody.json["error"] as? String)?.contains("JSON object") == true)
            // A plain form with its token in a field: the check reads the body and the route still gets every field.
            var form = headers(cookie)
            form[.contentType] = "application/x-www-form-urlencoded"
            let added = try await client.execute(uri: "/alarms/add", method: .post, headers: form,
                                                 body: ByteBuffer(string: "csrf=\(csrf)&time=06%3A45&label=Early&repeat=mon%2Cwed"))
            #expect(added.status == .seeOther)
            let list = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            let alarms = try #require(list.json["alarms"] as? [[String: Any]])
            #expect(alarms.count == 1 && alarms.first?["time"] as? String == "06:45" && alarms.first?["label"] as? String == "Early"
                    && alarms.first?["repeat"] as? String == "mon,wed", "\(list.text)")
        }
    }

    @Test("a use case's refusal is answered by its kind in one place: refused 409, invalid 400, not found 404 — the same words as the command line")
    func useCaseErrors() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let invalid = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"time": "25:99"}"#))
            #expect(invalid.status == .badRequest)
            let missing = try await client.execute(uri: "/api/alarms/77", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"label": "x"}"#))
            #expect(missing.status == .notFound && (missing.json["error"] as? String)?.contains("77") == true)
            _ = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf))
            let early = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(early.status == .conflict)
        }
    }
}
