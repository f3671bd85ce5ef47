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

/// The overnight re-check as a service: battery readings on the event bus in, `battery-nudge` out.
@Suite("AlarmRiskMonitor")
struct AlarmRiskMonitorTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000) // 2027-01-15 08:00 UTC

    /// A value shared with the monitor's closures.
    final class Box<T: Sendable>: Sendable {
        private let value: Mutex<T>
        init(_ value: T) { self.value = Mutex(value) }
        func get() -> T { value.withLock { $0 } }
        func update(_ body: @Sendable (inout T) -> Void) { value.withLock { body(&$0) } }
    }

    /// A monitor over in-memory alarms and marks; what it plays is recorded.
    final class Harness: Sendable {
        let bus = EventBus()
        let marks: Box<[AlarmRiskTracker.Mark]>
        let played = Box<[AlarmRiskTracker.Step]>([])
        let saves = Box(0)
        let monitor: AlarmRiskMonitor
        let task = Box<Task<Void, any Error>?>(nil)
        let clock: FakeClock
        let logs = InMemoryLogHandler()
        /// Each nudge as it plays (a test awaits the one a timer plays).
        let plays: AsyncStream<AlarmRiskTracker.Step>

        init(_ alarms: [Alarm], marks: [AlarmRiskTracker.Mark] = [], now: Date = AlarmRiskMonitorTests.now,
             guardMode: SleepGuardMode = .off, guardian: AlarmRiskMonitor.Guardian? = nil) {
            let m = Box(marks)
            self.marks = m
            let (p, s) = (played, saves)
            let clock = FakeClock(now)
            self.clock = clock
            let (stream, continuation) = AsyncStream<AlarmRiskTracker.Step>.makeStream()
            plays = stream
            let logs = self.logs
            monitor = AlarmRiskMonitor(
                events: bus, alarms: { alarms }, clock: clock,
                logger: Logger(label: "test") { _ in logs },
                load: { m.get() },
                save: { new in
                    m.update { $0 = new }
                    s.update { $0 += 1 }
                },
                guardMode: { guardMode }, guardian: guardian,
                play: { step in
                    p.update { $0.append(step) }
                    continuation.yield(step)
                })
        }

        func start() {
            let monitor = self.monitor
            task.update { $0 = Task { try await monitor.run() } }
        }

        /// Ends the bus and waits until every reading published before has been handled.
        func finish() async throws {
            bus.finish()
            let running = task.get()
            try await running?.value
        }

        func read(level: Int, drain: Double? = 10, onAC: Bool = false, at: Date = AlarmRiskMonitorTests.now, night: NightOutlook? = nil) {
            let supplies: [RawPowerSupply] = onAC
                ? [.battery(status: "Charging", capacity: level), .mains(online: true)]
                : [.battery(capacity: level), .mains(online: false)]
            let status = BatteryStatus(state: PowerState(raw: supplies),
                                       drain: DrainEstimate(percentPerHour: drain, source: drain == nil ? .unknown : .hardware), night: night)
            bus.publish(.batteryReading(status, at: at))
        }

        /// A reading with the nights of a fresh install that can wake itself (#52: decided by the deadline).
        func readFresh(level: Int, onAC: Bool = false, at: Date = AlarmRiskMonitorTests.now) {
            read(level: level, onAC: onAC, at: at, night: AlarmRiskMonitorTests.fresh)
        }

        var severities: [Nudge.Severity] { played.get().map(\.nudge.severity) }
    }

    /// Daily at 10:00 UTC: 2 h after `now`. At 10 %/h a level L predicts L − 20.
    static func alarm(_ id: Int = 1, _ time: String = "10:00", enabled: Bool = true) throws -> Alarm {
        try Alarm(id: id, time: TimeOfDay(parsing: time), label: "Work", repetition: .daily, enabled: enabled)
    }

    @Test("readings drain the battery: safe → warning → critical, one nudge per step, none repeated")
    func steps() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        for level in [60, 45, 40, 38, 35, 26, 25, 24, 22, 21] { h.read(level: level) }
        try await h.finish()
        // 40 → 20 % warning (38 → 18 again: nothing); 25 → 5 % critical; 22 → 2 % at the power-off level: still critical, nothing.
        #expect(h.severities == [.warning, .critical])
        let critical = try #require(h.played.get().last)
        #expect(critical.nudge.header == "Alarm at Risk")
        #expect(critical.nudge.headline == "Estimated battery at alarm: 5%")
        #expect(AlarmRiskMonitor.body(critical) == "Alarm 10:00 \"Work\": Estimated battery at alarm: 5% — Plug in now.")
    }

    @Test("toggled on already critical: no second nudge at once (the person saw it); plugging in resets")
    func baselineAndPlug() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        h.read(level: 22) // 2 %: critical at the power-off level — the baseline
        h.read(level: 21)
        h.read(level: 22, onAC: true)
        h.read(level: 30) // unplugged: 10 % warning
        h.read(level: 24) // 4 % critical
        try await h.finish()
        #expect(h.severities == [.warning, .critical])
    }

    @Test("unknown drain: nothing until the first known risk, which is news")
    func unknownDrain() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        h.read(level: 30, drain: nil)
        h.read(level: 30, drain: nil)
        h.read(level: 30, drain: 10) // 10 %: warning
        try await h.finish()
        #expect(h.severities == [.warning])
    }

    @Test("several alarms: only the one whose risk grew; disabled alarms are not followed")
    func several() async throws {
        // 10:00 is 2 h away, 16:00 is 8 h away, 09:00 off.
        let h = Harness([try Self.alarm(1, "10:00"), try Self.alarm(2, "16:00"), try Self.alarm(3, "09:00", enabled: false)])
        h.start()
        h.read(level: 100) // 80 % and 20 %: safe and warning (baseline)
        h.read(level: 84)  // 64 % and 4 %: critical for alarm 2 only
        try await h.finish()
        #expect(h.played.get().map(\.alarm.id) == [2])
        #expect(h.severities == [.critical])
    }

    @Test("a restart repeats nothing: the marks are kept before the nudge plays, and read back")
    func restart() async throws {
        let first = Harness([try Self.alarm()])
        first.start()
        first.read(level: 60)
        first.read(level: 38) // warning
        first.read(level: 38)
        try await first.finish()
        #expect(first.severities == [.warning])
        // Saved when something changed only (the baseline and the warning), not at every reading.
        #expect(first.saves.get() == 2)
        let second = Harness([try Self.alarm()], marks: first.marks.get())
        second.start()
        second.read(level: 38)
        second.read(level: 24) // critical: a new step
        try await second.finish()
        #expect(second.severities == [.critical])
    }

    // By the deadline (#52). The alarm at 10:00 is 2 h away; a fresh install (asleep at the 3 %/h prior, ringing 10 min at
    // the awake 10 %/h). At 50 %: awake until the alarm 50 − 21.7 = 28 % safe: no deadline. At 40 %: awake 18 % (warning),
    // asleep now 40 − 6 − 1.7 = 32 % safe; the deadline: 32.33 − 7 t = 21 → t = 1.619 h → 09:37:08; the timer 09:17:08.
    static let fresh = NightOutlook(learning: NightLearning(), conditions: NightConditions(canWake: true), timeZone: TimeZone(identifier: "UTC")!)
    static let deadline40 = Date(timeIntervalSince1970: 1_800_000_000 + 5_828)

    @Test("a fresh install's evening that sleep saves is silent; the timer at deadline − margin plays the nudge, not a second before")
    func timerAtTheDeadline() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        h.readFresh(level: 50) // safe even awake: no timer
        h.readFresh(level: 40) // the night model would say warning; the deadline says silence
        await h.clock.waitForSleepers(1)
        let due = Self.deadline40.addingTimeInterval(-NudgeDecision.margin)
        #expect(h.clock.deadlines == [due])
        h.clock.set(due.addingTimeInterval(-1))
        #expect(h.clock.sleeperCount == 1, "not yet")
        #expect(h.played.get().isEmpty)
        h.clock.set(due)
        var plays = h.plays.makeAsyncIterator()
        let step = try #require(await plays.next())
        #expect(step.nudge.severity == .warning)
        #expect(step.nudge.headline == "Estimated battery at alarm: 18%")
        #expect(step.nudge.deadlineText == "At risk unless this machine sleeps or is plugged in by 09:37.")
        #expect(AlarmRiskMonitor.body(step).hasSuffix("At risk unless this machine sleeps or is plugged in by 09:37."))
        try await h.finish()
        #expect(h.severities == [.warning])
    }

    @Test("a new reading moves the timer; a plug-in removes it; a suspend drops it until the next reading")
    func timerMoves() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        h.readFresh(level: 40)
        await h.clock.waitForSleepers(1)
        #expect(h.clock.deadlines == [Self.deadline40.addingTimeInterval(-NudgeDecision.margin)])
        // 10 minutes later at 38 % (faster than 10 %/h): asleep from then 38 − 5.5 − 1.67 = 30.83 %; 30.83 − 7 t = 21 →
        // t = 1.405 h: the deadline moves to 09:34:17 (from 09:37:08).
        h.readFresh(level: 38, at: Self.now.addingTimeInterval(600))
        let moved = Date(timeIntervalSince1970: 1_800_000_000 + 600 + 5_057).addingTimeInterval(-NudgeDecision.margin)
        while h.clock.deadlines != [moved] { await Task.yield() }
        h.readFresh(level: 38, onAC: true, at: Self.now.addingTimeInterval(660))
        while h.clock.sleeperCount != 0 { await Task.yield() }
        h.readFresh(level: 40, at: Self.now.addingTimeInterval(720))
        await h.clock.waitForSleepers(1)
        h.monitor.suspending()
        while h.clock.sleeperCount != 0 { await Task.yield() }
        h.clock.set(Self.deadline40)
        try await h.finish()
        #expect(h.played.get().isEmpty, "nothing played: each timer was moved or dropped before it came")
    }

    @Test("a timer that comes more than 5 minutes late (the machine slept unseen) decides nothing; at 5 minutes it still plays")
    func lateTimer() async throws {
        let due = Self.deadline40.addingTimeInterval(-NudgeDecision.margin)
        let onTime = Harness([try Self.alarm()])
        onTime.start()
        onTime.readFresh(level: 40)
        await onTime.clock.waitForSleepers(1)
        onTime.clock.set(due.addingTimeInterval(AlarmRiskMonitor.lateLimit))
        var plays = onTime.plays.makeAsyncIterator()
        #expect(await plays.next()?.nudge.deadlineText != nil)
        try await onTime.finish()

        let late = Harness([try Self.alarm()])
        late.start()
        late.readFresh(level: 40)
        await late.clock.waitForSleepers(1)
        late.clock.set(due.addingTimeInterval(AlarmRiskMonitor.lateLimit + 1))
        while !late.logs.entries.contains(where: { $0.message.description.contains("came late") }) { await Task.yield() }
        try await late.finish()
        #expect(late.played.get().isEmpty)
    }

    @Test("at risk even asleep at the first reading is the baseline (shown at alarm set); a later reading at risk asleep is news")
    func atRiskAsleepSteps() async throws {
        let h = Harness([try Self.alarm()])
        h.start()
        h.readFresh(level: 40) // silent: safe asleep
        h.readFresh(level: 28, at: Self.now.addingTimeInterval(60)) // asleep now: 28 − 6 − 1.7 = 20 %: warning, at risk asleep
        try await h.finish()
        #expect(h.severities == [.warning])
        #expect(h.played.get().first?.nudge.assumption == "if this machine sleeps from now until the alarm wakes it")
    }

    @Test("with the database: marks in the setting table, no migration; a clear forgets them")
    func repository() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-risk-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        let repository = AlarmRiskRepository(database: db)
        #expect(try repository.load().isEmpty)
        let marks = [AlarmRiskTracker.Mark(alarm: 1, setting: "06:30 daily", occurrence: Self.now, level: .warning)]
        try repository.save(marks)
        #expect(try repository.load() == marks)
        try db.clearAll()
        #expect(try repository.load().isEmpty)
    }
}
