import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// A player that plays until stopped or cancelled (a long sound), recording what it played.
final class HoldingPlayer: SoundPlayer {
    private let state = Mutex<(played: [String], stops: Int)>(([], 0))
    func play(_ sound: SoundInfo) async throws {
        state.withLock { $0.played.append(sound.name) }
        try await Task.sleep(for: .seconds(60))
    }
    func stop() { state.withLock { $0.stops += 1 } }
    var played: [String] { state.withLock { $0.played } }
    var stops: Int { state.withLock { $0.stops } }
}

func formHeaders(_ cookie: String) -> HTTPFields {
    var h = headers(cookie)
    h[.contentType] = "application/x-www-form-urlencoded"
    return h
}

extension TestClientProtocol {
    /// A form post, then the page it redirects to with its flash cookie.
    func post(_ uri: String, _ body: String, cookie: String, then page: String) async throws -> (TestResponse, TestResponse) {
        let posted = try await execute(uri: uri, method: .post, headers: formHeaders(cookie), body: ByteBuffer(string: body))
        var cookies = cookie
        if let flash = posted.headers[.setCookie] { cookies += "; " + String(flash.split(separator: ";")[0]) }
        let shown = try await execute(uri: page, method: .get, headers: headers(cookies))
        return (posted, shown)
    }
}

@Suite("Web: the Sounds & vibration page")
struct SoundsPageTests {
    @Test("the page: global settings, each event with Use global default, the preview; no session → pairing; no motor → Not supported")
    func page() async throws {
        let f = try WebFixture(motor: false)
        try await f.application.test(.router) { client in
            let unpaired = try await client.execute(uri: "/sounds", method: .get)
            #expect(unpaired.status == .unauthorized && unpaired.text.contains("Pair this browser"))
            let api = try await client.execute(uri: "/api/feedback", method: .get)
            #expect(api.status == .unauthorized)
            let (cookie, csrf) = try await f.pair(client)
            let page = try await client.execute(uri: "/sounds", method: .get, headers: headers(cookie))
            #expect(page.status == .ok)
            let text = page.text
            #expect(text.contains("<h1>Sounds &amp; vibration</h1>") && text.contains(csrf))
            #expect(text.contains("Use global default") && text.contains("Built-in beep") && text.contains("bell (freedesktop)"))
            #expect(text.contains("Not supported on this device (no vibration motor found)."))
            #expect(text.contains("aria-describedby=\"haptics-unsupported\""))
            for event in FeedbackEvent.allCases { #expect(text.contains("action=\"/sounds/events/\(event.rawValue)\"")) }
            #expect(text.contains("<label for=\"event-alarm-sound\">Sound</label>"))
            let json = try await client.execute(uri: "/api/feedback", method: .get, headers: headers(cookie))
            let global = ((json.json["feedback"] as? [String: Any])?["global"] as? [String: Any])
            #expect(global?["hapticsSupported"] as? Bool == false)
            #expect((json.json["plans"] as? [Any])?.count == FeedbackEvent.allCases.count)
        }
    }

    @Test("global change: CSRF needed; sound off and vibration off → every event warns No notification will occur; quiet mode")
    func global() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let refused = try await client.execute(uri: "/sounds/global", method: .post, headers: formHeaders(cookie),
                                                   body: ByteBuffer(string: "sound=none&haptics=off"))
            #expect(refused.status == .forbidden && refused.text.contains("CSRF"))
            #expect(try f.settings.feedback().settings == FeedbackSettings())
            let (saved, page) = try await client.post("/sounds/global", "csrf=\(csrf)&sound=none&haptics=off&intensity=strong&quiet=on",
                                                      cookie: cookie, then: "/sounds")
            #expect(saved.status == .seeOther && saved.headers[.location] == "/sounds")
            #expect(page.text.contains("<strong>Saved:</strong> sound and vibration for every event"))
            #expect(page.text.contains(FeedbackPlan.noNotificationWarning))
            let feedback = try f.settings.feedback()
            #expect(feedback.settings.global == GlobalFeedback(hapticsEnabled: false, intensity: .strong, sound: .off) && feedback.quietMode)
            // An event with its own sound: no warning for it any more.
            _ = try await client.post("/sounds/events/dose-reminder", "csrf=\(csrf)&sound=bell", cookie: cookie, then: "/sounds")
            #expect(try f.settings.resolve(.doseReminder).warnings.isEmpty == false) // quiet mode mutes the reminder's sound
            _ = try await client.post("/sounds/global", "csrf=\(csrf)&quiet=off", cookie: cookie, then: "/sounds")
            #expect(try f.settings.resolve(.doseReminder).sound?.name == "bell")
            #expect(try f.settings.resolve(.doseReminder).warnings.isEmpty)
            // Bad input: one line, 4xx, nothing stored.
            let bad = try await client.execute(uri: "/sounds/global", method: .post, headers: formHeaders(cookie),
                                               body: ByteBuffer(string: "csrf=\(csrf)&haptics=maybe"))
            #expect(bad.status == .badRequest && bad.text.contains("haptics must be on or off"))
            let empty = try await client.execute(uri: "/sounds/global", method: .post, headers: formHeaders(cookie),
                                                 body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(empty.status == .badRequest && empty.text.contains("nothing to change"))
            let (_, unknown) = try await client.post("/sounds/global", "csrf=\(csrf)&sound=gong", cookie: cookie, then: "/sounds")
            #expect(unknown.text.contains("<strong>Not saved:</strong> unknown sound &#39;gong&#39;: see dosetap sounds list"))
        }
    }

    @Test("an event's overrides and Use global default; Timer is running when tonight's reminder is already scheduled")
    func eventOverrides() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let (_, before) = try await client.post("/sounds/events/dose-reminder", "csrf=\(csrf)&chime=on&sound=bell&haptics=off&intensity=light",
                                                    cookie: cookie, then: "/sounds")
            #expect(before.text.contains("<strong>Saved:</strong> Dose 2 reminder: sound and vibration"))
            #expect(!before.text.contains("Timer is running"))
            #expect(try f.settings.feedback().settings.event(.doseReminder) == EventFeedback(chime: true, sound: "bell", haptics: false, intensity: .light))
            _ = try f.doses.submit(.take(confirmLate: false), source: .cli)
            let (_, after) = try await client.post("/sounds/events/dose-reminder", "csrf=\(csrf)&sound=default&haptics=default&intensity=default",
                                                   cookie: cookie, then: "/sounds")
            #expect(after.text.contains("<strong>Note:</strong> Timer is running, changes will apply next time"))
            #expect(try f.settings.feedback().settings.event(.doseReminder) == EventFeedback())
            // The API says the same.
            let api = try await client.execute(uri: "/api/feedback/events/dose-reminder", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"chime": false}"#))
            #expect(api.status == .ok && api.json["timerRunning"] as? Bool == true && api.json["message"] as? String == WebDashboard.timerRunning)
            #expect((api.json["plan"] as? [String: Any])?["chime"] as? Bool == false)
            let badHaptics = try await client.execute(uri: "/api/feedback/events/dose-reminder", method: .patch,
                                                      headers: headers(cookie, csrf: csrf, json: true), body: ByteBuffer(string: #"{"haptics": "sideways"}"#))
            #expect(badHaptics.status == .badRequest && (badHaptics.json["error"] as? String)?.contains(#"haptics must be true, false or "default""#) == true)
            let badType = try await client.execute(uri: "/api/feedback/events/dose-reminder", method: .patch,
                                                   headers: headers(cookie, csrf: csrf, json: true), body: ByteBuffer(string: #"{"sound": 3}"#))
            #expect(badType.status == .badRequest)
            let unknownEvent = try await client.execute(uri: "/sounds/events/lunch", method: .post, headers: formHeaders(cookie),
                                                        body: ByteBuffer(string: "csrf=\(csrf)&chime=on"))
            #expect(unknownEvent.status == .notFound && unknownEvent.text.contains("unknown event"))
            let noCSRF = try await client.execute(uri: "/api/feedback", method: .post, headers: headers(cookie, json: true),
                                                  body: ByteBuffer(string: #"{"sound": "bell"}"#))
            #expect(noCSRF.status == .forbidden)
            let unknownSound = try await client.execute(uri: "/api/feedback", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                        body: ByteBuffer(string: #"{"sound": "gong"}"#))
            #expect(unknownSound.status == .badRequest && unknownSound.json["error"] as? String == "unknown sound 'gong': see dosetap sounds list")
            let global = try await client.execute(uri: "/api/feedback", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                  body: ByteBuffer(string: #"{"sound": "bell", "haptics": false}"#))
            #expect(global.status == .ok && (global.json["global"] as? [String: Any])?["sound"] as? String == "bell")
        }
    }

    @Test("preview plays a sound until Stop; an unknown sound is refused; the API's preview and stop")
    func preview() async throws {
        let player = HoldingPlayer()
        let f = try WebFixture(player: player)
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let (_, playing) = try await client.post("/sounds/preview", "csrf=\(csrf)&sound=bell", cookie: cookie, then: "/sounds")
            #expect(playing.text.contains("<strong>Saved:</strong> playing bell") && playing.text.contains("Playing: bell"))
            while player.played.isEmpty { await Task.yield() }
            #expect(player.played == ["bell"] && f.preview.playing == "bell")
            let (_, stopped) = try await client.post("/sounds/stop", "csrf=\(csrf)", cookie: cookie, then: "/sounds")
            #expect(stopped.text.contains("stopped bell") && stopped.text.contains("Nothing playing."))
            #expect(player.stops == 1 && f.preview.playing == nil)
            let (_, unknown) = try await client.post("/sounds/preview", "csrf=\(csrf)&sound=gong", cookie: cookie, then: "/sounds")
            #expect(unknown.text.contains("Not saved:</strong> unknown sound &#39;gong&#39;"))
            let missing = try await client.execute(uri: "/sounds/preview", method: .post, headers: formHeaders(cookie), body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(missing.status == .badRequest && missing.text.contains("sound is missing"))
            let api = try await client.execute(uri: "/api/sounds/preview", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"sound": "bell"}"#))
            #expect(api.status == .ok && api.json["playing"] as? String == "bell")
            let list = try await client.execute(uri: "/api/sounds", method: .get, headers: headers(cookie))
            #expect((list.json["sounds"] as? [[String: Any]])?.compactMap { $0["name"] as? String }.contains("bell") == true)
            let stop = try await client.execute(uri: "/api/sounds/stop", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(stop.status == .ok && stop.json["stopped"] as? String == "bell")
            let noCSRF = try await client.execute(uri: "/api/sounds/stop", method: .post, headers: headers(cookie))
            #expect(noCSRF.status == .forbidden)
        }
    }
}

@Suite("Web: the Buttons page")
struct ButtonsPageTests {
    static let evil = ButtonUseCases.Candidate(kind: .bthome, address: "3C:2E:F5:00:11:22", name: "Evil\u{1b}[2J<img src=x onerror=alert(1)>",
                                                rssi: -60, connected: false)

    @Test("added buttons with kind, battery, last press and gestures; radio names escaped; add from a scan, map, remove")
    func page() async throws {
        let f = try WebFixture(found: [Self.evil])
        try await f.application.test(.router) { client in
            let unpaired = try await client.execute(uri: "/buttons", method: .get)
            #expect(unpaired.status == .unauthorized)
            let (cookie, csrf) = try await f.pair(client)
            let empty = try await client.execute(uri: "/buttons", method: .get, headers: headers(cookie))
            #expect(empty.status == .ok && empty.text.contains("No buttons yet"))
            // The scan: the radio's name escaped, control characters visible.
            let scan = try await client.execute(uri: "/buttons/scan", method: .post, headers: formHeaders(cookie),
                                                body: ByteBuffer(string: "csrf=\(csrf)&seconds=2"))
            #expect(scan.status == .ok)
            #expect(scan.text.contains("Found in 2 s") && scan.text.contains("Evil\\x1b[2J&lt;img src=x onerror=alert(1)&gt;"))
            #expect(!scan.text.contains("\u{1b}") && !scan.text.contains("<img"))
            let badSeconds = try await client.execute(uri: "/buttons/scan", method: .post, headers: formHeaders(cookie),
                                                      body: ByteBuffer(string: "csrf=\(csrf)&seconds=600"))
            #expect(badSeconds.status == .badRequest && badSeconds.text.contains("seconds must be from 1 to 30"))
            let (added, listed) = try await client.post("/buttons/add", "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22&kind=bthome&name=Bedside",
                                                        cookie: cookie, then: "/buttons")
            #expect(added.status == .seeOther)
            #expect(listed.text.contains("<strong>Saved:</strong> added Bedside (3C:2E:F5:00:11:22, bthome)"))
            #expect(listed.text.contains("<dt>Kind</dt><dd>bthome</dd>") && listed.text.contains("<dt>Battery</dt><dd>41 % (14:13)</dd>"))
            #expect(listed.text.contains("none since the agent started") && listed.text.contains("single → take, double → snooze, hold → undo"))
            // A press seen on the event stream.
            let recorder = Task { try await WebDashboard.Recorder(dashboard: f.dashboard).run() }
            while f.events.subscriberCount == 0 { await Task.yield() }
            f.events.publish(.buttonPressed(address: "3C:2E:F5:00:11:22", gesture: "double"))
            while f.buttons.lastPress("3C:2E:F5:00:11:22") == nil { await Task.yield() }
            recorder.cancel()
            let pressed = try await client.execute(uri: "/buttons", method: .get, headers: headers(cookie))
            #expect(pressed.text.contains("<dd class=\"last-press\">double at 14:13</dd>"))
            let (_, mapped) = try await client.post("/buttons/map", "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22&single=snooze&double-press=off",
                                                    cookie: cookie, then: "/buttons")
            #expect(mapped.text.contains("Bedside: single → snooze, double → off, hold → undo"))
            let badAction = try await client.execute(uri: "/buttons/map", method: .post, headers: formHeaders(cookie),
                                                     body: ByteBuffer(string: "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22&single=dance"))
            #expect(badAction.status == .badRequest && badAction.text.contains("single must be take, snooze, undo, skip or none"))
            let badKind = try await client.execute(uri: "/buttons/add", method: .post, headers: formHeaders(cookie),
                                                   body: ByteBuffer(string: "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22&kind=laser"))
            #expect(badKind.status == .badRequest)
            let (_, badAddress) = try await client.post("/buttons/add", "csrf=\(csrf)&address=nowhere&kind=itag", cookie: cookie, then: "/buttons")
            #expect(badAddress.text.contains("<strong>Not saved:</strong> invalid address"))
            let unconfirmed = try await client.execute(uri: "/buttons/remove", method: .post, headers: formHeaders(cookie),
                                                       body: ByteBuffer(string: "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22"))
            #expect(unconfirmed.status == .badRequest)
            let noCSRF = try await client.execute(uri: "/buttons/remove", method: .post, headers: formHeaders(cookie),
                                                  body: ByteBuffer(string: "address=3C%3A2E%3AF5%3A00%3A11%3A22&confirm=yes"))
            #expect(noCSRF.status == .forbidden)
            let (_, removed) = try await client.post("/buttons/remove", "csrf=\(csrf)&address=3C%3A2E%3AF5%3A00%3A11%3A22&confirm=yes",
                                                     cookie: cookie, then: "/buttons")
            #expect(removed.text.contains("removed 3C:2E:F5:00:11:22") && removed.text.contains("No buttons yet"))
        }
    }

    static let flicPairing = "78563412000102030405060708090a0b0c0d0e0f"

    @Test("a Flic 2 is paired from the page and the API; its pairing is never shown; a refused pairing is one line; no Bluetooth, no pairing")
    func flic2() async throws {
        let asked = LockedBox<[String]>([])
        let f = try WebFixture(found: [ButtonUseCases.Candidate(kind: .flic2, address: "80:E4:DA:70:12:34", name: "F2", rssi: -50, connected: false)],
                               pairFlic2: { address, seconds in
                                   asked.mutate { $0.append("\(address) \(seconds)") }
                                   if address.hasSuffix("99") {
                                       throw UseCaseError("pairing failed: the button is not in pairing mode (a Flic 2 paired with a phone or hub refuses others until then): hold it for 7 seconds until it flashes, then try again")
                                   }
                                   return WebButtons.Flic2Paired(pairing: Self.flicPairing, ownName: "F2 nightstand",
                                                                 summary: "Verified a genuine Flic 2 (serial BG00-T00001, battery 3.00 V, 100 %)")
                               })
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let scan = try await client.execute(uri: "/buttons/scan", method: .post, headers: formHeaders(cookie),
                                                body: ByteBuffer(string: "csrf=\(csrf)&seconds=2"))
            #expect(scan.text.contains("Hold the Flic 2 for 7 seconds until it flashes, then pair") && scan.text.contains("Pair F2</button>"))
            let (_, listed) = try await client.post("/buttons/add", "csrf=\(csrf)&address=80%3AE4%3ADA%3A70%3A12%3A34&kind=flic2",
                                                    cookie: cookie, then: "/buttons")
            #expect(listed.text.contains("<strong>Saved:</strong> Verified a genuine Flic 2 (serial BG00-T00001, battery 3.00 V, 100 %). added F2 nightstand (80:E4:DA:70:12:34, flic2)"),
                    "\(listed.text)")
            #expect(!listed.text.contains(Self.flicPairing))
            let (_, refused) = try await client.post("/buttons/add", "csrf=\(csrf)&address=80%3AE4%3ADA%3A70%3A12%3A99&kind=flic2&name=Other",
                                                     cookie: cookie, then: "/buttons")
            #expect(refused.text.contains("<strong>Not saved:</strong> pairing failed: the button is not in pairing mode (a Flic 2 paired with a phone or hub refuses others until then): hold it for 7 seconds"), "\(refused.text)")
            let withKey = try await client.execute(uri: "/api/buttons", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"address": "80:e4:da:70:12:35", "kind": "flic2", "bindkey": "00112233445566778899aabbccddeeff"}"#))
            #expect(withKey.status == .badRequest && withKey.text.contains("a Flic 2 has no bindkey"))
            let api = try await client.execute(uri: "/api/buttons", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"address": "80:e4:da:70:12:36", "kind": "flic2", "name": "Hall"}"#))
            #expect(api.status == .ok && (api.json["paired"] as? String)?.hasPrefix("Verified a genuine Flic 2") == true)
            let list = try await client.execute(uri: "/api/buttons", method: .get, headers: headers(cookie))
            #expect(!list.text.contains(Self.flicPairing) && list.text.contains("\"flic2\""))
        }
        #expect(asked.value == ["80:E4:DA:70:12:34 45", "80:E4:DA:70:12:99 45", "80:e4:da:70:12:36 45"])
        let none = try WebFixture()
        try await none.application.test(.router) { client in
            let (cookie, csrf) = try await none.pair(client)
            let (_, listed) = try await client.post("/buttons/add", "csrf=\(csrf)&address=80%3AE4%3ADA%3A70%3A12%3A34&kind=flic2",
                                                    cookie: cookie, then: "/buttons")
            #expect(listed.text.contains("<strong>Not saved:</strong> pairing a Flic 2 needs Bluetooth, which this dashboard cannot reach"))
        }
    }

    @Test("the API: list with battery and last press, add, map, scan, delete; bad input is a 4xx with one line")
    func api() async throws {
        let f = try WebFixture(found: [Self.evil])
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let add = try await client.execute(uri: "/api/buttons", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"address": "3c:2e:f5:00:11:22", "kind": "itag", "name": "Bedside"}"#))
            #expect(add.status == .ok && (add.json["button"] as? [String: Any])?["address"] as? String == "3C:2E:F5:00:11:22")
            let list = try await client.execute(uri: "/api/buttons", method: .get, headers: headers(cookie))
            let first = (list.json["buttons"] as? [[String: Any]])?.first
            #expect((first?["battery"] as? [String: Any])?["level"] as? Double == 41 && first?["lastPress"] is NSNull)
            let map = try await client.execute(uri: "/api/buttons/3C:2E:F5:00:11:22", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"hold": "skip", "noDouble": true}"#))
            #expect(map.status == .ok && (map.json["mapping"] as? [String: Any])?["hold"] as? String == "skip")
            let badMap = try await client.execute(uri: "/api/buttons/3C:2E:F5:00:11:22", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                                  body: ByteBuffer(string: #"{"noDouble": "yes"}"#))
            #expect(badMap.status == .badRequest)
            let scan = try await client.execute(uri: "/api/buttons/scan", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                body: ByteBuffer(string: #"{"seconds": 1}"#))
            #expect((scan.json["candidates"] as? [[String: Any]])?.first?["name"] as? String == Self.evil.name)
            let badScan = try await client.execute(uri: "/api/buttons/scan", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"seconds": 0}"#))
            #expect(badScan.status == .badRequest)
            let badKind = try await client.execute(uri: "/api/buttons", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"address": "3c:2e:f5:00:11:22", "kind": 1}"#))
            #expect(badKind.status == .badRequest && badKind.json["error"] != nil)
            let noCSRF = try await client.execute(uri: "/api/buttons/3C:2E:F5:00:11:22", method: .delete, headers: headers(cookie))
            #expect(noCSRF.status == .forbidden)
            let delete = try await client.execute(uri: "/api/buttons/3C:2E:F5:00:11:22", method: .delete, headers: headers(cookie, csrf: csrf))
            #expect(delete.status == .ok && delete.json["removed"] as? String == "3C:2E:F5:00:11:22")
            let again = try await client.execute(uri: "/api/buttons/3C:2E:F5:00:11:22", method: .delete, headers: headers(cookie, csrf: csrf))
            #expect(again.status == .notFound && again.json["error"] as? String == "no button 3C:2E:F5:00:11:22")
        }
    }
}

@Suite("Web: the Alarms page's Backup section")
struct BackupSectionTests {
    @Test("toggle, targets with reorder and delete, phone numbers formatted with their sublabel, the timing preview; the CLI's refusals")
    func section() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            _ = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                         body: ByteBuffer(string: #"{"time": "06:30", "label": "Work", "repeat": "daily"}"#))
            let empty = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(empty.text.contains("Backup of Work: Off") && empty.text.contains("No backups yet."))
            let (_, phone) = try await client.post("/alarms/1/backup/add", "csrf=\(csrf)&kind=phone&value=%2B15551234567", cookie: cookie, then: "/alarms")
            #expect(phone.text.contains("<strong>Saved:</strong> (555) 123-4567 added to the backups of alarm 1"))
            #expect(phone.text.contains("<strong>(555) 123-4567</strong>") && phone.text.contains("Calls with automated backup message"))
            let (_, device) = try await client.post("/alarms/1/backup/add", "csrf=\(csrf)&kind=device&value=bedroom-pi", cookie: cookie, then: "/alarms")
            #expect(device.text.contains("device targets need the household broker"))
            #expect(device.text.contains("— Call (555) 123-4567") && device.text.contains("— Alarm on bedroom-pi"))
            #expect(device.text.contains("Move bedroom-pi up") && device.text.contains("Move (555) 123-4567 down"))
            let (_, moved) = try await client.post("/alarms/1/backup/move", "csrf=\(csrf)&target=device%3Abedroom-pi&to=1", cookie: cookie, then: "/alarms")
            let text = moved.text
            let first = try #require(text.range(of: "<strong>bedroom-pi</strong>")), second = try #require(text.range(of: "<strong>(555) 123-4567</strong>"))
            #expect(first.lowerBound < second.lowerBound)
            let (_, on) = try await client.post("/alarms/1/backup/on", "csrf=\(csrf)", cookie: cookie, then: "/alarms")
            #expect(on.text.contains("Backup of Work: On") && on.text.contains("Turn backup off for Work"))
            let (_, own) = try await client.post("/alarms/1/backup/add", "csrf=\(csrf)&kind=device&value=kitchen", cookie: cookie, then: "/alarms")
            #expect(own.text.contains("<strong>Not saved:</strong> kitchen is this machine"))
            let (_, twice) = try await client.post("/alarms/1/backup/add", "csrf=\(csrf)&kind=device&value=bedroom-pi", cookie: cookie, then: "/alarms")
            #expect(twice.text.contains("is already a backup of alarm 1"))
            let unconfirmed = try await client.execute(uri: "/alarms/1/backup/remove", method: .post, headers: formHeaders(cookie),
                                                       body: ByteBuffer(string: "csrf=\(csrf)&target=device%3Abedroom-pi"))
            #expect(unconfirmed.status == .badRequest && unconfirmed.text.contains("confirm=yes"))
            let noCSRF = try await client.execute(uri: "/alarms/1/backup/on", method: .post, headers: formHeaders(cookie), body: ByteBuffer(string: ""))
            #expect(noCSRF.status == .forbidden)
            let badVerb = try await client.execute(uri: "/alarms/1/backup/explode", method: .post, headers: formHeaders(cookie),
                                                   body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(badVerb.status == .badRequest)
            let (_, removed) = try await client.post("/alarms/1/backup/remove", "csrf=\(csrf)&target=device%3Abedroom-pi&confirm=yes",
                                                     cookie: cookie, then: "/alarms")
            #expect(removed.text.contains("bedroom-pi deleted from the backups of alarm 1") && !removed.text.contains("<strong>bedroom-pi</strong>"))
            // The API.
            let list = try await client.execute(uri: "/api/alarms/1/backups", method: .get, headers: headers(cookie))
            #expect(list.json["enabled"] as? Bool == true)
            let target = (list.json["targets"] as? [[String: Any]])?.first
            #expect(target?["name"] as? String == "(555) 123-4567" && target?["sublabel"] as? String == "Calls with automated backup message")
            #expect((list.json["preview"] as? [[String: Any]])?.first?["action"] as? String == "Call (555) 123-4567")
            let off = try await client.execute(uri: "/api/alarms/1/backups", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"action": "off"}"#))
            #expect(off.status == .ok && off.json["enabled"] as? Bool == false)
            let badTo = try await client.execute(uri: "/api/alarms/1/backups", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                 body: ByteBuffer(string: #"{"action": "move", "target": "phone:+15551234567", "to": 7}"#))
            #expect(badTo.status == .badRequest && (badTo.json["error"] as? String)?.contains("a position from 1 to 1") == true)
            let missing = try await client.execute(uri: "/api/alarms/9/backups", method: .get, headers: headers(cookie))
            #expect(missing.status == .notFound)
        }
    }
}

@Suite("Web: usage alerts on the Batteries page")
struct AlertsSectionTests {
    @Test("thresholds, a source's own thresholds and off, snooze, history; the command line's messages for bad values")
    func section() async throws {
        let f = try WebFixture()
        let database = try DataStore(directory: f.dir).open()
        try BatterySampleRepository(database: database).appendLevel(source: "button:Bed\u{1b}[2J<b>", level: 12, at: f.clock.now())
        try AlertRepository(database: database).record("button:Bed\u{1b}[2J<b>", state: AlertSourceState(fired: [.warning], usage: 88),
                                                       alert: AlertRecord(at: f.clock.now(), source: "button:Bed\u{1b}[2J<b>", usage: 88, level: .warning))
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let page = try await client.execute(uri: "/batteries", method: .get, headers: headers(cookie))
            let text = page.text
            #expect(text.contains("<h2 id=\"alerts-title\">Usage alerts</h2>") && text.contains("Alerts at 85 % used (warning) and 95 % used (critical)."))
            #expect(text.contains("button:Bed\\x1b[2J&lt;b&gt;") && !text.contains("\u{1b}") && !text.contains("<b>"))
            #expect(text.contains("88 % used (12 % left)") && text.contains("<td>warning</td>"))
            let (_, saved) = try await client.post("/batteries/alerts/thresholds", "csrf=\(csrf)&warning=80&critical=90", cookie: cookie, then: "/batteries")
            #expect(saved.text.contains("<strong>Saved:</strong> alerts at 80 % used (warning) and 90 % used (critical)"))
            // The command line's words for values out of range or in the wrong order.
            let (_, low) = try await client.post("/batteries/alerts/thresholds", "csrf=\(csrf)&warning=5", cookie: cookie, then: "/batteries")
            #expect(low.text.contains("<strong>Not saved:</strong> warning (5 %) must be between 10 and 99 % used"))
            let (_, order) = try await client.post("/batteries/alerts/thresholds", "csrf=\(csrf)&warning=90&critical=50", cookie: cookie, then: "/batteries")
            #expect(order.text.contains("warning (90 %) must be lower than critical (50 %)"))
            let (_, words) = try await client.post("/batteries/alerts/thresholds", "csrf=\(csrf)&warning=lots", cookie: cookie, then: "/batteries")
            #expect(words.text.contains("warning must be a whole number of percent used"))
            let name = "button%3ABed%1B%5B2J%3Cb%3E"
            let (_, own) = try await client.post("/batteries/alerts/source", "csrf=\(csrf)&name=\(name)&warning=70&critical=80&alerts=off",
                                                 cookie: cookie, then: "/batteries")
            #expect(own.text.contains("alerts off") && own.text.contains("Alerts off"))
            let (_, unknown) = try await client.post("/batteries/alerts/source", "csrf=\(csrf)&name=BAT9&alerts=on", cookie: cookie, then: "/batteries")
            #expect(unknown.text.contains("no source &#39;BAT9&#39;: see dosetap alerts show"))
            let (_, reset) = try await client.post("/batteries/alerts/source", "csrf=\(csrf)&name=\(name)&reset=yes", cookie: cookie, then: "/batteries")
            #expect(reset.text.contains("alerts at 80 / 90 % used"))
            let (_, snoozed) = try await client.post("/batteries/alerts/snooze", "csrf=\(csrf)&duration=1h", cookie: cookie, then: "/batteries")
            #expect(snoozed.text.contains("alerts snoozed until 15:13") && snoozed.text.contains("Snoozed until 15:13."))
            let (_, badSnooze) = try await client.post("/batteries/alerts/snooze", "csrf=\(csrf)&duration=2d", cookie: cookie, then: "/batteries")
            #expect(badSnooze.text.contains("invalid snooze &#39;2d&#39;: use 15m, 1h, 4h, 24h or off"))
            let noCSRF = try await client.execute(uri: "/batteries/alerts/snooze", method: .post, headers: formHeaders(cookie), body: ByteBuffer(string: "duration=off"))
            #expect(noCSRF.status == .forbidden)
            let unconfirmed = try await client.execute(uri: "/batteries/alerts/clear-history", method: .post, headers: formHeaders(cookie),
                                                       body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(unconfirmed.status == .badRequest)
            let (_, cleared) = try await client.post("/batteries/alerts/clear-history", "csrf=\(csrf)&confirm=yes", cookie: cookie, then: "/batteries")
            #expect(cleared.text.contains("cleared 1 alert from the history") && cleared.text.contains("No alerts yet."))
            // The API.
            let overview = try await client.execute(uri: "/api/alerts", method: .get, headers: headers(cookie))
            #expect(overview.json["warning"] as? Int == 80 && overview.json["snoozedUntil"] is String)
            let bad = try await client.execute(uri: "/api/alerts/thresholds", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"critical": 99}"#))
            #expect(bad.status == .badRequest && bad.json["error"] as? String == "critical (99 %) must be between 5 and 95 % used")
            let badType = try await client.execute(uri: "/api/alerts/thresholds", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"critical": "high"}"#))
            #expect(badType.status == .badRequest)
            let off = try await client.execute(uri: "/api/alerts/snooze", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"duration": "off"}"#))
            #expect(off.status == .ok && off.json["snoozedUntil"] is NSNull)
            let history = try await client.execute(uri: "/api/alerts/history", method: .get, headers: headers(cookie))
            #expect((history.json["history"] as? [Any])?.isEmpty == true)
        }
    }
}

@Suite("Web: live parts of Alarms, Batteries, Buttons; the night theme")
struct LivePartsTests {
    @Test("a press and a ring change the live parts the stream sends; an unknown live page is a 404")
    func liveParts() async throws {
        let f = try WebFixture()
        _ = try f.buttons.useCases.add(address: "3C:2E:F5:00:11:22", kind: .itag, name: "Bedside", bindkey: nil)
        let alarm = try AlarmUseCases(store: DataStore(directory: f.dir), clock: f.clock, battery: { nil }).add(.init(time: "06:30", label: "Work"))
        let before = try #require(f.dashboard.liveFragment("buttons", csrf: "t"))
        f.dashboard.remember(.buttonPressed(address: "3C:2E:F5:00:11:22", gesture: "hold"))
        let after = try #require(f.dashboard.liveFragment("buttons", csrf: "t"))
        #expect(before != after && after.contains("hold at 14:13"))
        #expect(TonightPage.version(before) != TonightPage.version(after))
        let ring = AlarmRing(id: 1, alarmID: alarm.alarm.id, kind: .scheduled, dueAt: f.clock.now(), startedAt: f.clock.now(), endedAt: nil,
                             outcome: .ringing, endedBy: nil, snoozeUntil: nil)
        f.dashboard.remember(.alarmRinging(ring, alarm.alarm))
        #expect(f.dashboard.liveFragment("alarms", csrf: "t")?.contains("Ringing now.") == true)
        f.dashboard.remember(.alarmEnded(ring))
        #expect(f.dashboard.liveFragment("alarms", csrf: "t")?.contains("Ringing now.") == false)
        // A household member's alarm ringing here as its backup (#12): said on the Alarms page (its label escaped), until it ends.
        let backup = AlarmRing(id: -7, alarmID: alarm.alarm.id, kind: .scheduled, dueAt: f.clock.now(), startedAt: f.clock.now(),
                               endedAt: nil, outcome: .ringing, endedBy: nil, snoozeUntil: nil)
        let owners = try Alarm(id: alarm.alarm.id, time: try TimeOfDay(parsing: "05:00"), label: "Wake <b>")
        f.dashboard.remember(.backupAlarmRinging(backup, owners, owner: "jen-laptop"))
        let ringingBackup = try #require(f.dashboard.liveFragment("alarms", csrf: "t"))
        #expect(ringingBackup.contains("Backup alarm ringing: 05:00 “Wake &lt;b&gt;” of jen-laptop."), "\(ringingBackup)")
        #expect(!ringingBackup.contains("Ringing now."), "our own alarm of the same id is not ringing")
        f.dashboard.remember(.backupAlarmEnded(backup, owner: "jen-laptop"))
        #expect(f.dashboard.liveFragment("alarms", csrf: "t")?.contains("Backup alarm ringing") == false)
        #expect(f.dashboard.liveFragment("batteries", csrf: "t")?.contains("The last 24 hours") == true)
        #expect(f.dashboard.liveFragment("nope", csrf: "t") == nil)
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let page = try await client.execute(uri: "/buttons", method: .get, headers: headers(cookie))
            #expect(page.text.contains("<div id=\"live-buttons\" data-live=\"buttons\" data-version=\""))
            let unknown = try await client.execute(uri: "/events?page=nope", method: .get, headers: headers(cookie))
            #expect(unknown.status == .notFound && (unknown.json["error"] as? String)?.contains("no live page") == true)
        }
    }

    @Test("dark after the configured bedtime unless light was chosen; the switch sets only this browser's cookie and goes back")
    func theme() async throws {
        let night = Calendar(identifier: .gregorian).date(byAdding: .hour, value: 9, to: t0)! // 23:13 UTC
        let f = try WebFixture(start: night)
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let dark = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(dark.text.contains("<html lang=\"en\" data-theme=\"dark\">"))
            #expect(dark.text.contains("href=\"/theme?set=light&amp;back=%2Falarms\""))
            let light = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie + "; dosetap_theme=light"))
            #expect(light.text.contains("<html lang=\"en\" data-theme=\"light\">") && light.text.contains("Light (chosen)"))
            let set = try await client.execute(uri: "/theme?set=dark&back=%2Fsounds", method: .get)
            #expect(set.status == .seeOther && set.headers[.location] == "/sounds" && set.headers[.setCookie]?.hasPrefix("dosetap_theme=dark;") == true)
            let away = try await client.execute(uri: "/theme?set=auto&back=%2F%2Fevil.example", method: .get)
            #expect(away.headers[.location] == "/" && away.headers[.setCookie]?.contains("Max-Age=0") == true)
            let bad = try await client.execute(uri: "/theme?set=purple", method: .get)
            #expect(bad.status == .badRequest)
        }
        let day = try WebFixture()
        try await day.application.test(.router) { client in
            let (cookie, _) = try await day.pair(client)
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(page.text.contains("<html lang=\"en\">"))
        }
    }
}

/// A value several tasks change under a lock (a test's record of calls).
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
