import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pushes and calls of the cascade (#12) through async-http-client to a local HTTP server
/// (`hw-fixtures/http/scripted-server.py`) that records each request and answers 503, 429 with
/// Retry-After, 401 or nothing at all, as scripted. The policy's waits and the 10 s timeout are on the
/// fake clock: the test moves it.
@Suite("Backup pushes and calls over HTTP: one retry policy against a scripted local server", .serialized, .timeLimit(.minutes(4)))
struct BackupDeliveryTests {
    struct Server {
        let port: Int
        let records: URL

        /// The requests received so far.
        var requests: [[String: Any]] {
            ((try? String(contentsOf: records, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
    }

    func server(_ answers: [String], _ body: (Server) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let portFile = dir.appendingPathComponent("port")
        let records = dir.appendingPathComponent("requests.jsonl")
        // Through swift-subprocess, not Foundation's Process: Foundation watches a child's descriptors with
        // select(), which corrupts memory for a descriptor numbered 1024 or more — and other tests of this
        // process hold hundreds of sockets (a full run crashed or hung when they overlapped).
        let arguments = [Fixtures.root.appendingPathComponent("http/scripted-server.py").path, portFile.path, records.path] + answers
        _ = try await Subprocess.run(.path("/usr/bin/python3"), arguments: Arguments(arguments), input: .none,
                                     output: .discarded, error: .discarded) { execution in
            // SIGKILL: the test process blocks SIGTERM (the signal handling of the agent's services) and a child
            // inherits that mask.
            defer { try? execution.send(signal: .kill) }
            let end = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: portFile.path), Date() < end { try await Task.sleep(for: .milliseconds(20)) }
            let port = try #require(Int((try? String(contentsOf: portFile, encoding: .utf8)) ?? ""), "the scripted server did not start")
            try await body(Server(port: port, records: records))
        }
    }

    /// Polls `condition` for up to 30 s of real time (10 s ran out in the first minute of a fresh-clone run,
    /// when every test of the suite starts at once on two cores).
    func until(_ what: String, _ condition: () -> Bool) async throws {
        let end = Date().addingTimeInterval(30)
        while !condition() {
            guard Date() < end else {
                Issue.record("timed out waiting for \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the delivery decided on attempt `attempt` (its log line: the attempt's own timeout sleeper is
    /// gone by then), and then until the only sleeper on `clock` waits `seconds` from now: the policy's pause.
    /// (Waiting on the deadline alone is a race: the attempt's timeout can have the same deadline.)
    @discardableResult
    func pause(_ clock: FakeClock, _ seconds: TimeInterval, after attempt: Int) async throws -> Date {
        try await until("attempt \(attempt) to be answered") {
            logs.entries.contains { $0.message.description.contains("trying again") && $0.metadata["attempt"] == "\(attempt)" }
        }
        let deadline = clock.now().addingTimeInterval(seconds)
        try await until("a pause of \(seconds) s") { clock.deadlines == [deadline] }
        return deadline
    }

    /// Moves the clock to just before `deadline` (nothing may happen), then to it.
    func approach(_ clock: FakeClock, _ deadline: Date, check: () -> Void) async throws {
        clock.set(deadline.addingTimeInterval(-0.1))
        try await Task.sleep(for: .milliseconds(200))
        check()
        clock.set(deadline)
    }

    let occurrence = KnownOccurrence(key: OccurrenceKey(owner: "jen-laptop", alarmID: 1, at: 1_800_000_000), label: "Wake\u{1B}[31m up",
                                     time: "05:00", targets: [])

    func delivery(_ clock: FakeClock, port: Int, tokenDirectory: URL? = nil) throws -> BackupDelivery {
        let dir = tokenDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let token = dir.appendingPathComponent("token")
        try "tok-123\n".write(to: token, atomically: true, encoding: .utf8)
        return BackupDelivery(http: AsyncHTTPOutbound(), clock: clock, wording: .init(household: "Jen's family"), pushTokenFile: nil,
                              phone: PhoneSettings(url: "http://127.0.0.1:\(port)", account: "AC42", tokenFile: token.path, from: "+15550001111"),
                              logger: Logger(label: "test") { [logs] _ in logs })
    }

    let logs = InMemoryLogHandler()

    @Test("503, 503, then 200: tried again after 5 s and after 10 s (not a moment before), sent on the third attempt")
    func serviceUnavailable() async throws {
        try await server(["503", "503", "200"]) { server in
            let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_120))
            let d = try delivery(clock, port: server.port)
            let request = try d.request(for: .push("http://127.0.0.1:\(server.port)/jen"), occurrence: occurrence).get()
            let task = Task { await d.deliver(request, what: "push") }
            try await until("the first attempt") { server.requests.count == 1 }
            try await approach(clock, try await pause(clock, 5, after: 1)) { #expect(server.requests.count == 1, "no retry before 5 s") }
            try await until("the second attempt") { server.requests.count == 2 }
            try await approach(clock, try await pause(clock, 10, after: 2)) { #expect(server.requests.count == 2, "no retry before 10 s") }
            #expect(await task.value == .sent(attempts: 3))
            let first = server.requests[0]
            let headers = first["headers"] as? [String: String] ?? [:]
            #expect(first["path"] as? String == "/jen")
            #expect(headers["Priority"] == "urgent" && headers["Tags"] == "alarm_clock,rotating_light")
            #expect(headers["Title"] == "Backup alarm 05:00 — jen-laptop".replacingOccurrences(of: "—", with: "-"))
            let body = first["body"] as? String ?? ""
            #expect(body.contains("Wake\\x1b[31m up"), "the label is escaped: \(body)")
            #expect(body.contains("This is an automated backup alarm from Jen's family's jen-laptop."))
        }
    }

    @Test("429 with Retry-After: 7 waits 7 s; then the call goes through with the account's basic auth and the form")
    func rateLimited() async throws {
        try await server(["429:7", "200"]) { server in
            let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_120))
            let d = try delivery(clock, port: server.port)
            let request = try d.request(for: .phone("+15551234567"), occurrence: occurrence).get()
            let task = Task { await d.deliver(request, what: "call") }
            try await until("the first attempt") { server.requests.count == 1 }
            try await approach(clock, try await pause(clock, 7, after: 1)) { #expect(server.requests.count == 1, "no retry before Retry-After") }
            #expect(await task.value == .sent(attempts: 2))
            let call = server.requests[1]
            let headers = call["headers"] as? [String: String] ?? [:]
            #expect(call["path"] as? String == "/2010-04-01/Accounts/AC42/Calls.json")
            #expect(headers["Authorization"] == "Basic " + Data("AC42:tok-123".utf8).base64EncodedString())
            #expect(headers["Content-Type"] == "application/x-www-form-urlencoded")
            let body = call["body"] as? String ?? ""
            #expect(body.hasPrefix("To=%2B15551234567&From=%2B15550001111&Twiml=%3CResponse%3E%3CSay"), "\(body)")
        }
    }

    @Test("401: stops at once, credentials refused, one request only")
    func unauthorized() async throws {
        try await server(["401"]) { server in
            let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_120))
            let d = try delivery(clock, port: server.port)
            let request = try d.request(for: .phone("+15551234567"), occurrence: occurrence).get()
            let outcome = await d.deliver(request, what: "call")
            #expect(outcome == .failed(reason: "the credentials were refused (HTTP 401)", credentialsRefused: true))
            #expect(server.requests.count == 1)
        }
    }

    @Test("no answer: the attempt gives up after 10 s on the clock, then 5 s later the retry succeeds")
    func timeout() async throws {
        try await server(["hang", "200"]) { server in
            let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_120))
            let d = try delivery(clock, port: server.port)
            let request = try d.request(for: .push("http://127.0.0.1:\(server.port)/jen"), occurrence: occurrence).get()
            let task = Task { await d.deliver(request, what: "push") }
            try await until("the first attempt") { server.requests.count == 1 }
            // The attempt's own timeout: the only sleeper once the server has the request.
            let timeout = clock.now().addingTimeInterval(10)
            try await until("the attempt's timeout") { clock.deadlines == [timeout] }
            clock.set(timeout)
            clock.set(try await pause(clock, 5, after: 1))
            #expect(await task.value == .sent(attempts: 2))
            #expect(server.requests.count == 2)
        }
    }

    @Test("a phone target without a [phone] account cannot be sent, and says why")
    func noAccount() {
        let d = BackupDelivery(http: AsyncHTTPOutbound(), clock: FakeClock(Date()), wording: .init(household: nil), pushTokenFile: nil, phone: nil,
                               logger: Logger(label: "test"))
        #expect(throws: ConfigurationError.self) { _ = try d.request(for: .phone("+15551234567"), occurrence: occurrence).get() }
        #expect(BackupDelivery.Wording(household: nil).callMessage(owner: "jen-laptop") == "This is an automated backup alarm from jen-laptop.")
    }
}
