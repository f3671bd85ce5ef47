import DoseTapCore
@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The API's document against what the routes do (#51: "the spec matches behaviour"). scripts/api-schema-tests.sh
/// runs Schemathesis against the real agent; these are its findings, fixed, kept as tests of their own.
@Suite("Web: the API matches its OpenAPI document")
struct APIContractTests {
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
    }

    @Test("the document: every route needs the session (401) and is rate limited (429 with Retry-After); every state change needs the CSRF token and our origin (403) and may be too large (413); every $ref resolves")
    func everyRouteSaysItsRefusals() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations = 0
        for (path, item) in paths {
            for (method, value) in item where ["get", "post", "patch", "delete"].contains(method) {
                let operation = try #require(value as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                let name = "\(method.uppercased()) \(path)"
                operations += 1
                #expect(responses["401"] != nil, "\(name) documents no 401")
                #expect((responses["429"] as? [String: String])?["$ref"] == "#/components/responses/Limited", "\(name) documents no 429")
                if method != "get" {
                    #expect(responses["403"] != nil, "\(name) documents no 403")
                    #expect(responses["413"] != nil, "\(name) documents no 413")
                    let security = operation["security"] as? [[String: [String]]]
                    #expect(security?.first?.keys.sorted() == ["csrf", "session"], "\(name) does not ask for the CSRF token")
                }
            }
        }
        #expect(operations == 36)
        let limited = ((document["components"] as? [String: Any])?["responses"] as? [String: Any])?["Limited"] as? [String: Any]
        #expect(((limited?["headers"] as? [String: Any])?["Retry-After"] as? [String: Any])?["required"] as? Bool == true)
        // Every reference names something in the document.
        func references(_ value: Any) -> [String] {
            if let object = value as? [String: Any] {
                return object.flatMap { key, inner in key == "$ref" ? [inner as? String ?? ""] : references(inner) }
            }
            if let array = value as? [Any] { return array.flatMap(references) }
            return []
        }
        for reference in Set(references(document)) {
            let parts = reference.dropFirst(2).split(separator: "/").map(String.init)
            var node: Any? = document
            for part in parts { node = (node as? [String: Any])?[part] }
            #expect(reference.hasPrefix("#/") && node != nil, "\(reference) resolves to nothing")
        }
    }

    /// A 400 with `{"error": line}` and nothing else, the line naming what was wrong.
    func refused(_ response: TestResponse, _ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == .badRequest, "\(response.status): \(response.text)", sourceLocation: sourceLocation)
        let line = response.json["error"] as? String ?? ""
        #expect(response.json.keys.sorted() == ["error"] && !line.contains("\n") && line.contains(words), "\(response.text)",
                sourceLocation: sourceLocation)
    }

    @Test("#51: bodies that break the document are refused in one line and change nothing; null is the same as leaving a field out")
    func bodiesOutsideTheDocument() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            func send(_ method: HTTPRequest.Method, _ uri: String, _ body: String?) async throws -> TestResponse {
                try await client.execute(uri: uri, method: method, headers: headers(cookie, csrf: csrf, json: body != nil),
                                         body: body.map { ByteBuffer(string: $0) })
            }
            let added = try await send(.post, "/api/alarms", #"{"time": "06:30"}"#)
            #expect(added.status == .ok && added.json["id"] as? Int == 1, "\(added.text)")

            // A PATCH that changes nothing (no body, {}, only nulls) was a 200: refused as `dosetap alarm edit` refuses it.
            for body in [nil, "{}", #"{"time": null, "enabled": null}"#] {
                refused(try await send(.patch, "/api/alarms/1", body), "nothing to change: give time, label, repeat or enabled")
            }
            let edited = try await send(.patch, "/api/alarms/1", #"{"label": "Work", "time": null}"#)
            #expect(edited.status == .ok && edited.json["label"] as? String == "Work" && edited.json["time"] as? String == "06:30")

            // The backups: `to` from 1 and a target of at most 300 characters, whatever the action (both passed unread with on).
            refused(try await send(.post, "/api/alarms/1/backups", #"{"action": "on", "to": 0}"#), "to must be a position from 1")
            let long = String(repeating: "0", count: 301)
            refused(try await send(.post, "/api/alarms/1/backups", #"{"action": "on", "target": "\#(long)"}"#), "the target is too long")
            let backups = try await client.execute(uri: "/api/alarms/1/backups", method: .get, headers: headers(cookie))
            #expect(backups.status == .ok && backups.json["enabled"] as? Bool == false, "\(backups.text)")

            // reset is true or false ("yes" was read as false).
            refused(try await send(.post, "/api/alerts/source", #"{"name": "BAT0", "reset": "yes"}"#), "reset must be true or false")

            // seconds is a whole number ("5" was read as 5, null was refused).
            refused(try await send(.post, "/api/buttons/scan", #"{"seconds": "5"}"#), "seconds must be from 1 to 30")
            refused(try await send(.post, "/api/buttons/scan", #"{"seconds": 5.5}"#), "seconds must be from 1 to 30")
            #expect(try await send(.post, "/api/buttons/scan", #"{"seconds": null}"#).status == .ok)
            #expect(try await send(.post, "/api/buttons/scan", #"{"seconds": 2}"#).status == .ok)
            // A whole number written with a fraction is the same number in JSON (and JSON Schema's integer): it was a 400.
            #expect(try await send(.post, "/api/buttons/scan", #"{"seconds": 26.0}"#).status == .ok)
            refused(try await send(.post, "/api/alerts/thresholds", #"{"warning": 80.5}"#), "warning must be a whole number of percent used")
            let thresholds = try await send(.post, "/api/alerts/thresholds", #"{"warning": 8.0e1}"#)
            #expect(thresholds.status == .ok && thresholds.json["warning"] as? Int == 80, "\(thresholds.text)")

            // Sound and vibration: true or false, not the forms' words; a name is not empty (both were taken as "unchanged").
            refused(try await send(.post, "/api/feedback", #"{"haptics": "on"}"#), "haptics must be true or false")
            refused(try await send(.post, "/api/feedback", #"{"quiet": true, "sound": ""}"#), "sound is empty")
            refused(try await send(.post, "/api/feedback", #"{"quiet": true, "intensity": ""}"#), "intensity is empty")
            refused(try await send(.patch, "/api/feedback/events/alarm", #"{"chime": "off"}"#), "chime must be true or false")
            let feedback = try f.settings.feedback()
            #expect(!feedback.quietMode && feedback.settings.global == GlobalFeedback(), "nothing was changed by a refused body")
            #expect(try await send(.patch, "/api/feedback/events/alarm", #"{"haptics": "default", "intensity": null}"#).status == .ok)
            #expect(try await send(.post, "/api/feedback", #"{"haptics": false, "sound": null}"#).status == .ok)

            // late: null is no late confirmation, as leaving it out (it was a 400 while every other field took null).
            let take = try await send(.post, "/api/dose/take", #"{"late": null}"#)
            #expect(take.status == .ok && take.json["recorded"] as? Bool == true, "\(take.text)")
        }
    }
}
