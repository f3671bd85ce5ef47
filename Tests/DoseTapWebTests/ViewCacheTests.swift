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
import Synchronization
import Testing

/// The rendered views the dashboard keeps (`ViewCache`): never older than the store, the agent's events or
/// the minute at which their text changes, and never another session's.
@Suite("Web: kept views follow the store, the events and the time")
struct ViewCacheTests {
    func renders(_ f: WebFixture) -> Int { f.dashboard.views.renders.load(ordering: .relaxed) }

    @Test("a dose taken by another connection (the command line, a button) is on the next page and API answer at once")
    func storeChange() async throws {
        let f = try WebFixture()
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            let first = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(first.text.contains("No Dose 1 yet"))
            let api = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(api.json["phase"] as? String == "idle")
            // Nothing changed: the page and the answer are the kept ones.
            let drawn = renders(f)
            let again = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            let apiAgain = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(again.text == first.text && apiAgain.text == api.text)
            #expect(renders(f) == drawn)
            // Another connection to the same file writes (what `dosetap dose take` does), and the very next
            // request — no waiting — shows it.
            let other = try MachinePorts.doses(store: DataStore(directory: f.dir), clock: f.clock)
            _ = try other.submit(.take(confirmLate: false), source: .cli)
            let after = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(after.text.contains("<dt>Dose 1</dt><dd>14:13</dd>") && after.text.contains("Waiting for the Dose 2 window"))
            let apiAfter = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(apiAfter.json["phase"] as? String == "waiting")
            // The same for an alarm added elsewhere: the Alarms page and /api/alarms.
            let alarms = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            #expect((alarms.json["alarms"] as? [Any])?.isEmpty == true)
            _ = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            _ = try AlarmUseCases(store: DataStore(directory: f.dir), clock: f.clock, battery: { nil }).add(.init(time: "06:30", label: "Work"))
            let listed = try await client.execute(uri: "/api/alarms", method: .get, headers: headers(cookie))
            #expect((listed.json["alarms"] as? [[String: Any]])?.first?["label"] as? String == "Work")
            let page = try await client.execute(uri: "/alarms", method: .get, headers: headers(cookie))
            #expect(page.text.contains("<span class=\"label\">Work</span>"))
        }
    }

    @Test("time passing: minutes left change at the night's own minute (Dose 1's second), not only at the wall clock's")
    func timePassing() async throws {
        let f = try WebFixture() // 14:13:20 UTC
        _ = try f.doses.submit(.take(confirmLate: false), source: .cli) // Dose 1 at 14:13:20: the window closes at 18:13:20
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            f.clock.advance(by: 150 * 60 + 10) // 16:43:30: 89 min 50 s left
            let open = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(open.text.contains("<dt>Minutes left</dt><dd>90 min</dd>") && open.text.contains("Dose 2 window open"))
            f.clock.advance(by: 45) // 16:44:15: 89 min 5 s left, still "90 min"
            let same = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(same.text.contains("<dd>90 min</dd>"))
            let drawn = renders(f)
            f.clock.advance(by: 4) // 16:44:19: the same minute of the night: the kept page
            _ = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(renders(f) == drawn)
            f.clock.advance(by: 6) // 16:44:25, past 16:44:20 (no new wall-clock minute): 88 min 55 s left
            let next = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(next.text.contains("<dt>Minutes left</dt><dd>89 min</dd>"))
            let api = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(api.json["minutesRemaining"] as? Int == 89)
            f.clock.advance(by: 75 * 60) // 17:59:25: 14 min left, closing soon
            let closing = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(closing.text.contains("Dose 2 window closing soon") && closing.text.contains("<dd>14 min</dd>"))
            let apiClosing = try await client.execute(uri: "/api/tonight", method: .get, headers: headers(cookie))
            #expect(apiClosing.json["phase"] as? String == "near-close" && apiClosing.json["minutesRemaining"] as? Int == 14)
        }
    }

    @Test("an event of the agent (a press) is on the next page; each session gets its own page and token")
    func eventsAndSessions() async throws {
        let f = try WebFixture()
        _ = try f.buttons.useCases.add(address: "3C:2E:F5:00:11:22", kind: .itag, name: "Bedside", bindkey: nil)
        try await f.application.test(.router) { client in
            let (cookie, csrf) = try await f.pair(client)
            let before = try await client.execute(uri: "/buttons", method: .get, headers: headers(cookie))
            #expect(before.text.contains("Bedside") && !before.text.contains("hold at 14:13"))
            f.dashboard.remember(.buttonPressed(address: "3C:2E:F5:00:11:22", gesture: "hold"))
            let after = try await client.execute(uri: "/buttons", method: .get, headers: headers(cookie))
            #expect(after.text.contains("hold at 14:13"))
            // A second browser: its own token in every form, never the first one's.
            let (otherCookie, otherCSRF) = try await f.pair(client)
            #expect(otherCSRF != csrf)
            for path in ["/", "/alarms", "/buttons", "/batteries", "/sounds"] {
                let mine = try await client.execute(uri: path, method: .get, headers: headers(cookie))
                let theirs = try await client.execute(uri: path, method: .get, headers: headers(otherCookie))
                #expect(mine.text.contains("value=\"\(csrf)\"") && !mine.text.contains(otherCSRF), "\(path)")
                #expect(theirs.text.contains("value=\"\(otherCSRF)\"") && !theirs.text.contains(csrf), "\(path)")
            }
            // A page with a message (the flash cookie) is drawn for it, and the next one is kept again.
            let posted = try await client.execute(uri: "/tonight/take", method: .post, headers: formHeaders(cookie),
                                                  body: ByteBuffer(string: "csrf=\(csrf)"))
            let flash = String(try #require(posted.headers[.setCookie]).split(separator: ";")[0])
            let withFlash = try await client.execute(uri: "/", method: .get, headers: headers(cookie + "; " + flash))
            #expect(withFlash.text.contains("<strong>Recorded:</strong> Dose 1 taken at 14:13"))
            let plain = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(!plain.text.contains("Recorded:") && plain.text.contains("<dt>Dose 1</dt>"))
        }
    }

    @Test("without a store generation (a folder that cannot be watched) nothing is kept")
    func noWatch() async throws {
        let f = try WebFixture(cached: false)
        try await f.application.test(.router) { client in
            let (cookie, _) = try await f.pair(client)
            _ = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            _ = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(renders(f) == 0)
            _ = try MachinePorts.doses(store: DataStore(directory: f.dir), clock: f.clock).submit(.take(confirmLate: false), source: .cli)
            let after = try await client.execute(uri: "/", method: .get, headers: headers(cookie))
            #expect(after.text.contains("<dt>Dose 1</dt>"))
        }
    }

    @Test("the next minute, counted from an anchor's second and never past the wall clock's")
    func nextMinute() {
        let now = Date(timeIntervalSince1970: 1_790_000_000) // 14:13:20
        #expect(ViewCache.nextMinute(after: now) == Date(timeIntervalSince1970: 1_790_000_040)) // 14:14:00
        #expect(ViewCache.nextMinute(after: now, anchoredAt: now.addingTimeInterval(-3600 + 7)) == now.addingTimeInterval(7)) // :27
        #expect(ViewCache.nextMinute(after: now, anchoredAt: now.addingTimeInterval(-3600 - 5)) == Date(timeIntervalSince1970: 1_790_000_040))
        #expect(ViewCache.nextMinute(after: now, anchoredAt: now) == Date(timeIntervalSince1970: 1_790_000_040)) // :20 → next :20 is later
    }
}

/// A catalog that counts its listings and can be told to fail.
final class CountingCatalog: SoundCatalog {
    let calls = Mutex(0)
    let failing = Mutex(false)
    let sounds = Mutex([WebFixture.bell])

    func list() throws -> [SoundInfo] {
        calls.withLock { $0 += 1 }
        if failing.withLock({ $0 }) { throw SoundCatalogFailure() }
        return sounds.withLock { $0 }
    }

    struct SoundCatalogFailure: Error {}
}

@Suite("The settings screens' sound listing: at most a second old")
struct RecentSoundCatalogTests {
    @Test("one walk a second; a removed sound is gone after it; a failure is not kept")
    func ages() throws {
        let base = CountingCatalog()
        let start = ContinuousClock.now
        let offset = Mutex(Duration.zero)
        let catalog = RecentSoundCatalog(base, now: { start + offset.withLock { $0 } })
        #expect(try catalog.list().map(\.name) == ["bell"])
        offset.withLock { $0 = .milliseconds(900) }
        base.sounds.withLock { $0 = [] } // the theme was removed
        #expect(try catalog.list().map(\.name) == ["bell"])
        #expect(base.calls.withLock { $0 } == 1)
        offset.withLock { $0 = .milliseconds(1000) }
        #expect(try catalog.list().isEmpty)
        #expect(base.calls.withLock { $0 } == 2)
        offset.withLock { $0 = .milliseconds(2100) }
        base.failing.withLock { $0 = true }
        #expect(throws: CountingCatalog.SoundCatalogFailure.self) { try catalog.list() }
        base.failing.withLock { $0 = false }
        #expect(try catalog.list().isEmpty)
        #expect(base.calls.withLock { $0 } == 4)
    }
}
