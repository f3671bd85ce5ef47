import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

@Suite("HID remotes in the agent: key downs and ups → gestures → the dose policy", .timeLimit(.minutes(1)))
struct HIDButtonServiceTests {
    static let address = "2A:07:98:10:34:8B"

    /// Times are all on the fake clock (never the wall clock), so a slow machine cannot make a press stale.
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)

    func service(noDouble: Bool = false, battery: BatteryStatus? = nil, events: EventBus? = nil,
                 logger: Logger = Logger(label: "t")) throws -> (ButtonPipeline, DoseRepository) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-hid-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        var mapping = ButtonMapping()
        mapping.noDouble = noDouble
        try ButtonRepository(database: db).save(try ButtonConfig(address: Self.address, kind: .hid, name: "shutter", mapping: mapping))
        let repo = DoseRepository(database: db)
        let s = ButtonService(sources: [], buttons: ButtonRepository(database: db),
                              doses: DoseUseCases(repository: repo, clock: clock, battery: { battery }, events: events),
                              samples: BatterySampleRepository(database: db), events: events,
                              clock: clock, logger: logger, databaseChanges: nil)
        return (s.pipeline, repo)
    }

    func recorded(_ outcomes: [DoseOutcome]) -> Int {
        outcomes.filter { if case .recorded = $0 { true } else { false } }.count
    }

    @Test("a click: nothing until the double window passes, then Dose 1 — on the pipeline's own timer, moved by the fake clock")
    func click() async throws {
        let bus = EventBus()
        let events = bus.subscribe()
        let (s, repo) = try service(events: bus)
        let now = clock.now()
        #expect(s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: now)))).isEmpty)
        #expect(s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .up(at: now.addingTimeInterval(0.1))))).isEmpty)
        await clock.waitForSleepers(1)
        // Inside the double window (0.5 s after the release): the timer still sleeps, nothing is recorded.
        clock.set(now.addingTimeInterval(0.55))
        #expect(clock.sleeperCount == 1)
        #expect(try repo.count() == 0)
        // Past it: the timer resolves the single → Dose 1.
        clock.set(now.addingTimeInterval(0.7))
        let recorded = await events.first { if case .doseRecorded = $0 { true } else { false } }
        guard case .doseRecorded(let event, _, _, _)? = recorded else { Issue.record("no dose recorded"); return }
        #expect(event.source == .button)
        #expect(try repo.count() == 1)
    }

    @Test("no-double mode: the click acts at its release")
    func noDouble() async throws {
        let (s, repo) = try service(noDouble: true)
        let now = clock.now()
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: now))))
        #expect(recorded(s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .up(at: now.addingTimeInterval(0.1)))))) == 1)
        #expect(try repo.count() == 1)
    }

    @Test("presses queued while the remote was away (old kernel timestamps) never log a dose")
    func stale() async throws {
        let (s, repo) = try service(noDouble: true)
        let old = clock.now().addingTimeInterval(-10)
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: old))))
        let outcomes = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .up(at: old.addingTimeInterval(0.1)))))
        guard case .refused(let refusal, _)? = outcomes.first else { Issue.record("not refused: \(outcomes)"); return }
        #expect(refusal.code == .staleInput)
        #expect(try repo.count() == 0)
    }

    @Test("a remote that was not added does nothing")
    func stranger() async throws {
        let (s, repo) = try service(noDouble: true)
        let now = clock.now()
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: "11:22:33:44:55:66", .down(at: now))))
        #expect(s.handle(ButtonSignal(HIDButtonEvent.signal(address: "11:22:33:44:55:66", .up(at: now.addingTimeInterval(0.1))))).isEmpty)
        #expect(try repo.count() == 0)
    }

    @Test("hold → undo of the Dose 1 just taken, recognised by the timer while the key is still down")
    func hold() async throws {
        let bus = EventBus()
        let events = bus.subscribe()
        let (s, repo) = try service(noDouble: true, events: bus)
        let now = clock.now()
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: now))))
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .up(at: now.addingTimeInterval(0.1)))))
        let start = now.addingTimeInterval(0.5)
        clock.set(start)
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: start))))
        await clock.waitForSleepers(1)
        clock.set(start.addingTimeInterval(0.9))
        #expect(try repo.status(now: clock.now(), timeZone: clock.timeZone).phase != .idle)
        // Held 1 s: the hold is recognised (at 1.0 s) by the timer, which wakes a millisecond past its deadline.
        clock.set(start.addingTimeInterval(1.001))
        var recorded = 0
        for await event in events {
            if case .doseRecorded = event { recorded += 1 }
            if recorded == 2 { break }
        }
        #expect(try repo.status(now: clock.now(), timeZone: clock.timeZone).phase == .idle)
    }

    @Test("a press that records Dose 1 on a draining battery carries the battery-at-reminder nudge (log, feedback, event)")
    func dose1Nudge() async throws {
        // 34 % at 8 %/h: 12 % left at the reminder 165 min later.
        let draining = BatteryStatus(state: PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4),
                                                            .mains(online: false)]),
                                     drain: DrainEstimate(percentPerHour: 8, source: .hardware))
        let bus = EventBus()
        let events = bus.subscribe()
        let logs = InMemoryLogHandler()
        let (s, _) = try service(noDouble: true, battery: draining, events: bus, logger: Logger(label: "t") { _ in logs })
        let now = clock.now()
        _ = s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .down(at: now))))
        #expect(recorded(s.handle(ButtonSignal(HIDButtonEvent.signal(address: Self.address, .up(at: now.addingTimeInterval(0.1)))))) == 1)
        #expect(logs.entries.contains { $0.level == .warning && $0.message.description == "Low Battery Warning: Estimated battery at reminder: 12% — Consider plugging in." })
        bus.finish()
        var nudges: [String] = []
        for await event in events {
            if case .doseRecorded(let e, _, _, let nudge) = event, e.source == .button { nudges.append(nudge?.headline ?? "none") }
        }
        #expect(nudges == ["Estimated battery at reminder: 12%"])
    }
}
