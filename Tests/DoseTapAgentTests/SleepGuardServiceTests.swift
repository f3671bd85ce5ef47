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
#if canImport(Glibc)
import Glibc
#endif

/// Talking to python-dbusmock's `logind` template on a private system bus, for the sleep guard's tests.
enum MockLogind {
    static let path = "/org/freedesktop/login1"

    /// The inhibitor locks logind holds for DoseTap: (what, who, why, mode).
    static func inhibitors(_ c: DBusConnection) async throws -> [[String]] {
        let reply = try await c.call(destination: LogindClient.service, path: path, interface: LogindClient.interface, member: "ListInhibitors")
        return (reply.first?.array ?? []).compactMap { entry -> [String]? in
            guard case .structure(let fields) = entry, fields.count == 6 else { return nil }
            let texts = fields.prefix(4).compactMap(\.string)
            return texts.count == 4 && texts[1] == "DoseTap" ? texts : nil
        }
    }

    /// logind emitting `PrepareForSleep` (or, with another signature, something malformed).
    static func emit(_ c: DBusConnection, _ arguments: [DBusValue]) async throws {
        _ = try await c.call(destination: LogindClient.service, path: path, interface: "org.freedesktop.DBus.Mock", member: "EmitSignal",
                             arguments: [.string(LogindClient.interface), .string("PrepareForSleep"),
                                         .string(arguments.map(\.signature).joined()),
                                         .array(elementSignature: "v", arguments.map { .variant($0) })])
    }

    /// Polls a real process (the mock) every 20 ms, for at most `timeout` seconds of wall time.
    static func eventually(timeout: TimeInterval = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    static func count(_ logs: InMemoryLogHandler, _ message: String) -> Int {
        logs.entries.filter { $0.message.description == message }.count
    }

    static func logs() -> InMemoryLogHandler {
        var h = InMemoryLogHandler()
        h.logLevel = .debug
        return h
    }
}

@Suite("Sleep guard: logind's delay lock, PrepareForSleep and the wake-up", .serialized, .timeLimit(.minutes(2)))
struct SleepGuardServiceTests {
    static let zone = TimeZone(identifier: "America/New_York")!
    let clock = FakeClock(localDate("2026-11-23 23:00:00", SleepGuardServiceTests.zone), timeZone: SleepGuardServiceTests.zone)
    static let noWay = WakeUnavailable(reason: "this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer (Operation not permitted), "
                                       + "and there is no RTC wake alarm at /nonexistent/wakealarm",
                                       fix: "give the agent AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md), or keep the machine from suspending at night")

    func service(_ bus: PrivateBus.Bus, wake: any WakeAlarm, next: Date?, logs: InMemoryLogHandler,
                 connection: DBusConnection? = nil) -> SleepGuardService {
        SleepGuardService(connect: { try connection ?? DBusConnection(bus: .address(bus.address)) }, wake: wake,
                          nextWake: { next }, clock: clock, logger: Logger(label: "t") { _ in logs })
    }

    @Test("the lock is taken; PrepareForSleep(true) arms the wake-up for nextWake and releases it; (false) takes it again")
    func sleepAndResume() async throws {
        let wake = FakeWakeAlarm()
        let logs = MockLogind.logs()
        let target = localDate("2026-11-24 06:30:00", Self.zone)
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let running = Task { try await service(bus, wake: wake, next: target, logs: logs).run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            #expect(try await MockLogind.inhibitors(c) == [["sleep", "DoseTap", SleepGuardService.why, "delay"]])
            #expect(wake.armed.isEmpty)

            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty }, "the lock is released")
            #expect(wake.armed == [target.addingTimeInterval(-30)], "30 s ahead: resumed when the minute comes")
            #expect(MockLogind.count(logs, "going to sleep: wake-up armed for 2026-11-24T06:29:30-05:00 through \(WakeMethod.alarmTimer), for 2026-11-24T06:30:00-05:00") == 1,
                    "\(logs.entries.map(\.message))")

            try await MockLogind.emit(c, [.bool(false)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 }, "taken again after resume")
            #expect(wake.armed == [target.addingTimeInterval(-30)])
        }
    }

    @Test("nothing to wake for: the wake-up is cleared, and the lock released all the same")
    func nothingToWakeFor() async throws {
        let wake = FakeWakeAlarm()
        let logs = MockLogind.logs()
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let running = Task { try await service(bus, wake: wake, next: nil, logs: logs).run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            #expect(wake.armed.isEmpty)
            #expect(wake.disarms == 1)
            #expect(MockLogind.count(logs, "going to sleep: nothing to wake for") == 1)
        }
    }

    @Test("no way to wake: the exact line at start (something to wake for) and again at PrepareForSleep; the lock is still released")
    func maySleepThrough() async throws {
        // The real adapter with both ways refused (the capability and the RTC injected as missing).
        let wake = LinuxWakeAlarm(rtcPath: "/nonexistent/wakealarm", makeTimer: { -EPERM }, helperSocket: nil)
        let logs = MockLogind.logs()
        let line = "This machine may sleep through the alarm: this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer "
            + "(Operation not permitted), and there is no RTC wake alarm at /nonexistent/wakealarm. Fix: give the agent "
            + "AmbientCapabilities=CAP_WAKE_ALARM (see docs/alarms.md), or keep the machine from suspending at night"
        #expect(Self.noWay.message == line)
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let running = Task { try await service(bus, wake: wake, next: localDate("2026-11-24 06:30:00", Self.zone), logs: logs).run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            #expect(MockLogind.count(logs, line) == 1)
            #expect(logs.entries.first { $0.message.description == line }?.level == .warning)
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            #expect(MockLogind.count(logs, line) == 2, "\(logs.entries.map(\.message))")
        }
    }

    @Test("no way to wake and nothing to wake for: no line at start")
    func quietWithoutAlarms() async throws {
        let logs = MockLogind.logs()
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let running = Task { try await service(bus, wake: FakeWakeAlarm(.failure(Self.noWay)), next: nil, logs: logs).run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            #expect(MockLogind.count(logs, Self.noWay.message) == 0)
        }
    }

    @Test("hostile bus: a PrepareForSleep with another signature, or from a sender that is not logind, is dropped and logged")
    func hostileSignals() async throws {
        let wake = FakeWakeAlarm()
        let logs = MockLogind.logs()
        let target = localDate("2026-11-24 06:30:00", Self.zone)
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let shared = try DBusConnection(bus: .address(bus.address))
            // The agent's connection also listens more widely (as a shared connection would): a forged signal
            // reaches it, and only the sender check stands in the way.
            let wide = try await shared.signals(DBusMatchRule(member: "PrepareForSleep"))
            let running = Task { try await service(bus, wake: wake, next: target, logs: logs, connection: shared).run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })

            try await MockLogind.emit(c, [.string("true")])
            try await MockLogind.emit(c, [.bool(true), .bool(true)])
            try c.send(path: MockLogind.path, interface: LogindClient.interface, member: "PrepareForSleep", arguments: [.bool(true)])
            var seen = wide.makeAsyncIterator()
            for _ in 0..<3 { _ = await seen.next() }   // all three reached the agent's connection
            // Then logind's own: the only one that counts.
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            // A resume after it: once the lock is back, every signal before it has been handled.
            try await MockLogind.emit(c, [.bool(false)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            #expect(wake.armed == [target.addingTimeInterval(-SleepGuardService.wakeLead)], "only logind's well-formed signal armed the wake-up")
            #expect(MockLogind.count(logs, "malformed PrepareForSleep signal dropped") == 2)
            #expect(MockLogind.count(logs, "PrepareForSleep from a sender that is not logind dropped") == 1)
            let forged = logs.entries.first { $0.message.description == "PrepareForSleep from a sender that is not logind dropped" }
            #expect(forged?.metadata["sender"]?.description == c.uniqueName)
        }
    }

    @Test("hostile bus: an Inhibit reply without a descriptor is an error logged, the agent keeps going and still arms")
    func inhibitWithoutFD() async throws {
        let wake = FakeWakeAlarm()
        let logs = MockLogind.logs()
        let target = localDate("2026-11-24 06:30:00", Self.zone)
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            _ = try await c.call(destination: LogindClient.service, path: MockLogind.path, interface: "org.freedesktop.DBus.Mock",
                                 member: "AddMethod", arguments: [.string(LogindClient.interface), .string("Inhibit"), .string("ssss"),
                                                                  .string("s"), .string("ret = 'no lock for you\\x1b[2J'")])
            let running = Task { try await service(bus, wake: wake, next: target, logs: logs).run() }
            defer { running.cancel() }
            let message = "cannot take logind's sleep inhibitor: the wake-up is armed only if DoseTap hears PrepareForSleep in time"
            #expect(await MockLogind.eventually { MockLogind.count(logs, message) == 1 })
            let error = logs.entries.first { $0.message.description == message }?.metadata["error"]?.description ?? ""
            #expect(error.contains("logind's Inhibit answered 's' instead of a file descriptor"), "\(error)")
            #expect(try await MockLogind.inhibitors(c).isEmpty)
            try await MockLogind.emit(c, [.bool(true)])
            #expect(await MockLogind.eventually { wake.armed == [target.addingTimeInterval(-SleepGuardService.wakeLead)] })
        }
    }

    @Test("no system bus: one clear line, and the service keeps running until the agent stops")
    func noSystemBus() async throws {
        let logs = MockLogind.logs()
        let service = SleepGuardService(connect: { throw DBusError(name: "org.freedesktop.DBus.Error.FileNotFound", message: "no socket\u{1b}[31m") },
                                        wake: FakeWakeAlarm(), nextWake: { nil }, clock: clock, logger: Logger(label: "t") { _ in logs })
        let running = Task { try await service.run() }
        let line = "no system bus: DoseTap cannot arm a wake-up before the machine suspends (it keeps running; keep the machine awake at night)"
        #expect(await MockLogind.eventually { MockLogind.count(logs, line) == 1 })
        let error = logs.entries.first { $0.message.description == line }?.metadata["error"]?.description ?? ""
        #expect(error == "org.freedesktop.DBus.Error.FileNotFound: no socket\\x1b[31m")
        running.cancel()
        try await running.value
    }
}

/// The wake-up armed for real through the service: a CLOCK_REALTIME_ALARM timerfd in this process. Needs
/// CAP_WAKE_ALARM (root); in CI (`CI=true`) it runs and fails without it.
@Suite("Sleep guard: the wake-up armed for real", .serialized, .timeLimit(.minutes(1)))
struct SleepGuardRealWakeTests {
    static let mustTry: Bool = {
        if ProcessInfo.processInfo.environment["CI"] == "true" { return true }
        if case .success = LinuxWakeAlarm(rtcPath: nil).capability() { return true }
        return false
    }()

    @Test("PrepareForSleep(true) leaves a CLOCK_REALTIME_ALARM timer (clockid 8) set for the next wake",
          .enabled(if: mustTry, "this process lacks CAP_WAKE_ALARM (run as root, or CI=true to make it a failure)"))
    func timerfd() async throws {
        let wake = LinuxWakeAlarm(rtcPath: nil)
        #expect(wake.capability() == .success(.alarmTimer), "the test process needs CAP_WAKE_ALARM (root)")
        let logs = MockLogind.logs()
        let target = Date().addingTimeInterval(5400).rounded()
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let service = SleepGuardService(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: wake,
                                            nextWake: { target }, clock: SystemClock(), logger: Logger(label: "t") { _ in logs })
            let running = Task { try await service.run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            let before = Self.alarmTimers()
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            let added = Self.alarmTimers().filter { before[$0.key] == nil }
            #expect(added.count == 1, "\(added)")
            let left = Int(target.timeIntervalSinceNow)
            // wakeLead (30 s) before the target.
            #expect(((left - 40)...(left - 29)).contains(added.first?.value ?? -1), "\(added) vs \(left)")
            wake.disarm()
        }
    }

    /// CLOCK_REALTIME_ALARM timers of this process (/proc/self/fdinfo): descriptor → seconds left.
    static func alarmTimers() -> [Int32: Int] {
        var out: [Int32: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fdinfo")) ?? [] {
            guard let fd = Int32(name),
                  (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == "anon_inode:[timerfd]",
                  let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(name)", encoding: .utf8) else { continue }
            let fields = info.split(separator: "\n").map { $0.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) } }
            guard fields.contains(where: { $0 == ["clockid", "8"] }), let value = fields.first(where: { $0.first == "it_value" })?.last else { continue }
            out[fd] = Int(value.dropFirst().prefix { $0 != "," }) ?? -1
        }
        return out
    }
}

extension Date {
    func rounded() -> Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}
