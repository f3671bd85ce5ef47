import DoseTapAgent
import DoseTapApp
import DoseTapCore
@testable import DoseTapWeb
import DoseTapTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// Issue #25, finding 10 (the dashboard's part): an alarm's label holding control characters was rewritten
/// into its escaped text by the page's Edit form; SIGTERM with requests queued by the rate limit took 91 s.
@Suite("The dashboard's wrong results (#25)", .serialized)
struct WrongResultsTests {
    /// Every field of the page's form posting to `action` as a browser sends it: inputs with their values
    /// (entities decoded), the selected option of each select.
    static func formFields(_ html: String, action: String) throws -> [(String, String)] {
        let start = try #require(html.range(of: "action=\"\(action)\""))
        let end = try #require(html.range(of: "</form>", range: start.upperBound..<html.endIndex))
        let form = String(html[start.upperBound..<end.lowerBound])
        func attribute(_ name: String, in tag: Substring) -> String? {
            guard let range = tag.range(of: " \(name)=\"") else { return nil }
            let rest = tag[range.upperBound...]
            guard let close = rest.firstIndex(of: "\"") else { return nil }
            return decode(rest[..<close])
        }
        var fields: [(String, String)] = []
        for tag in form.split(separator: "<").map({ "<" + $0 }) {
            let element = Substring(tag)
            if element.hasPrefix("<input"), let name = attribute("name", in: element) {
                fields.append((name, attribute("value", in: element) ?? ""))
            }
            if element.hasPrefix("<select"), let name = attribute("name", in: element),
               let selectEnd = form.range(of: "</select>", range: form.range(of: tag)!.upperBound..<form.endIndex) {
                let options = form[form.range(of: tag)!.upperBound..<selectEnd.lowerBound]
                for option in options.split(separator: "<") where option.contains(" selected") {
                    fields.append((name, attribute("value", in: "<" + option) ?? ""))
                }
            }
        }
        return fields
    }

    static func decode(_ text: Substring) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func encoded(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }

    @Test("editing an alarm's time on the page keeps a label with control characters exact; the page shows it escaped")
    func editKeepsLabelExact() async throws {
        let f = try WebFixture()
        let hostile = "Wake\u{1B}[31m red\u{07} & <b>"
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let body = try JSONSerialization.data(withJSONObject: ["time": "06:30", "label": hostile])
            let add = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(bytes: body))
            #expect(add.status == .ok, "\(add.text)")
            let page = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(page.text.contains(#"Wake\x1b[31m red\x07 &amp; &lt;b&gt;"#) && !page.text.contains("\u{1B}"))
            // The Edit form as the browser sends it, with only the time changed.
            var fields = try Self.formFields(page.text, action: "/alarms/1/edit")
            #expect(fields.first { $0.0 == "label" }?.1 == #"Wake\x1b[31m red\x07 & <b>"#)
            fields = fields.map { $0.0 == "time" ? ("time", "07:15") : $0 }
            var form = headers(cookie)
            form[.contentType] = "application/x-www-form-urlencoded"
            let saved = try await client.execute(uri: "/alarms/1/edit", method: .post, headers: form, body: ByteBuffer(string: Self.encoded(fields)))
            #expect(saved.status == .seeOther)
            let after = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            let alarm = try #require((after.json["alarms"] as? [[String: Any]])?.first)
            #expect(alarm["time"] as? String == "07:15")
            #expect(alarm["label"] as? String == hostile, "the label was rewritten: \(String(describing: alarm["label"]).debugDescription)")
            // A label typed anew in the same form is saved as typed.
            fields = fields.map { $0.0 == "label" ? ("label", "Gym") : $0 }
            _ = try await client.execute(uri: "/alarms/1/edit", method: .post, headers: form, body: ByteBuffer(string: Self.encoded(fields)))
            let renamed = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            #expect((renamed.json["alarms"] as? [[String: Any]])?.first?["label"] as? String == "Gym")
        }
    }

    @Test("stopping with requests queued by the rate limit: each is answered 503 at once and the listener ends")
    func stopWithQueuedRequests() async throws {
        // One request served at once; the next ones wait their turn on the fake clock, which never moves here:
        // without the fix they would wait for ever, as they waited 91 s of real time in the agent.
        let f = try WebFixture(rateLimit: RateLimiter(burst: 1, refuseAbove: 1000))
        let (ready, signal) = AsyncStream<Int>.makeStream()
        let services = try WebFace.services(dashboard: f.dashboard, listen: [WebListenAddress(host: "127.0.0.1", port: 0)],
                                            socketPath: nil, logger: Logger(label: "test"),
                                            limits: WebLimits(tcpConnections: 64, tcpPerClient: 64, unixConnections: 1, headerTimeout: 600),
                                            onListening: { address in signal.yield(Int(address.split(separator: ":").last!)!) })
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [], cancellationSignals: [], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        var port = 0
        for await p in ready { port = p; break }
        let request = "GET /static/app.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let first = try RawSocket(port: port, send: request)
        // Blocking reads on threads of their own: on the cooperative pool they stall the listener's handlers.
        #expect(await onOwnThread { first.readAll(timeout: 60) }.hasPrefix("HTTP/1.1 200"))
        let queued = try (0..<5).map { _ in try RawSocket(port: port, send: request) }
        await f.clock.waitForSleepers(5)
        await group.triggerGracefulShutdown()
        var answered = 0
        for connection in queued {
            let answer = await onOwnThread { connection.readAll(timeout: 60) }
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer.prefix(120))")
            if answer.hasPrefix("HTTP/1.1 503") { answered += 1 }
        }
        // Without the fix nothing would end the group: cancel it so the test fails instead of hanging.
        if answered < queued.count { running.cancel() }
        try await running.value
    }
}
