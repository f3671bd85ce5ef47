import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Synchronization
import Testing

/// The button pipeline on the fake clock: its timers (gesture windows, the flood queue) wait on the
/// scheduling port, so every test here moves time itself and none sleeps.
@Suite("Button pipeline: one signal stream, timers on the scheduling port, events out", .timeLimit(.minutes(1)))
struct ButtonPipelineTests {
    static let remote = "2A:07:98:10:34:8B"
    static let bthome = "A4:C1:38:8D:18:B2"
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)

    struct World {
        let pipeline: ButtonPipeline
        let repo: DoseRepository
        let samples: BatterySampleRepository
        let bus: EventBus
        let events: AsyncStream<AgentEvent>
    }

    func world(noDouble: Bool = false, observer: (@Sendable (ButtonIntent) -> Void)? = nil) throws -> World {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-pipeline-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        var mapping = ButtonMapping()
        mapping.noDouble = noDouble
        let buttons = [try ButtonConfig(address: Self.remote, kind: .hid, name: "shutter", mapping: mapping),
                       try ButtonConfig(address: Self.bthome, kind: .bthome, name: "bedside", mapping: mapping),
                       try ButtonConfig(address: "FF:FF:10:0E:8A:2C", kind: .itag, name: "tag", mapping: mapping)]
        let repo = DoseRepository(database: db)
        let bus = EventBus()
        let events = bus.subscribe()
        let samples = BatterySampleRepository(database: db)
        let pipeline = ButtonPipeline(buttons: buttons, doses: DoseUseCases(repository: repo, clock: clock, events: bus),
                                      samples: samples, events: bus, clock: clock, logger: Logger(label: "t"), observer: observer)
        return World(pipeline: pipeline, repo: repo, samples: samples, bus: bus, events: events)
    }

    func key(_ signal: KeySignal, address: String = remote, kind: ButtonKind = .hid) -> ButtonSignal {
        .key(address: address, kind: kind, signal)
    }

    func next(_ events: AsyncStream<AgentEvent>, _ match: (AgentEvent) -> Bool) async -> AgentEvent? {
        for await event in events where match(event) { return event }
        return nil
    }

    static func isRecorded(_ e: AgentEvent) -> Bool { if case .doseRecorded = e { true } else { false } }
    static func isRefused(_ e: AgentEvent) -> Bool { if case .doseRefused = e { true } else { false } }

    @Test("a wall-clock step back during the double window resolves the single at once instead of waiting out the step")
    func clockStepBack() async throws {
        let w = try world()
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        _ = w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1))))
        await clock.waitForSleepers(1)
        #expect(try w.repo.count() == 0)
        clock.step(to: now.addingTimeInterval(-3600))
        // Decided at once, though the clock now reads an hour before the press (the policy then refuses
        // it as an hour-old input, in the future): what matters here is that the timer did not wait an hour.
        let decided = await next(w.events) { Self.isRecorded($0) || Self.isRefused($0) }
        #expect(decided != nil)
        #expect(clock.sleeperCount == 0)
    }

    @Test("a wall-clock step forward past the window: the single is decided at once, on the stepped clock")
    func clockStepForward() async throws {
        let w = try world()
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        _ = w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1))))
        await clock.waitForSleepers(1)
        clock.step(to: now.addingTimeInterval(1))
        guard case .doseRecorded(let event, _, _, _)? = await next(w.events, Self.isRecorded) else {
            Issue.record("the single was not decided"); return
        }
        #expect(event.source == .button)
    }

    @Test("a new press replaces the button's pending timer: a double is one snooze, never a take and a snooze")
    func doubleReplacesTimer() async throws {
        let w = try world()
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        _ = w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1))))
        await clock.waitForSleepers(1)
        clock.set(now.addingTimeInterval(0.3))
        _ = w.pipeline.handle(key(.down(at: now.addingTimeInterval(0.3))))
        let outcomes = w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.4))))
        #expect(outcomes.count == 1)
        clock.advance(by: 5)
        // Nothing else is pending, and the one event is the snooze's refusal (no Dose 1 to snooze) — no take.
        #expect(clock.sleeperCount == 0)
        #expect(try w.repo.count() == 0)
        guard case .doseRefused? = await next(w.events, { Self.isRecorded($0) || Self.isRefused($0) }) else {
            Issue.record("expected the snooze to be refused"); return
        }
    }

    @Test("flood guard: up to 60 actions a minute act at once; the 61st waits 4 s on the port and is then refused as stale")
    func floodQueue() async throws {
        let w = try world(noDouble: true)
        let start = clock.now()
        for i in 0..<60 {
            let t = start.addingTimeInterval(Double(i) * 0.9)  // past the double window: each press is its own single
            clock.set(t)
            _ = w.pipeline.handle(key(.down(at: t)))
            #expect(w.pipeline.handle(key(.up(at: t.addingTimeInterval(0.1)))).count == 1, "action \(i + 1) acts at once")
        }
        let t = start.addingTimeInterval(54)
        clock.set(t)
        _ = w.pipeline.handle(key(.down(at: t)))
        #expect(w.pipeline.handle(key(.up(at: t.addingTimeInterval(0.1)))).isEmpty, "the 61st is queued")
        await clock.waitForSleepers(1)
        // Drain the 60 decisions already published.
        var decided = 0
        for await event in w.events where Self.isRecorded(event) || Self.isRefused(event) {
            decided += 1
            if decided == 60 { break }
        }
        clock.advance(by: 3.9)
        #expect(clock.sleeperCount == 1, "still queued")
        clock.advance(by: 0.2)
        guard case .doseRefused(let refusal, let source)? = await next(w.events, { Self.isRecorded($0) || Self.isRefused($0) }) else {
            Issue.record("the queued action was never decided"); return
        }
        #expect(refusal.code == .staleInput)
        #expect(source == .button)
        #expect(try w.repo.count() == 1)  // the first press's Dose 1, nothing from the flood
    }

    @Test("every gesture is published as buttonPressed; a button battery as buttonBattery and a sample, at most every 10 minutes")
    func pressAndBatteryEvents() async throws {
        let w = try world(noDouble: true)
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        _ = w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1))))
        guard case .buttonPressed(let address, let gesture)? = await next(w.events, { if case .buttonPressed = $0 { true } else { false } }) else {
            Issue.record("no buttonPressed"); return
        }
        #expect(address == Self.remote)
        #expect(gesture == "single")
        _ = w.pipeline.handle(.battery(address: "FF:FF:10:0E:8A:2C", kind: .itag, level: 80, at: now))
        _ = w.pipeline.handle(.battery(address: "FF:FF:10:0E:8A:2C", kind: .itag, level: 79, at: now.addingTimeInterval(599)))
        _ = w.pipeline.handle(.battery(address: "FF:FF:10:0E:8A:2C", kind: .itag, level: 150, at: now.addingTimeInterval(600)))
        var levels: [Double] = []
        for await event in w.events {
            if case .buttonBattery(let name, let level) = event {
                #expect(name == "tag")
                levels.append(level)
            }
            if levels.count == 2 { break }
        }
        #expect(levels == [80, 100])
        #expect(try w.samples.latestLevels()["button:tag"]?.level == 100)
    }

    @Test("a signal of a button that was not added, or of the wrong kind, does nothing")
    func strangers() async throws {
        let w = try world(noDouble: true)
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now), address: "11:22:33:44:55:66"))
        #expect(w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1)), address: "11:22:33:44:55:66")).isEmpty)
        // The BTHome button's address, sent as a raw key: BTHome buttons classify their own presses.
        _ = w.pipeline.handle(key(.down(at: now), address: Self.bthome))
        #expect(w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1)), address: Self.bthome)).isEmpty)
        #expect(w.pipeline.handle(.battery(address: "11:22:33:44:55:66", kind: .itag, level: 5, at: now)).isEmpty)
        #expect(try w.repo.count() == 0)
        #expect(try w.samples.latestLevels().isEmpty)
    }

    @Test("a HID disconnect with a key down drops that press: it never grows into a hold")
    func interruptedPress() async throws {
        let w = try world(noDouble: true)
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        _ = w.pipeline.handle(.link(address: Self.remote, kind: .hid, .disconnected(reason: "removed", interruptedPress: true)))
        clock.advance(by: 2)
        #expect(w.pipeline.expireGestures(address: Self.remote, at: clock.now()).isEmpty)
        #expect(try w.repo.count() == 0)
    }

    @Test("observing (`button test`): gestures go to the observer; nothing is stored, no battery sample, no dose")
    func observing() async throws {
        let seen = Mutex<[ButtonGesture]>([])
        let w = try world(noDouble: true) { intent in seen.withLock { $0.append(intent.gesture) } }
        let now = clock.now()
        _ = w.pipeline.handle(key(.down(at: now)))
        #expect(w.pipeline.handle(key(.up(at: now.addingTimeInterval(0.1)))).isEmpty)
        _ = w.pipeline.handle(.battery(address: "FF:FF:10:0E:8A:2C", kind: .itag, level: 80, at: now))
        #expect(seen.withLock { $0 } == [.single])
        #expect(try w.repo.count() == 0)
        #expect(try w.samples.latestLevels().isEmpty)
    }
}

/// Feedback follows the events: what a person who acted away from a terminal hears, and who hears nothing.
@Suite("Dose input feedback from the event stream")
struct DoseInputFeedbackTests {
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)

    func recorded(source: InputSource, nudge: Nudge?) throws -> AgentEvent {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cue-\(UUID().uuidString)")
        let repo = DoseRepository(database: try DoseTapDatabase(directory: dir))
        let outcome = try DoseUseCases(repository: repo, clock: clock).submit(.take(confirmLate: false), source: source)
        guard case .recorded(let event, let confirmation, let status) = outcome.outcome else { throw FixtureError("not recorded") }
        return .doseRecorded(event, confirmation: confirmation, status: status, nudge: nudge)
    }

    @Test("button, notification, web and Home Assistant (mqtt) inputs are answered; the command line and the agent's own records are not")
    func whoIsAnswered() throws {
        for source in InputSource.allCases {
            let cue = DoseInputFeedback.cue(for: try recorded(source: source, nudge: nil))
            #expect((cue != nil) == [.button, .notification, .web, .mqtt].contains(source), "\(source)")
            #expect(cue?.event == .doseRecorded || cue == nil)
        }
        let refusal = DoseRefusal(code: .staleInput, message: "Ignored: the press is 9 s old; a delayed input never records a dose")
        #expect(DoseInputFeedback.cue(for: .doseRefused(refusal, source: .button)) ==
                DoseInputFeedback.Cue(event: .actionRejected, title: refusal.message, body: ""))
        #expect(DoseInputFeedback.cue(for: .doseRefused(refusal, source: .cli)) == nil)
        #expect(DoseInputFeedback.cue(for: .settingsChanged) == nil)
    }

    @Test("a Dose 1 with the battery nudge plays it as the body of the confirmation")
    func nudgeInBody() throws {
        let nudge = Nudge(severity: .warning, header: "Low Battery Warning", headline: "Estimated battery at reminder: 12%", action: "Consider plugging in.", color: .orange)
        let cue = try #require(DoseInputFeedback.cue(for: try recorded(source: .button, nudge: nudge)))
        #expect(cue.body == nudge.oneLine)
        #expect(cue.title.hasPrefix("Dose 1"))
    }

    @Test("the service plays one cue per answered event, in order", .timeLimit(.minutes(1)))
    func service() async throws {
        let bus = EventBus()
        let played = AsyncStream<DoseInputFeedback.Cue>.makeStream()
        let feedback = DoseInputFeedback(events: bus) { played.continuation.yield($0) }
        let task = Task { try await feedback.run() }
        defer { task.cancel() }
        bus.publish(try recorded(source: .cli, nudge: nil))
        bus.publish(try recorded(source: .notification, nudge: nil))
        var iterator = played.stream.makeAsyncIterator()
        let cue = await iterator.next()
        #expect(cue?.event == .doseRecorded)
        #expect(cue?.title.hasPrefix("Dose 1") == true)
    }

    @Test("a Flic 2's own gestures: single → Dose 1; an old queued press refused as stale; while an alarm rings single Stops and double Snoozes; another kind or address does nothing")
    func flic2Gestures() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-pipeline-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        let flic = "80:E4:DA:70:12:34"
        let repo = DoseRepository(database: db)
        let alarms = FakeRingingAlarms()
        let pipeline = ButtonPipeline(buttons: [try ButtonConfig(address: flic, kind: .flic2, name: "nightstand",
                                                                 pairing: String(repeating: "0f", count: 20))],
                                      doses: DoseUseCases(repository: repo, clock: clock), samples: BatterySampleRepository(database: db),
                                      events: nil, clock: clock, logger: Logger(label: "t"), alarms: alarms)
        let now = clock.now()
        // Not the button's kind, not an added address: nothing.
        #expect(pipeline.handle(.gesture(address: flic, kind: .itag, .single, pressedAt: now)).isEmpty)
        #expect(pipeline.handle(.gesture(address: "80:E4:DA:70:99:99", kind: .flic2, .single, pressedAt: now)).isEmpty)
        // Queued while out of reach, two minutes old: refused by the one policy.
        let old = pipeline.handle(.gesture(address: flic, kind: .flic2, .single, pressedAt: now.addingTimeInterval(-120)))
        #expect(old.count == 1)
        if case .refused(let refusal, _)? = old.first { #expect(refusal.message.contains("120 s old")) } else { Issue.record("\(old)") }
        // Just pressed: Dose 1.
        let taken = pipeline.handle(.gesture(address: flic, kind: .flic2, .single, pressedAt: now))
        #expect(taken.count == 1 && { if case .recorded = taken[0] { true } else { false } }())
        #expect(try repo.count() == 1)
        // While an alarm rings: a press queued minutes ago answers nothing; double Snoozes, single Stops, hold does
        // nothing; never a dose.
        alarms.ringing.withLock { $0 = true }
        #expect(pipeline.handle(.gesture(address: flic, kind: .flic2, .single, pressedAt: now.addingTimeInterval(-120))).isEmpty)
        #expect(alarms.answers.withLock { $0 }.isEmpty && alarms.isRinging)
        #expect(pipeline.handle(.gesture(address: flic, kind: .flic2, .double, pressedAt: now)).isEmpty)
        alarms.ringing.withLock { $0 = true }
        #expect(pipeline.handle(.gesture(address: flic, kind: .flic2, .hold, pressedAt: now)).isEmpty)
        #expect(pipeline.handle(.gesture(address: flic, kind: .flic2, .single, pressedAt: now)).isEmpty)
        #expect(alarms.answers.withLock { $0 } == ["snooze:button", "stop:button"])
        #expect(try repo.count() == 1)
        // The battery, as a sample of button:<name>.
        _ = pipeline.handle(.battery(address: flic, kind: .flic2, level: 80, at: now))
        #expect(try BatterySampleRepository(database: db).latestLevels()["button:nightstand"]?.level == 80)
    }
}
