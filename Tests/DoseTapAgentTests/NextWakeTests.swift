@testable import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Synchronization
import Logging
import Testing

/// A data folder with alarms and a night, for `Agent.nextWake`.
struct WakeSetup {
    static let zone = TimeZone(identifier: "America/New_York")!
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-wake-\(UUID().uuidString)")
    let database: DoseTapDatabase
    let alarms: AlarmRepository
    let doses: DoseRepository
    let clock: FakeClock

    init(now: String) throws {
        database = try DoseTapDatabase(directory: dir)
        alarms = AlarmRepository(database: database)
        doses = DoseRepository(database: database)
        clock = FakeClock(localDate(now + ":00", Self.zone), timeZone: Self.zone)
    }

    func alarm(_ time: String, enabled: Bool = true, repeat repetition: AlarmRepeat = .daily) throws {
        _ = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: time), repetition: repetition, enabled: enabled), now: clock.now())
    }

    func dose1(at local: String) throws {
        let at = localDate(local + ":00", Self.zone)
        _ = try doses.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: at), now: at, timeZone: Self.zone)
    }

    var nextWake: @Sendable () -> Date? {
        Agent.nextWake(alarms: alarms, doses: doses, clock: clock, logger: Logger(label: "t"))
    }

    func remove() { try? FileManager.default.removeItem(at: dir) }
}

@Suite("When the machine must next be awake (Agent.nextWake)")
struct NextWakeTests {
    let zone = WakeSetup.zone

    @Test("the earliest enabled alarm; a disabled one does not count; nothing at all is nil")
    func alarmsOnly() throws {
        let s = try WakeSetup(now: "2026-11-23 23:00")
        defer { s.remove() }
        #expect(s.nextWake() == nil)
        try s.alarm("05:00", enabled: false)
        #expect(s.nextWake() == nil)
        try s.alarm("06:30")
        try s.alarm("07:15")
        #expect(s.nextWake() == localDate("2026-11-24 06:30:00", zone))
    }

    @Test("tonight's next dose reminder comes first when it is earlier, then the next one after it has rung")
    func reminderFirst() throws {
        let s = try WakeSetup(now: "2026-11-23 22:30")
        defer { s.remove() }
        try s.alarm("06:30")
        try s.dose1(at: "2026-11-23 22:30")
        s.clock.set(localDate("2026-11-23 23:00:00", zone))
        // Dose 1 at 22:30: the window opens at 01:00 (150 min), the reminder is at 01:15 (165 min).
        #expect(s.nextWake() == localDate("2026-11-24 01:00:00", zone))
        s.clock.set(localDate("2026-11-24 01:05:00", zone))
        #expect(s.nextWake() == localDate("2026-11-24 01:15:00", zone))
        // After the window closed (02:30) and its reminder passed: the alarm.
        s.clock.set(localDate("2026-11-24 03:00:00", zone))
        #expect(s.nextWake() == localDate("2026-11-24 06:30:00", zone))
    }

    @Test("a snooze in progress is an occurrence too: the machine wakes for its end")
    func snooze() throws {
        let s = try WakeSetup(now: "2026-11-24 06:00")
        defer { s.remove() }
        try s.alarm("06:30")
        let rings = AlarmRingRepository(database: s.database)
        let due = localDate("2026-11-24 06:30:00", zone)
        let ring = try rings.start(.init(alarmID: 1, kind: .scheduled, dueAt: due), at: due)
        _ = try rings.end(ringID: ring.id, outcome: .snoozed, by: .button, at: due.addingTimeInterval(30),
                          snoozeUntil: due.addingTimeInterval(570))
        s.clock.set(due.addingTimeInterval(60))
        #expect(s.nextWake() == localDate("2026-11-24 06:39:30", zone))
        _ = try rings.start(.init(alarmID: 1, kind: .snooze, dueAt: due.addingTimeInterval(570)), at: due.addingTimeInterval(570))
        s.clock.set(due.addingTimeInterval(600))
        #expect(s.nextWake() == localDate("2026-11-25 06:30:00", zone), "the snooze rang: tomorrow's alarm")
    }

    @Test("WakeTarget: only instants after now, the earliest of all", arguments: [0.0, 59, 3600, 86_399])
    func pure(offset: Double) throws {
        let now = localDate("2026-03-08 01:00:00", zone)   // the spring-forward night in New York
        let alarm = try Alarm(id: 1, time: try TimeOfDay(parsing: "02:30"), repetition: .daily)
        let next = WakeTarget.next(alarms: [alarm], others: [now, now.addingTimeInterval(-5), now.addingTimeInterval(offset)], after: now, in: zone)
        // 02:30 does not exist that night: it rings at 03:00 EDT, one real hour after 01:00 EST.
        let alarmAt = localDate("2026-03-08 03:00:00", zone)
        #expect(alarmAt.timeIntervalSince(now) == 3600)
        #expect(next == (offset > 0 ? min(alarmAt, now.addingTimeInterval(offset)) : alarmAt))
    }
}

/// The RTC path end to end, under umockdev: logind (dbusmock) says the machine is about to sleep, the
/// sleep guard asks `Agent.nextWake` (a real database) and writes its epoch into the umockdev RTC's
/// `wakealarm`. Runs in its own process under `umockdev-wrapper` (scripts/run-tests.sh), like
/// `UdevFixtures`: a testbed replaces /sys for the whole process. Without the preload it fails.
@Suite("RTC wake alarm under umockdev", .serialized, .timeLimit(.minutes(1)))
struct SleepWakeFixtures {
    static let rtc = "/sys/class/rtc/rtc0/wakealarm"

    @Test("PrepareForSleep(true) writes the next due reminder's epoch to rtc0's wakealarm; with the reminder rung, the alarm's")
    func rtcWakeAlarm() async throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (scripts/run-tests.sh)")
        let testbed = UmockdevTestbed()
        try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("rtc/rtc_cmos.umockdev"), encoding: .utf8))
        defer { withExtendedLifetime(testbed) {} }
        #expect(try String(contentsOfFile: Self.rtc, encoding: .utf8) == "")

        let s = try WakeSetup(now: "2026-11-23 22:30")
        defer { s.remove() }
        try s.alarm("06:30")
        try s.dose1(at: "2026-11-23 22:30")
        s.clock.set(localDate("2026-11-23 23:00:00", WakeSetup.zone))
        // The RTC only: this process may well hold CAP_WAKE_ALARM, which would win.
        let wake = LinuxWakeAlarm(rtcPath: Self.rtc, makeTimer: nil, helperSocket: nil)
        #expect(wake.capability() == .success(.rtc(path: Self.rtc)))
        let logs = MockLogind.logs()
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let service = SleepGuardService(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: wake,
                                            nextWake: s.nextWake, clock: s.clock, logger: Logger(label: "t") { _ in logs })
            let running = Task { try await service.run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })

            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            // 30 s ahead of the window's opening (SleepGuardService.wakeLead).
            let windowOpens = Int(localDate("2026-11-24 01:00:00", WakeSetup.zone).timeIntervalSince1970) - 30
            #expect(try String(contentsOfFile: Self.rtc, encoding: .utf8) == "\(windowOpens)\n", "\(logs.entries.map(\.message))")

            // Resumed; the night ended (02:40); the next sleep wakes for the 06:30 alarm.
            try await MockLogind.emit(c, [.bool(false)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            s.clock.set(localDate("2026-11-24 02:40:00", WakeSetup.zone))
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            let alarm = Int(localDate("2026-11-24 06:30:00", WakeSetup.zone).timeIntervalSince1970) - 30
            #expect(try String(contentsOfFile: Self.rtc, encoding: .utf8) == "\(alarm)\n")
        }
    }
}

@Suite("The agent's wake finding, for the command line (WakeStatusFile, WakeCheck)")
struct WakeStatusFileTests {
    static let problem = WakeUnavailable(reason: "the agent lacks CAP_WAKE_ALARM", fix: "see docs/alarms.md")

    @Test("read back while the agent holds it; a second agent cannot take it; once the agent is gone the CLI checks for itself")
    func recordAndRead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-wakestatus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = WakeStatusFile(dataDirectory: dir)
        #expect(file.readFromRunningAgent() == nil)
        do {
            let recorder = try file.hold()
            #expect(throws: WakeStatusError.self) { _ = try file.hold() }
            recorder.record(.success(.rtc(path: "/sys/class/rtc/rtc0/wakealarm")))
            #expect(file.readFromRunningAgent() == .success(.rtc(path: "/sys/class/rtc/rtc0/wakealarm")))
            recorder.record(.failure(Self.problem))
            #expect(file.readFromRunningAgent() == .failure(Self.problem))
            // The agent's finding wins over this process's own.
            #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm()) == Self.problem)
            recorder.record(.success(.alarmTimer))
            #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.failure(Self.problem))) == nil)
            withExtendedLifetime(recorder) {}
        }
        // The file stays, but nobody holds it: a dead agent's word does not count. (A process another test
        // forks in the same instant holds a copy of the descriptor, and so the lock, until it execs: wait
        // for that to pass — seen in a loaded CI run.)
        #expect(FileManager.default.fileExists(atPath: file.url.path))
        for _ in 0..<200 where file.readFromRunningAgent() != nil { usleep(10_000) }
        #expect(file.readFromRunningAgent() == nil)
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.failure(Self.problem))) == Self.problem)
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm()) == nil)
    }

    @Test("the agent found the wake helper: the helper is asked again; stopped since, this process's own check decides")
    func helperAskedAgain() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-wakestatus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let recorder = try WakeStatusFile(dataDirectory: dir).hold()
        defer { withExtendedLifetime(recorder) {} }
        let socket = "/run/dosetap-wake.sock"
        recorder.record(.success(.helper(socket: socket)))
        let stopped = WakeUnavailable(reason: "the wake helper (\(socket)) is not running", fix: "start it")
        let asked = Mutex<[String]>([])
        func helper(_ answer: Result<WakeMethod, WakeUnavailable>) -> (String) -> any WakeAlarm {
            { path in asked.withLock { $0.append(path) }; return FakeWakeAlarm(answer) }
        }
        // The helper still answers: no warning, whatever this process could do alone.
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.failure(Self.problem)),
                                  helper: helper(.success(.helper(socket: socket)))) == nil)
        #expect(asked.withLock { $0 } == [socket])
        // Stopped since the agent looked: this process's own check (here: nothing wakes) is the answer.
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.failure(stopped)), helper: helper(.failure(stopped))) == stopped)
        // Stopped, but the RTC is writable for this user: no warning.
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.success(.rtc(path: "/sys/class/rtc/rtc0/wakealarm"))),
                                  helper: helper(.failure(stopped))) == nil)
        // Another method the agent found is not asked again.
        recorder.record(.success(.alarmTimer))
        #expect(WakeCheck.problem(dataDirectory: dir, own: FakeWakeAlarm(.failure(Self.problem)), helper: helper(.failure(stopped))) == nil)
        #expect(asked.withLock { $0.count } == 3)
    }

    @Test("a record that is not what the agent writes counts as none", arguments: [
        "", "{", "[]", #"{"method":"sonar"}"#, #"{"method":"rtc"}"#, #"{"method":null,"reason":"x"}"#, #"{"method":7}"#,
    ])
    func garbage(_ text: String) {
        #expect(WakeStatusFile.decode(Data(text.utf8)) == nil)
    }
}
