import DoseTapCore
@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Issue #25, finding 4: Take, Skip, then the Undo form submitted twice within 5 s undid both — Dose 1 gone;
/// a double Snooze counted twice. The forms name the event they act on; the same form sent again does nothing.
@Suite("Tonight: a form submitted twice acts once (#25)")
struct DoubleSubmitTests {
    /// The hidden fields of the page's form posting to `action`, as a browser sends them.
    static func formBody(_ html: String, action: String) throws -> String {
        let start = try #require(html.range(of: "action=\"\(action)\""))
        let end = try #require(html.range(of: "</form>", range: start.upperBound..<html.endIndex))
        let form = html[start.upperBound..<end.lowerBound]
        var fields: [String] = []
        var rest = form[...]
        while let input = rest.range(of: "<input type=\"hidden\" name=\"") {
            let afterName = rest[input.upperBound...]
            guard let nameEnd = afterName.firstIndex(of: "\""), let value = afterName.range(of: "value=\"") else { break }
            let name = afterName[..<nameEnd]
            let valueText = afterName[value.upperBound...]
            guard let valueEnd = valueText.firstIndex(of: "\"") else { break }
            fields.append("\(name)=\(valueText[..<valueEnd].addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
            rest = valueText[valueEnd...]
        }
        return fields.joined(separator: "&")
    }

    @Test("Take, Skip, Undo sent twice: the Skip is undone, Dose 1 stays; the second answer says it was already undone")
    func doubleUndo() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            _ = try await client.post("/tonight/take", "csrf=\(csrf)", cookie: cookie, then: "/")
            f.clock.advance(by: 1)
            _ = try await client.post("/tonight/skip", "csrf=\(csrf)", cookie: cookie, then: "/")
            f.clock.advance(by: 1)
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            let undo = try Self.formBody(page.text, action: "/tonight/undo")
            let (first, _) = try await client.post("/tonight/undo", undo, cookie: cookie, then: "/")
            #expect(first.status == .seeOther)
            f.clock.advance(by: 1)
            var json = headers(cookie)
            json[.accept] = "application/json"
            json[.contentType] = "application/x-www-form-urlencoded"
            let second = try await client.execute(uri: "/tonight/undo", method: .post, headers: json, body: ByteBuffer(string: undo))
            #expect(second.json["recorded"] as? Bool == false)
            #expect((second.json["announce"] as? String)?.contains("Skip was already undone") == true, "\(second.text)")
            let tonight = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(tonight.json["dose1At"] is String, "Dose 1 was undone: \(tonight.text)")
            #expect(tonight.json["phase"] as? String == "waiting")
        }
    }

    @Test("Snooze sent twice: one snooze; the API's Snooze and Undo must name their event")
    func doubleSnooze() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            _ = try await client.post("/tonight/take", "csrf=\(csrf)", cookie: cookie, then: "/")
            f.clock.advance(by: 600)
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            let snooze = try Self.formBody(page.text, action: "/tonight/snooze")
            _ = try await client.post("/tonight/snooze", snooze, cookie: cookie, then: "/")
            let (_, shown) = try await client.post("/tonight/snooze", snooze, cookie: cookie, then: "/")
            #expect(shown.text.contains("Already snoozed: the reminder is at"), "\(shown.text)")
            let tonight = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(tonight.json["snoozesUsed"] as? Int == 1)

            // The API: unnamed is a 400; named by GET /api/tonight's fields, once.
            let unnamed = try await client.execute(uri: "/api/dose/snooze", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(unnamed.status == .badRequest && (unnamed.json["error"] as? String)?.contains("reminderSetBy") == true)
            let setter = try #require(tonight.json["reminderSetBy"] as? String)
            let body = ByteBuffer(string: #"{"event": "\#(setter)"}"#)
            let named = try await client.execute(uri: "/api/dose/snooze", method: .post, headers: headers(cookie, csrf: csrf, json: true), body: body)
            #expect(named.status == .ok)
            let again = try await client.execute(uri: "/api/dose/snooze", method: .post, headers: headers(cookie, csrf: csrf, json: true), body: body)
            #expect(again.status == .conflict && (again.json["refusal"] as? [String: Any])?["code"] as? String == "already-snoozed")
            let last = try #require((try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))).json["lastAction"] as? [String: Any])
            let undoBody = ByteBuffer(string: #"{"event": "\#(last["id"] as? String ?? "")"}"#)
            let undone = try await client.execute(uri: "/api/dose/undo", method: .post, headers: headers(cookie, csrf: csrf, json: true), body: undoBody)
            #expect(undone.status == .ok && undone.json["message"] as? String == "Snooze undone")
            let twice = try await client.execute(uri: "/api/dose/undo", method: .post, headers: headers(cookie, csrf: csrf, json: true), body: undoBody)
            #expect(twice.status == .conflict && (twice.json["refusal"] as? [String: Any])?["code"] as? String == "already-undone")
            let after = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(after.json["snoozesUsed"] as? Int == 1 && after.json["dose1At"] is String)
        }
    }
}
