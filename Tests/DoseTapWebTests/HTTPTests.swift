import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import NIOCore
import Synchronization
import Testing

/// A dashboard over a fresh data folder, with the fake clock.
struct WebFixture {
    let dashboard: WebDashboard
    let clock: FakeClock
    let doses: DoseUseCases
    let events: EventBus
    let tokens: WebTokens

    /// 34 % at 8 %/h on battery.
    static let draining = BatteryStatus(state: PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4),
                                                              .mains(online: false)]),
                                        drain: DrainEstimate(percentPerHour: 8, source: .hardware))

    let logs = InMemoryLogHandler()
    let player: any SoundPlayer
    let buttons: WebButtons
    let settings: SettingsUseCases
    let preview: SoundPreview
    let alerts: AlertUseCases
    let dir: URL
    /// The data folder's watch, as the agent has it: the rendered views are kept by its generation.
    let watcher: DirectoryWatcher?

    static let bell = SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")

    /// - Parameters:
    ///   - motor: whether the machine has a vibration motor.
    ///   - found: what a button scan finds.
    ///   - cached: views kept by the data folder's generation (as in the agent); false: every request draws.
    init(start: Date = t0, battery: BatteryStatus? = nil, wakeProblem: String? = nil, soundProblem: String? = nil, motor: Bool = true,
         player: any SoundPlayer = RecordingSoundPlayer(), found: [ButtonUseCases.Candidate] = [], cached: Bool = true,
         rateLimit: RateLimiter = RateLimiter(),
         pairFlic2: (@Sendable (String, Int) async throws -> WebButtons.Flic2Paired)? = nil,
         answerRing: (@Sendable (AlarmRingOutcome, AlarmRingEnder) -> Bool)? = nil) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-web-\(UUID().uuidString)")
        self.dir = dir
        clock = FakeClock(start, timeZone: TimeZone(identifier: "UTC")!)
        events = EventBus()
        doses = try MachinePorts.doses(store: DataStore(directory: dir), clock: clock, events: events)
        let alarms = AlarmUseCases(store: DataStore(directory: dir), clock: clock, battery: { battery }, events: events)
        let secret = WebSecret(bytes: Array(repeating: 3, count: 32))
        tokens = WebTokens(secret: secret)
        let start = clock.now()
        let samples = (0..<48).map { i in
            BatterySample(at: start.addingTimeInterval(-Double(47 - i) * 1800), level: 90 - Double(i), onAC: false, status: .discharging)
        }
        let logs = self.logs
        self.player = player
        let devices = FeedbackDevices(haptics: RecordingHaptics(supported: motor), catalog: FixedSoundCatalog([Self.bell]), player: player,
                                      beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav"), desktop: nil)
        settings = SettingsUseCases(settings: SettingsRepository(database: try DataStore(directory: dir).open()), devices: devices.channels,
                                    history: DoseHistory(store: DataStore(directory: dir), clock: clock), events: events)
        preview = SoundPreview(devices: devices.channels)
        alerts = AlertUseCases(store: DataStore(directory: dir), clock: clock, supplies: { [] }, events: events)
        buttons = WebButtons(useCases: ButtonUseCases(store: DataStore(directory: dir), events: events), scan: { _ in found },
                             levels: { ["button:Bedside": (level: 41, at: start)] }, pairFlic2: pairFlic2)
        let watcher = cached ? try DirectoryWatcher(directory: dir.path) : nil
        self.watcher = watcher
        dashboard = WebDashboard(doses: doses, events: events, clock: clock, secret: secret, logger: Logger(label: "test") { _ in logs },
                                 alarms: alarms, alarmWarnings: { [wakeProblem, soundProblem].compactMap { $0 } },
                                 batteries: WebBatteries(now: { battery }, samples: { since in samples.filter { $0.at >= since } },
                                                         others: { [(source: "button:Bedside\u{1b}[2J", level: 41, at: start)] }),
                                 sounds: WebSounds(settings: settings, preview: preview), buttons: buttons,
                                 household: AlarmUseCases.Household(device: "kitchen", hasBroker: false), usageAlerts: alerts,
                                 rateLimit: rateLimit, storeGeneration: watcher.map { watcher in { @Sendable in watcher.generation() } },
                                 answerRing: answerRing)
    }

    var application: some ApplicationProtocol {
        Application(responder: dashboard.responder, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    /// Pairs through /pair?code= and returns the session cookie and its CSRF token.
    func pair(_ client: some TestClientProtocol) async throws -> (cookie: String, csrf: String) {
        let code = tokens.pairingCode(now: clock.now())
        let response = try await client.execute(uri: "/pair?code=\(code)", method: .get)
        #expect(response.status == .seeOther)
        let setCookie = try #require(response.headers[.setCookie])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
        let cookie = String(setCookie.split(separator: ";")[0])
        var headers = HTTPFields()
        headers[.cookie] = cookie
        let session = try await client.execute(uri: "/api/session", method: .get, headers: headers)
        let csrf = try #require(try JSONSerialization.jsonObject(with: Data(session.body.readableBytesView)) as? [String: String])["csrfToken"]!
        return (cookie, csrf)
    }
}

func headers(_ cookie: String?, csrf: String? = nil, json: Bool = false, extra: [(HTTPField.Name, String)] = []) -> HTTPFields {
    var fields = HTTPFields()
    if let cookie { fields[.cookie] = cookie }
    if let csrf { fields[HTTPField.Name("X-CSRF-Token")!] = csrf }
    if json { fields[.contentType] = "application/json" }
    for (name, value) in extra { fields[name] = value }
    return fields
}

extension TestResponse {
    var text: String { String(buffer: body) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:] }
}

@Suite("Web routes: access, CSRF, the dose use case, bad input")
struct HTTPTests {
    @Test("no session: the pages answer with the pairing page, the API with 401, nothing else leaks")
    func unpaired() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .unauthorized)
            #expect(page.text.contains("Pair this browser") && page.text.contains("dosetap web link"))
            let api = try await client.execute(uri: "/api/tonight", method: .get)
            #expect(api.status == .unauthorized)
            #expect((api.json["error"] as? String)?.contains("not paired") == true)
            let post = try await client.execute(uri: "/api/dose/take", method: .post)
            #expect(post.status == .unauthorized)
            let forged = try await client.execute(uri: "/api/tonight", method: .get, headers: headers("dosetap_session=AAAA"))
            #expect(forged.status == .unauthorized)
            let events = try await client.execute(uri: "/events", method: .get)
            #expect(events.status == .unauthorized)
            let agentEvents = try await client.execute(uri: "/api/events", method: .get)
            #expect(agentEvents.status == .unauthorized)
        }
        #expect(try f.doses.status().phase == .idle)
    }

    @Test("pairing: a good code sets the cookie once; a used or expired code gets the pairing page with the reason")
    func pairing() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let code = f.tokens.pairingCode(now: f.clock.now())
            let first = try await client.execute(uri: "/pair?code=\(code)", method: .get)
            #expect(first.status == .seeOther && first.headers[.location] == "/")
            let again = try await client.execute(uri: "/pair?code=\(code)", method: .get)
            #expect(again.status == .forbidden && again.text.contains("already used"))
            let old = f.tokens.pairingCode(now: f.clock.now())
            f.clock.advance(by: 600)
            let expired = try await client.execute(uri: "/pair?code=\(old)", method: .get)
            #expect(expired.status == .forbidden && expired.text.contains("expired"))
            // The form: POST /pair with the code typed in.
            var h = HTTPFields()
            h[.contentType] = "application/x-www-form-urlencoded"
            let typed = try await client.execute(uri: "/pair", method: .post, headers: h,
                                                 body: ByteBuffer(string: "code=\(f.tokens.pairingCode(now: f.clock.now()))"))
            #expect(typed.status == .seeOther && typed.headers[.setCookie] != nil)
        }
    }

    @Test("Tonight: a form post without the CSRF token is refused and records nothing; with it, Dose 1 is recorded from the web")
    func csrfAndTake() async throws {
        let f = try WebFixture()
        let stream = f.events.subscribe()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(page.status == .ok && page.text.contains("Take Dose 1") && page.text.contains(csrf))
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
            var form = headers(cookie)
            form[.contentType] = "application/x-www-form-urlencoded"
            let refused = try await client.execute(uri: "/tonight/take", method: .post, headers: form, body: ByteBuffer(string: "csrf=wrong"))
            #expect(refused.status == .forbidden && refused.text.contains("CSRF"))
            let missing = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie))
            #expect(missing.status == .forbidden)
            #expect(try f.doses.status().phase == .idle)
            let taken = try await client.execute(uri: "/tonight/take", method: .post, headers: form, body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(taken.status == .seeOther)
            let flash = try #require(taken.headers[.setCookie])
            let after = try await client.execute(uri: "/", method: .get, headers: headers(cookie + "; " + String(flash.split(separator: ";")[0])))
            #expect(after.text.contains("Recorded:") && after.text.contains("Dose 1 taken at 14:13"))
            #expect(after.text.contains("Window opens") && after.text.contains("Take Dose 2"))
        }
        #expect(try f.doses.status().phase == .waiting)
        let events = await drainedEvents(f.events, stream)
        guard case .doseRecorded(let event, _, _, _)? = events.first else { Issue.record("no dose event"); return }
        #expect(event.source == .web)
    }

    @Test("the JSON API gives the command line's answers and refusals, word for word")
    func api() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let take = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(take.status == .ok && take.json["recorded"] as? Bool == true)
            #expect((take.json["event"] as? [String: Any])?["source"] as? String == "web")
            f.clock.advance(by: 60)
            let early = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(early.status == .conflict)
            let refusal = early.json["refusal"] as? [String: Any]
            #expect(refusal?["code"] as? String == "too-early")
            #expect(refusal?["message"] as? String == "Too early for Dose 2: the window opens at 16:43 (in 149 min)")
            let setter = try #require(try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie)).json["reminderSetBy"] as? String)
            let snooze = try await client.execute(uri: "/api/dose/snooze", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                  body: ByteBuffer(string: #"{"event": "\#(setter)"}"#))
            #expect(snooze.status == .ok && (snooze.json["message"] as? String)?.hasPrefix("Reminder snoozed to") == true)
            let bad = try await client.execute(uri: "/api/dose/skip", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"reason": "bored\u001b[31m"}"#))
            #expect(bad.status == .badRequest)
            let line = bad.json["error"] as? String ?? ""
            #expect(line.contains("reason must be alert, side-effects or other") && !line.contains("\u{1b}"))
            let notJSON = try await client.execute(uri: "/api/dose/skip", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: "[1,2"))
            #expect(notJSON.status == .badRequest)
            let lateType = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                    body: ByteBuffer(string: #"{"late": "yes"}"#))
            #expect(lateType.status == .badRequest)
            let skip = try await client.execute(uri: "/api/dose/skip", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                body: ByteBuffer(string: #"{"reason": "side-effects"}"#))
            #expect(skip.status == .ok && skip.json["message"] as? String == "Dose 2 skipped (Side effects).")
            let tonight = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(tonight.json["phase"] as? String == "skipped")
            let big = try await client.execute(uri: "/api/dose/undo", method: .post, headers: headers(cookie, csrf: csrf),
                                               body: ByteBuffer(string: String(repeating: "x", count: 20_000)))
            #expect(big.status == .contentTooLarge)
            let unknown = try await client.execute(uri: "/api/dose/eat", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(unknown.status == .notFound)
            let nowhere = try await client.execute(uri: "/nowhere", method: .get, headers: headers(cookie))
            #expect(nowhere.status == .notFound)
        }
    }

    @Test("a request from another site is refused even with a session and a token")
    func crossOrigin() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let response = try await client.execute(uri: "/api/dose/take", method: .post,
                                                    headers: headers(cookie, csrf: csrf, extra: [(.origin, "http://evil.example")]))
            #expect(response.status == .forbidden)
            // The browser's own origin (Host names the same place) is accepted.
            let same = try await client.execute(uri: "/api/dose/take", method: .post,
                                                headers: headers(cookie, csrf: csrf, extra: [(.origin, "http://127.0.0.1:8765"),
                                                                                               (HTTPField.Name("Host")!, "127.0.0.1:8765")]))
            #expect(same.status == .ok)
        }
        #expect(try f.doses.status().phase == .waiting)
    }

    @Test("the rate limit over HTTP: past 200 in a minute the client gets 429 with Retry-After, logged once")
    func rateLimited() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            for _ in 0..<60 {
                let r = try await client.execute(uri: "/static/app.css", method: .get)
                #expect(r.status == .ok)
            }
            // The 61st waits on the scheduling port (the fake clock) for its turn, one second later.
            async let queued = client.execute(uri: "/static/app.css", method: .get)
            await f.clock.waitForSleepers(1)
            f.clock.advance(by: 1)
            #expect(try await queued.status == .ok)
            // 139 more within the minute (the router test client has no address: one client, "unknown"; no session).
            f.dashboard.limiter.withLock { limiter in
                for _ in 0..<139 { _ = limiter.admit("anonymous:unknown", at: f.clock.now()) }
            }
            let refused = try await client.execute(uri: "/api/openapi.json", method: .get)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "300")
            f.clock.advance(by: 10)
            let again = try await client.execute(uri: "/", method: .get)
            #expect(again.status == .tooManyRequests && again.headers[.retryAfter] == "290")
            // Logged once, when the refusal started; not for every refused request.
            #expect(f.logs.entries.filter { $0.message.description.contains("refusing") }.count == 1)
        }
    }

    @Test("205 unauthenticated requests from the paired browser's address refuse them, never the paired session (#25)")
    func anonymousFloodSparesSession() async throws {
        // No queueing (burst above the refusal), so the 205 go through at once; the refusal at 200 as shipped.
        let f = try WebFixture(rateLimit: RateLimiter(burst: 1000, refuseAbove: 200))
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<205 { statuses.append(try await client.execute(uri: "/api/tonight", method: .get).status) }
            #expect(statuses.last == .tooManyRequests)
            let owner = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(owner.status == .ok, "the paired browser was locked out: \(owner.status)")
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(page.status == .ok)
            // A forged cookie is anonymous traffic: still refused.
            let forged = try await client.execute(uri: "/api/tonight", method: .get, headers: headers("dosetap_session=forged"))
            #expect(forged.status == .tooManyRequests)
        }
    }

    @Test("the JSON API is strict: 1 is not true, a trailing comma is refused and records nothing (#25)")
    func strictJSON() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let one = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"late": 1}"#))
            #expect(one.status == .badRequest)
            let take = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                body: ByteBuffer(string: #"{"late": false}"#))
            #expect(take.status == .ok)
            for body in [#"{"reason": "alert",}"#, #"{"reason": "alert"} x"#, "{'reason': 'alert'}", "{\"reason\": \"al\u{01}ert\"}"] {
                let skip = try await client.execute(uri: "/api/dose/skip", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                    body: ByteBuffer(string: body))
                #expect(skip.status == .badRequest, "\(body)")
            }
            #expect(try f.doses.status().phase == .waiting, "a malformed body recorded a Skip")
            let alarm = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                 body: ByteBuffer(string: #"{"time": "06:30", "enabled": 1}"#))
            #expect(alarm.status == .badRequest)
            let unicode = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"time": "06:30", "label": "Caf\u00e9 \ud83d\ude00", "enabled": true}"#))
            #expect(unicode.status.code < 300, "\(unicode.text)")
            #expect(unicode.text.contains("Café 😀"), "\(unicode.text)")
        }
    }

    @Test("a key given twice is refused in one line and records nothing (#51)")
    func duplicateKeys() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            for body in [#"{"late": false, "late": true}"#, #"{"reason": "alert", "reason": "other"}"#, #"{"a": {"b": 1, "b": 2}}"#,
                         #"{"late": false, "l\u0061te": false}"#] {
                let r = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                 body: ByteBuffer(string: body))
                #expect(r.status == .badRequest, "\(body)")
                #expect(r.text.contains("the body names a key twice: give each field once"), "\(r.text)")
            }
            #expect(try f.doses.status().phase == .idle, "a body with a key twice recorded a dose")
            // Two different keys are fine.
            let ok = try await client.execute(uri: "/api/dose/take", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                              body: ByteBuffer(string: #"{"late": false, "lat": 1}"#))
            #expect(ok.status == .ok)
        }
    }

    @Test("an entry dated in the future: named on Tonight and in /api/tonight, discarded by its id (#51)")
    func setAsideOnTheDashboard() async throws {
        let f = try WebFixture()
        let future = DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: f.clock.now().addingTimeInterval(86_400),
                               timeZone: "UTC", source: .cli)
        try DoseRepository(database: try DataStore(directory: f.dir).open()).append([future])
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let tonight = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            let aside = try #require(tonight.json["setAside"] as? [[String: Any]])
            #expect(aside.first?["id"] as? String == future.id.uuidString)
            #expect(tonight.json["phase"] as? String == "idle")
            let page = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(page.text.contains("Set aside: Dose 1 dated"), "\(page.text)")
            #expect(page.text.contains("Discard this Dose 1 entry"))
            let missing = try await client.execute(uri: "/api/dose/discard", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: "{}"))
            #expect(missing.status == .badRequest)
            #expect(missing.text.contains("setAside[].id"))
            let discard = try await client.execute(uri: "/api/dose/discard", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: "{\"event\": \"\(future.id.uuidString)\"}"))
            #expect(discard.status == .ok, "\(discard.text)")
            #expect(((discard.json["status"] as? [String: Any])?["setAside"] as? [Any])?.isEmpty == true)
            let again = try await client.execute(uri: "/api/dose/discard", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                                 body: ByteBuffer(string: "{\"event\": \"\(future.id.uuidString)\"}"))
            #expect(again.status == .conflict)
            #expect((again.json["refusal"] as? [String: Any])?["code"] as? String == "already-discarded")
            // Without the CSRF token, nothing.
            let forged = try await client.execute(uri: "/api/dose/discard", method: .post, headers: headers(cookie, json: true),
                                                  body: ByteBuffer(string: "{\"event\": \"\(future.id.uuidString)\"}"))
            #expect(forged.status == .forbidden)
        }
    }

    @Test("assets and the API document come from the binary; nothing from another host")
    func assets() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            for path in ["/static/app.css", "/static/app.js", "/pair"] {
                let r = try await client.execute(uri: path, method: .get)
                #expect(r.status == .ok)
                #expect(!r.text.contains("//cdn") && !r.text.contains("https://"))
            }
            let doc = try await client.execute(uri: "/api/openapi.json", method: .get)
            #expect(doc.status == .ok)
            let paths = (doc.json["paths"] as? [String: Any])?.keys.sorted() ?? []
            #expect(paths.contains("/api/dose/take") && paths.contains("/api/tonight") && paths.contains("/events") && paths.contains("/api/events"))
        }
    }

    @Test("text is HTML-escaped with control characters made visible")
    func escaping() {
        #expect(HTML.escape("<b onclick='x'>\u{1b}[31m&") == "&lt;b onclick=&#39;x&#39;&gt;\\x1b[31m&amp;")
    }
}

@Suite("Web: the Alarms page and /api/alarms")
struct AlarmRouteTests {
    @Test("#51: POST /api/ringing/stop|snooze answers the ring through the agent: a session needs its CSRF token; none ringing is 409; another answer is 404")
    func answerRing() async throws {
        let asked = Mutex<[String]>([])
        let ringing = Mutex(true)
        let f = try WebFixture(answerRing: { outcome, by in
            asked.withLock { $0.append("\(outcome.rawValue) \(by.rawValue)") }
            return ringing.withLock { $0 }
        })
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let anonymous = try await client.execute(uri: "/api/ringing/stop", method: .post)
            #expect(anonymous.status == .unauthorized || anonymous.status == .forbidden, "\(anonymous.status)")
            let forged = try await client.execute(uri: "/api/ringing/stop", method: .post, headers: headers(cookie, csrf: "wrong"))
            #expect(forged.status == .forbidden)
            #expect(asked.withLock { $0 }.isEmpty, "nothing answered without the session's token")
            let snoozed = try await client.execute(uri: "/api/ringing/snooze", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(snoozed.status == .ok)
            #expect(snoozed.json["answered"] as? String == "snooze" && snoozed.json["by"] as? String == "web")
            ringing.withLock { $0 = false }
            let none = try await client.execute(uri: "/api/ringing/stop", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(none.status == .conflict && none.text.contains("no alarm is ringing"), "\(none.text)")
            let other = try await client.execute(uri: "/api/ringing/dismiss", method: .post, headers: headers(cookie, csrf: csrf))
            #expect(other.status == .notFound)
            #expect(asked.withLock { $0 } == ["snoozed web", "stopped web"])
        }
    }

    /// #26: one place maps a use case's "no" to a status, by kind (it was guessed from the words, and 503 otherwise).
    @Test("a use-case error's kind is its status: invalid 400, not found 404, refused 409, unavailable 503 — whatever its words")
    func errorStatus() {
        #expect(WebDashboard.status(for: UseCaseError("no alarm is a word here")) == .badRequest)
        #expect(WebDashboard.status(for: .notFound("alarm 9 is not there")) == .notFound)
        #expect(WebDashboard.status(for: .refused("no alarm is ringing")) == .conflict)
        #expect(WebDashboard.status(for: .unavailable("could not save the alarm: the disk is full")) == .serviceUnavailable)
    }

    func form(_ cookie: String) -> HTTPFields {
        var h = headers(cookie)
        h[.contentType] = "application/x-www-form-urlencoded"
        return h
    }

    @Test("add, turn on and off, edit, delete with confirmation; a bad time is the use case's one line; text is escaped")
    func pageActions() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let empty = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(empty.status == .ok && empty.text.contains("No alarms yet"))
            let add = try await client.execute(uri: "/alarms/add", method: .post, headers: form(cookie),
                                               body: ByteBuffer(string: "csrf=\(csrf)&time=06%3A30&label=%3Cb%3EWork%3C%2Fb%3E&repeat=daily"))
            #expect(add.status == .seeOther && add.headers[.location] == "/alarms")
            let flash = String(try #require(add.headers[.setCookie]).split(separator: ";")[0])
            let page = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie + "; " + flash))
            #expect(page.text.contains("Saved:") && page.text.contains("alarm 06:30 added"))
            #expect(page.text.contains("&lt;b&gt;Work&lt;/b&gt;") && !page.text.contains("<b>Work"))
            #expect(page.text.contains("Every day · On · Next: "))
            let bad = try await client.execute(uri: "/alarms/add", method: .post, headers: form(cookie),
                                               body: ByteBuffer(string: "csrf=\(csrf)&time=25%3A00"))
            let badFlash = String(try #require(bad.headers[.setCookie]).split(separator: ";")[0])
            let refused = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie + "; " + badFlash))
            #expect(refused.text.contains("Not saved:") && refused.text.contains("25:00"))
            let noCSRF = try await client.execute(uri: "/alarms/1/disable", method: .post, headers: form(cookie), body: ByteBuffer(string: "csrf=x"))
            #expect(noCSRF.status == .forbidden)
            _ = try await client.execute(uri: "/alarms/1/disable", method: .post, headers: form(cookie), body: ByteBuffer(string: "csrf=\(csrf)"))
            let off = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            let first = (off.json["alarms"] as? [[String: Any]])?.first
            #expect(first?["enabled"] as? Bool == false)
            _ = try await client.execute(uri: "/alarms/1/edit", method: .post, headers: form(cookie),
                                         body: ByteBuffer(string: "csrf=\(csrf)&time=07%3A15&label=Gym&repeat=sun%2Csat"))
            let edited = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            let e = (edited.json["alarms"] as? [[String: Any]])?.first
            let weekends = try AlarmRepeat(parsing: "sat,sun").description
            #expect(e?["time"] as? String == "07:15" && e?["label"] as? String == "Gym" && e?["repeat"] as? String == weekends)
            let unconfirmed = try await client.execute(uri: "/alarms/1/delete", method: .post, headers: form(cookie), body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(unconfirmed.status == .badRequest)
            _ = try await client.execute(uri: "/alarms/1/delete", method: .post, headers: form(cookie), body: ByteBuffer(string: "csrf=\(csrf)&confirm=yes"))
            let gone = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            #expect((gone.json["alarms"] as? [Any])?.isEmpty == true)
            let unknown = try await client.execute(uri: "/alarms/x1/enable", method: .post, headers: form(cookie), body: ByteBuffer(string: "csrf=\(csrf)"))
            #expect(unknown.status == .notFound)
        }
    }

    @Test("an alarm the battery will not last to has the red card with its words; the wake and sound warnings are shown")
    func nudgeCard() async throws {
        let f = try WebFixture(battery: WebFixture.draining, wakeProblem: "This machine may sleep through the alarm: no RTC. Fix: none",
                               soundProblem: "This machine cannot play the alarm: no <card>. Fix: plug one in")
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let add = try await client.execute(uri: "/api/alarms", method: .post, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"time": "23:00", "label": "Late"}"#))
            #expect(add.status == .ok)
            #expect((add.json["nudge"] as? [String: Any])?["header"] as? String == "Alarm at Risk")
            let page = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(page.text.contains("<div class=\"nudge critical\"><p class=\"nudge-header\"><strong>Alarm at Risk</strong>"))
            #expect(page.text.contains("Plug in now."))
            #expect(page.text.contains("<p>This machine may sleep through the alarm: no RTC. Fix: none</p><p>This machine cannot play the alarm: no &lt;card&gt;. Fix: plug one in</p>"))
            let badType = try await client.execute(uri: "/api/alarms/1", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"enabled": "no"}"#))
            #expect(badType.status == .badRequest)
            let missing = try await client.execute(uri: "/api/alarms/9", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                                   body: ByteBuffer(string: #"{"enabled": false}"#))
            #expect(missing.status == .notFound)
            let off = try await client.execute(uri: "/api/alarms/1", method: .patch, headers: headers(cookie, csrf: csrf, json: true),
                                               body: ByteBuffer(string: #"{"enabled": false}"#))
            #expect(off.status == .ok && off.json["nudge"] is NSNull)
            let delete = try await client.execute(uri: "/api/alarms/1", method: .delete, headers: headers(cookie, csrf: csrf))
            #expect(delete.status == .ok)
        }
    }
}

@Suite("Web: the Batteries page")
struct BatteriesRouteTests {
    @Test("the battery now, its drain and source, time to empty, the 24-hour chart as SVG with a text summary, button cells escaped")
    func page() async throws {
        let f = try WebFixture(battery: WebFixture.draining)
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let page = try await client.execute(uri: "/batteries", method: .get, headers: headers(cookie))
            #expect(page.status == .ok)
            let text = page.text
            #expect(text.contains("<dt>Level</dt><dd>34 %</dd>"))
            #expect(text.contains("<dt>Drain</dt><dd>8.0 %/h (from the battery&#39;s own rate)</dd>"))
            #expect(text.contains("<dt>Time to empty</dt><dd>4 h 15 min</dd>"))
            #expect(text.contains("<svg viewBox=\"0 0 600 200\" role=\"img\"") && text.contains("<polyline points="))
            #expect(text.contains("From 90 % at 14:43 to 43 % at 14:13; lowest 43 %, highest 90 % (48 readings)."))
            #expect(text.contains("button:Bedside\\x1b[2J") && !text.contains("\u{1b}"))
            let api = try await client.execute(uri: "/api/batteries", method: .get, headers: headers(cookie))
            #expect((api.json["system"] as? [String: Any])?["level"] as? Int == 34)
        }
    }

    @Test("no battery: said plainly, not an error")
    func none() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let page = try await client.execute(uri: "/batteries", method: .get, headers: headers(cookie))
            #expect(page.status == .ok && page.text.contains("No system battery found"))
            let api = try await client.execute(uri: "/api/batteries", method: .get, headers: headers(cookie))
            #expect(api.status == .serviceUnavailable)
        }
    }
}

@Suite("Web: the History page and its CSV")
struct HistoryRouteTests {
    @Test("nights newest first with the export's columns; the CSV is dosetap export csv's; a bad range is a 400 in one line")
    func history() async throws {
        let f = try WebFixture()
        _ = try f.doses.submit(.take(confirmLate: false), source: .cli)
        f.clock.advance(by: 170 * 60)
        _ = try f.doses.submit(.take(confirmLate: false), source: .cli)
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let page = try await client.execute(uri: "/history", method: .get, headers: headers(cookie))
            #expect(page.status == .ok)
            #expect(page.text.contains("<tr><th scope=\"row\">2026-09-20</th><td>14:13:20</td><td>17:03:20</td><td>170 min</td><td>Yes</td><td>No</td></tr>"))
            let csv = try await client.execute(uri: "/history.csv?range=all", method: .get, headers: headers(cookie))
            #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(csv.headers[HTTPField.Name("Content-Disposition")!] == "attachment; filename=\"dosetap-all.csv\"")
            #expect(csv.text == "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped\r\n2026-09-20,14:13:20,17:03:20,170,true,false\r\n")
            let bad = try await client.execute(uri: "/history?range=7y", method: .get, headers: headers(cookie))
            #expect(bad.status == .badRequest && bad.text.contains("range must be 30d, 90d or all"))
            let unpaired = try await client.execute(uri: "/history.csv", method: .get)
            #expect(unpaired.status == .unauthorized)
        }
    }

    @Test("CSV fields: quoted commas and doubled quotes")
    func csvFields() {
        #expect(HistoryPage.fields("a,\"b,c\",\"d\"\"e\",") == ["a", "b,c", "d\"e", ""])
    }
}

@Suite("Web: live updates (server-sent events)")
struct LiveUpdateTests {
    @Test("the stream pokes at once, on a dose event of the agent (a button, a notification), on a database change, and each minute on the scheduling port")
    func pokes() async throws {
        let (changes, change) = AsyncStream<Void>.makeStream()
        let f = try WebFixture(start: Date(timeIntervalSince1970: 1_790_000_000)) // 14:13:20
        let dashboard = WebDashboard(doses: f.doses, events: f.events, clock: f.clock, secret: WebSecret(bytes: Array(repeating: 1, count: 32)),
                                     logger: Logger(label: "test"), databaseChanges: { changes })
        let pokes = dashboard.pokeStream()
        var it = pokes.stream.makeAsyncIterator()
        #expect(await it.next() != nil) // at once
        await f.clock.waitForSleepers(1) // the minute tick waits on the fake clock
        // A dose recorded by another face of the agent (here the use case, as a button would).
        while f.events.subscriberCount == 0 { await Task.yield() }
        _ = try f.doses.submit(.take(confirmLate: false), source: .button)
        #expect(await it.next() != nil)
        // Another process wrote the database (the command line).
        change.yield()
        #expect(await it.next() != nil)
        // The next minute (14:14:00).
        f.clock.set(Date(timeIntervalSince1970: 1_790_000_040))
        #expect(await it.next() != nil)
        pokes.stop()
        #expect(await it.next() == nil)
    }

    @Test("an event carries the fragment line by line")
    func format() {
        #expect(WebDashboard.serverSentEvent("tonight", "<p>a</p>\n<p>b</p>") == "event: tonight\ndata: <p>a</p>\ndata: <p>b</p>\n\n")
        #expect(WebDashboard.serverSentEvent("tonight", "x", id: "ab12") == "id: ab12\nevent: tonight\ndata: x\n\n")
        #expect(TonightPage.version("a") == TonightPage.version("a") && TonightPage.version("a") != TonightPage.version("b"))
        #expect(TonightPage.live("<p>x</p>") == "<div id=\"tonight\" data-version=\"\(TonightPage.version("<p>x</p>"))\"><p>x</p></div>")
    }
}

func drainedEvents(_ bus: EventBus, _ stream: AsyncStream<AgentEvent>) async -> [AgentEvent] {
    bus.finish()
    var events: [AgentEvent] = []
    for await event in stream { events.append(event) }
    return events
}
