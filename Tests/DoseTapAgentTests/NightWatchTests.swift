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

/// The night forecast in the running pieces (#24): the sleep guard on python-dbusmock's logind feeds
/// `NightWatch` at every suspend and resume, reads logind's facts, and runs the re-check at
/// `PrepareForSleep(true)` — the nudge played while the delay lock is still held — and the store keeps
/// what was learned across a restart.
@Suite("Night watch: learning at suspend and resume, the re-check before the lock is released", .serialized, .timeLimit(.minutes(2)))
struct NightWatchTests {
    static let zone = TimeZone(identifier: "America/New_York")!

    /// A battery whose level and charger the test sets.
    final class Battery: Sendable {
        let state = Mutex<(level: Double, onAC: Bool)>((80, false))
        func set(_ level: Double, onAC: Bool = false) { state.withLock { $0 = (level, onAC) } }
        var power: PowerState {
            let (level, onAC) = state.withLock { $0 }
            return PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
                "type": "Battery", "present": "1", "status": onAC ? "Charging" : "Discharging",
                "energy_now": String(Int(level * 1_000_000)), "energy_full": "100000000", "power_now": "16000000",
            ])])
        }
    }

    func temporaryDatabase() throws -> DoseTapDatabase {
        try DoseTapDatabase(directory: FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-night-\(UUID().uuidString)"))
    }

    @Test("suspend and resume on the logind mock: the drain asleep is learned from the machine's own count, stored, and kept across a restart")
    func learnsAcrossRestart() async throws {
        let database = try temporaryDatabase()
        let repository = NightLearningRepository(database: database)
        let battery = Battery()
        let offset = Mutex<Double>(100)
        let clock = FakeClock(localDate("2026-11-23 23:00:00", Self.zone), timeZone: Self.zone)
        var logs = InMemoryLogHandler()
        logs.logLevel = .debug
        let handler = logs
        let logger = Logger(label: "t") { _ in handler }
        let watch = NightWatch(learning: try repository.load(), save: { try repository.save($0) }, battery: { battery.power },
                               suspendOffset: { offset.withLock { $0 } }, zone: { Self.zone }, logger: logger)
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let guardService = SleepGuardService(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: FakeWakeAlarm(),
                                                 nextWake: { nil }, clock: clock, logger: logger, night: watch)
            let running = Task { try await guardService.run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })
            for night in 0..<3 {
                battery.set(80)
                try await MockLogind.emit(c, [.bool(true)])
                #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
                // Asleep 8 h by the machine's count; the wall clock was set back an hour meanwhile.
                offset.withLock { $0 += 8 * 3600 }
                clock.step(to: clock.now().addingTimeInterval(7 * 3600))
                battery.set(77.6)
                try await MockLogind.emit(c, [.bool(false)])
                #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 }, "night \(night)")
                #expect(await MockLogind.eventually { watch.learning.sleepDrain.observations.count == night + 1 })
                clock.set(clock.now().addingTimeInterval(16 * 3600))
            }
        }
        let rates = watch.learning.sleepDrain.observations.map { ($0.percentPerHour * 1000).rounded() / 1000 }
        #expect(rates == [0.3, 0.3, 0.3], "2.4 points over the 8 h the machine slept, not the 7 h of the wall clock")
        #expect(logs.entries.contains { $0.message.description == "resumed: the battery drained 0.3 %/h asleep" })
        // A restart: what was learned is read back.
        let reloaded = try NightLearningRepository(database: database).load()
        #expect(reloaded.sleepDrain == watch.learning.sleepDrain)
        #expect(reloaded.sleepDrain.estimate.learned)
        #expect(abs(reloaded.sleepDrain.estimate.drop(hours: 8) - 2.4) < 1e-6)
    }

    @Test("a resume on AC, or with no level change, teaches nothing (logged), and nothing learned is lost")
    func ignoredResumes() async throws {
        let database = try temporaryDatabase()
        let repository = NightLearningRepository(database: database)
        let battery = Battery()
        let offset = Mutex<Double>(0)
        let clock = FakeClock(localDate("2026-11-23 23:00:00", Self.zone), timeZone: Self.zone)
        let logs = InMemoryLogHandler()
        let watch = NightWatch(learning: NightLearning(), save: { try repository.save($0) }, battery: { battery.power },
                               suspendOffset: { offset.withLock { $0 } }, zone: { Self.zone }, logger: Logger(label: "t") { _ in logs })
        watch.willSleep(at: clock.now())
        offset.withLock { $0 += 8 * 3600 }
        #expect(watch.resumed(at: clock.now().addingTimeInterval(8 * 3600)) == .ignored(
            "no level change (a hibernate, a power-off or a stuck gauge is not zero drain)"))
        battery.set(80, onAC: true)
        watch.willSleep(at: clock.now().addingTimeInterval(9 * 3600))
        offset.withLock { $0 += 3600 }
        #expect(watch.resumed(at: clock.now().addingTimeInterval(10 * 3600)) == .ignored("on external power"))
        #expect(watch.resumed(at: clock.now().addingTimeInterval(11 * 3600)) == nil, "a resume without a suspend seen")
        #expect(try repository.load().sleepDrain.observations.isEmpty)
    }

    @Test("a reading after a resume the sleep guard has not reported yet does not count the night as awake")
    func readingBeforeResumeReport() {
        let offset = Mutex<Double>(0)
        let watch = NightWatch(learning: NightLearning(), save: { _ in }, battery: { nil }, suspendOffset: { offset.withLock { $0 } },
                               zone: { Self.zone }, logger: Logger(label: "t") { _ in InMemoryLogHandler() })
        watch.awake(at: localDate("2026-11-23 22:00:00", Self.zone))
        offset.withLock { $0 += 9 * 3600 } // asleep 22:00 → 07:00
        watch.awake(at: localDate("2026-11-24 07:00:00", Self.zone))
        let night = watch.learning.habits.nights.first { $0.night == "2026-11-23" }
        #expect(night?.awakeUntil == 240, "awake until 22:00, not through the night: \(String(describing: night))")
        // Without a suspend in between, the same two readings are one awake stretch.
        let awake = NightWatch(learning: NightLearning(), save: { _ in }, battery: { nil }, suspendOffset: { 0 }, zone: { Self.zone },
                               logger: Logger(label: "t") { _ in InMemoryLogHandler() })
        awake.awake(at: localDate("2026-11-23 22:00:00", Self.zone))
        awake.awake(at: localDate("2026-11-24 07:00:00", Self.zone))
        #expect(awake.learning.habits.nights.first { $0.night == "2026-11-23" }?.awakeUntil == 720)
    }

    @Test("PrepareForSleep(true) with an alarm at risk even asleep: the nudge plays while the lock is still held; a safe one plays nothing")
    func recheckBeforeRelease() async throws {
        let clock = FakeClock(localDate("2026-11-23 23:00:00", Self.zone), timeZone: Self.zone)
        let battery = Battery()
        var learning = NightLearning()
        for day in 1...5 {
            let start = localDate("2026-11-1\(day) 23:00:00", Self.zone)
            learning.slept(SleepEpisode(start: start, end: start.addingTimeInterval(8 * 3600), levelBefore: 80, levelAfter: 78), in: Self.zone)
        }
        let watch = NightWatch(learning: learning, save: { _ in }, battery: { battery.power }, suspendOffset: { 0 }, zone: { Self.zone },
                               logger: Logger(label: "t") { _ in InMemoryLogHandler() })
        let alarm = try Alarm(id: 1, time: TimeOfDay(hour: 7, minute: 0), label: "Work", repetition: .daily)
        let played = Mutex<[(Nudge, Int)]>([])
        let logs = MockLogind.logs()
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let recheck = SleepRecheck(
                alarms: { [alarm] },
                battery: { BatteryStatus(state: battery.power, drain: .init(percentPerHour: 16, source: .hardware),
                                         night: watch.outlook(goingToSleep: true)) },
                clock: clock, logger: Logger(label: "t") { _ in logs }) { step in
                    let held = (try? await MockLogind.inhibitors(c).count) ?? -1
                    played.withLock { $0.append((step.nudge, held)) }
                }
            let guardService = SleepGuardService(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: FakeWakeAlarm(),
                                                 nextWake: { nil }, clock: clock, logger: Logger(label: "t") { _ in InMemoryLogHandler() },
                                                 night: watch, beforeSleep: { await recheck.run() })
            let running = Task { try await guardService.run() }
            defer { running.cancel() }
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })

            // 80 % at 16 %/h awake would be "Alarm at Risk" for 8 h; asleep it is safe: nothing plays.
            battery.set(80)
            try await MockLogind.emit(c, [.bool(true)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
            #expect(played.withLock { $0.isEmpty })
            // The journal's line the VM tier and docs/alarms.md read: "safe, about N% at T", then why no nudge.
            let safeLine = logs.entries.map { "\($0.message)" }.first { $0.hasPrefix("going to sleep: alarm 1 ") }
            #expect(safeLine?.range(of: #"^going to sleep: alarm 1 safe, about [0-9]+% at 2026-11-24T07:00:00-05:00: \S"#,
                                    options: .regularExpression) != nil, "\(logs.entries.map(\.message))")
            try await MockLogind.emit(c, [.bool(false)])
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).count == 1 })

            // 5 %: at risk even asleep. The nudge plays with the lock still held, then the grace, then release.
            battery.set(5)
            try await MockLogind.emit(c, [.bool(true)])
            #expect(await MockLogind.eventually { played.withLock { $0.count == 1 } })
            await clock.waitForSleepers(1)
            #expect(try await MockLogind.inhibitors(c).count == 1, "still held during the grace")
            clock.advance(by: SleepRecheck.grace)
            #expect(try await MockLogind.eventually { try await MockLogind.inhibitors(c).isEmpty })
        }
        let (nudge, held) = try #require(played.withLock { $0.first })
        #expect(held == 1, "played before the lock was released")
        #expect(nudge.header == "Alarm at Risk")
        #expect(nudge.assumption == "if this machine sleeps from now until the alarm wakes it")
    }

    @Test("logind's facts: a program holding a sleep block inhibitor makes the forecast plan the machine awake")
    func blockInhibitor() async throws {
        let clock = FakeClock(localDate("2026-11-23 21:00:00", Self.zone), timeZone: Self.zone)
        let watch = NightWatch(learning: NightLearning(), save: { _ in }, battery: { nil }, suspendOffset: { 0 }, zone: { Self.zone },
                               logger: Logger(label: "t") { _ in InMemoryLogHandler() })
        try await PrivateBus.run(mockTemplate: "logind", system: true) { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            // Another program blocks sleep (the reply's descriptor is the lock: kept open until the test ends).
            let lock = try await c.call(destination: LogindClient.service, path: MockLogind.path, interface: LogindClient.interface,
                                        member: "Inhibit", arguments: [.string("sleep:idle"), .string("Totem"), .string("Playing"), .string("block")])
            let guardService = SleepGuardService(connect: { try DBusConnection(bus: .address(bus.address)) }, wake: FakeWakeAlarm(),
                                                 nextWake: { nil }, clock: clock, logger: Logger(label: "t") { _ in InMemoryLogHandler() },
                                                 night: watch)
            let running = Task { try await guardService.run() }
            defer { running.cancel() }
            #expect(await MockLogind.eventually { watch.outlook().conditions.sleepBlockedBy == ["Totem"] })
            #expect(watch.outlook().conditions.idleAction == "ignore")
            withExtendedLifetime(lock) {}
        }
        let plan = watch.outlook().learning.habits.plan(now: clock.now(), moment: clock.now().addingTimeInterval(9 * 3600),
                                                         conditions: watch.outlook().conditions, in: Self.zone)
        #expect(plan == .awake(because: "Totem keeps it from sleeping"))
    }
}
