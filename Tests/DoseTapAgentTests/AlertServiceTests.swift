import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization
import Testing

/// Usage alerts in the agent: battery readings on the event bus in, alerts out (recorded), on the fake
/// clock (the snooze's end is its only timer).
@Suite("Usage alerts in the agent: once per crossing, across restarts, snooze, off, unreadable", .serialized, .timeLimit(.minutes(4)))
struct AlertServiceTests {
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "UTC")!)

    final class Delivered: Sendable {
        let all = Mutex<[String]>([])
        var list: [String] { all.withLock { $0 } }
    }

    struct World {
        let dir: URL
        let database: DoseTapDatabase
        let bus: EventBus
        let service: AlertService
        let delivered: Delivered
        let task: Task<Void, any Error>
    }

    func world(_ dir: URL = freshDataFolder("dosetap-alert-svc"), delivered: Delivered = Delivered()) throws -> World {
        let database = try DoseTapDatabase(directory: dir)
        let bus = EventBus()
        let service = AlertService(database: database, events: bus, clock: clock, logger: Logger(label: "t")) { level, message in
            delivered.all.withLock { $0.append("\(level.rawValue): \(message)") }
        }
        return World(dir: dir, database: database, bus: bus, service: service, delivered: delivered, task: Task { try await service.run() })
    }

    func status(_ supplies: [RawPowerSupply]) -> BatteryStatus {
        BatteryStatus(state: PowerState(raw: supplies), drain: DrainEstimate(percentPerHour: nil, source: .unknown))
    }

    func laptop(_ capacity: Int) -> RawPowerSupply { .battery("BAT0", capacity: capacity) }
    func mouse(_ capacity: Int?) -> RawPowerSupply {
        var attributes = ["type": "Battery", "scope": "Device", "present": "1", "model_name": "MX Master 3", "status": "Discharging"]
        if let capacity { attributes["capacity"] = String(capacity) }
        return RawPowerSupply(name: "hidpp_battery_0", attributes: attributes)
    }

    /// Publishes and waits until the service has dealt with it (its state or history changed, or `settle` passed).
    func publish(_ w: World, _ event: AgentEvent, expecting count: Int) async throws {
        w.bus.publish(event)
        for _ in 0..<300 where w.delivered.list.count < count { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(30))  // nothing more arrives (checked by the count below)
    }

    @Test("warning then critical, once each; the same level again says nothing; a restart repeats nothing")
    func oncePerCrossing() async throws {
        let w = try world()
        defer { w.task.cancel() }
        try await Task.sleep(for: .milliseconds(50))  // the service subscribes
        try await publish(w, .batteryReading(status([laptop(40), mouse(14)]), at: clock.now()), expecting: 1)
        #expect(w.delivered.list == ["warning: MX Master 3 battery low: 14% left"])
        try await publish(w, .batteryReading(status([laptop(39), mouse(13)]), at: clock.now()), expecting: 1)
        try await publish(w, .batteryReading(status([laptop(4), mouse(13)]), at: clock.now()), expecting: 2)
        #expect(w.delivered.list.count == 2 && w.delivered.list.last == "critical: BAT0 battery critical: 4% left", "\(w.delivered.list)")
        w.task.cancel()
        let again = try world(w.dir)
        defer { again.task.cancel() }
        try await Task.sleep(for: .milliseconds(50))
        try await publish(again, .batteryReading(status([laptop(4), mouse(12)]), at: clock.now()), expecting: 1)
        #expect(again.delivered.list.isEmpty, "restarted: \(again.delivered.list)")
        let history = try AlertRepository(database: w.database).history()
        #expect(history.map { "\($0.source) \($0.level.rawValue)" } == ["BAT0 critical", "MX Master 3 warning"])
    }

    @Test("a button's cell at 4 %: critical at once; a source turned off says nothing")
    func buttonAndOff() async throws {
        let w = try world()
        defer { w.task.cancel() }
        try await Task.sleep(for: .milliseconds(50))
        try AlertRepository(database: w.database).setOverride("BAT0", AlertSourceOverride(enabled: false))
        try await publish(w, .buttonBattery(name: "bedside", level: 4), expecting: 1)
        try await publish(w, .batteryReading(status([laptop(2)]), at: clock.now()), expecting: 2)
        #expect(w.delivered.list == ["critical: button:bedside battery critical: 4% left"])
    }

    @Test("snoozed: nothing fires; when the snooze ends (fake clock) what still exceeds fires at once; thresholds lowered fire too")
    func snooze() async throws {
        let w = try world()
        defer { w.task.cancel() }
        let alerts = AlertUseCases(store: DataStore(database: w.database), clock: clock, supplies: { [] }, events: w.bus)
        try await Task.sleep(for: .milliseconds(50))
        _ = try alerts.snooze(.oneHour)
        await clock.waitForSleepers(1)
        try await publish(w, .batteryReading(status([laptop(10)]), at: clock.now()), expecting: 1)
        #expect(w.delivered.list.isEmpty)
        clock.advance(by: 3600)
        for _ in 0..<300 where w.delivered.list.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(w.delivered.list == ["warning: BAT0 battery low: 10% left"])
        _ = try alerts.setThresholds(warning: nil, critical: 89)
        for _ in 0..<300 where w.delivered.list.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(w.delivered.list.last == "critical: BAT0 battery critical: 10% left")
    }

    /// The settings are kept between readings (`MarkedRead`, #29): kept over the agent's own battery sample, read
    /// again after the command line changed them.
    @Test("thresholds the command line lowered between two readings count at the second; the agent's battery sample in between changes nothing")
    func settingsOfAnotherProcess() async throws {
        let dir = freshDataFolder("dosetap-alert-svc")
        let database = try DoseTapDatabase(directory: dir)
        let delivered = Delivered()
        let service = AlertService(database: database, events: EventBus(), clock: clock, logger: Logger(label: "t")) { level, message in
            delivered.all.withLock { $0.append("\(level.rawValue): \(message)") }
        }
        await service.observe([AlertSourceReading(name: "BAT0", kind: .system, usage: 60)])
        #expect(delivered.list.isEmpty)
        try BatterySampleRepository(database: database).append(BatterySample(at: clock.now(), level: 40, onAC: false, status: .discharging))
        _ = try AlertUseCases(store: DataStore(directory: dir), clock: clock, supplies: { [] }).setThresholds(warning: 50, critical: nil)
        await service.observe([AlertSourceReading(name: "BAT0", kind: .system, usage: 61)])
        #expect(delivered.list == ["warning: BAT0 battery low: 39% left"])
    }

    @Test("a battery that reports no level: unreadable after 3 readings (once), alerting again once it reads")
    func unreadable() async throws {
        let w = try world()
        defer { w.task.cancel() }
        try await Task.sleep(for: .milliseconds(50))
        for _ in 0..<4 { try await publish(w, .batteryReading(status([laptop(50), mouse(nil)]), at: clock.now()), expecting: 0) }
        let overview = try AlertUseCases(store: DataStore(database: w.database), clock: clock, supplies: { [] }).overview()
        #expect(overview.sources.first { $0.name == "MX Master 3" }?.state == "unreadable")
        try await publish(w, .batteryReading(status([laptop(50), mouse(3)]), at: clock.now()), expecting: 1)
        #expect(w.delivered.list == ["critical: MX Master 3 battery critical: 3% left"])
    }

    @Test("the notification's Snooze 1h snoozes every alert")
    func snoozeButton() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let dir = freshDataFolder("dosetap-alert-svc")
            let database = try DoseTapDatabase(directory: dir)
            let desktop = DesktopNotifications(connection: try DBusConnection(bus: .address(bus.address)))
            let devices = FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                          beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav"), desktop: desktop)
            let feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: database), clock: clock, logger: Logger(label: "t"))
            let alerts = AlertUseCases(store: DataStore(database: database), clock: clock, supplies: { [] })
            let actions = NotificationActions(desktop: desktop, feedback: feedback,
                                              doses: DoseUseCases(repository: DoseRepository(database: database), clock: clock),
                                              logger: Logger(label: "t"), usageAlerts: alerts)
            let running = Task { try await actions.run() }
            defer { running.cancel() }
            await AlertService.feedbackDelivery(feedback)(.critical, "BAT0 battery critical: 4% left")
            let reply = try await desktop.connection.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                          interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls", arguments: [.string("Notify")])
            let call = try #require(reply.first?.array?.first)
            guard case .structure(let fields) = call, let args = fields[1].array else { Issue.record("no Notify call"); return }
            #expect(args[3].string == "BAT0 battery critical: 4% left")
            #expect((args[5].array ?? []).compactMap(\.string) == ["alerts-snooze-1h", "Snooze 1h"])
            #expect(args[6].stringKeyed?["urgency"] == .byte(2))
            try await Task.sleep(for: .milliseconds(200))  // the actions service subscribes
            _ = try await desktop.connection.call(
                destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications", interface: "org.freedesktop.DBus.Mock",
                member: "EmitSignal", arguments: [.string("org.freedesktop.Notifications"), .string("ActionInvoked"), .string("us"),
                                                  .array(elementSignature: "v", [.variant(.uint32(1)), .variant(.string("alerts-snooze-1h"))])])
            for _ in 0..<300 where try alerts.overview().settings.snoozedUntil == nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(try alerts.overview().settings.snoozedUntil == clock.now().addingTimeInterval(3600))
        }
    }

    /// Answers from a list, one per run; then fails.
    final class ScriptedRunner: CommandRunner {
        let answers: Mutex<[Result<String, CommandError>]>
        let runs = Mutex(0)
        init(_ answers: [Result<String, CommandError>]) { self.answers = Mutex(answers) }
        func output(of argv: [String], timeout: TimeInterval) async throws -> String {
            runs.withLock { $0 += 1 }
            let next = answers.withLock { $0.isEmpty ? .failure(CommandError("no more")) : $0.removeFirst() }
            return try next.get()
        }
    }

    @Test("a command source: run at once and every interval (fake clock); 12 % left warns, 4 % is critical; 3 failed runs: unreadable")
    func commandSource() async throws {
        let dir = freshDataFolder("dosetap-alert-svc")
        let database = try DoseTapDatabase(directory: dir)
        let bus = EventBus()
        let delivered = Delivered()
        let runner = ScriptedRunner([.success("12\n"), .success("quota: 4 %"), .failure(CommandError("quota-left failed (exited(1))")),
                                     .success("no number"), .failure(CommandError("quota-left ran longer than 10 s and was killed"))])
        let service = AlertService(database: database, events: bus, clock: clock, logger: Logger(label: "t"),
                                   commands: { [AlertCommandSource(name: "API quota", argv: ["quota-left"], interval: 600)] }, runner: runner) { level, message in
            delivered.all.withLock { $0.append("\(level.rawValue): \(message)") }
        }
        let task = Task { try await service.run() }
        defer { task.cancel() }
        await clock.waitForSleepers(1)
        #expect(runner.runs.withLock { $0 } == 1)
        #expect(delivered.list == ["warning: API quota battery low: 12% left"])
        for run in 2...5 {
            clock.advance(by: 600)
            for _ in 0..<300 where runner.runs.withLock({ $0 }) < run { try await Task.sleep(for: .milliseconds(5)) }
            await clock.waitForSleepers(1)
        }
        #expect(delivered.list == ["warning: API quota battery low: 12% left", "critical: API quota battery critical: 4% left"])
        let state = try #require(try AlertRepository(database: database).states()["API quota"])
        #expect(state.isUnreadable && state.failures == 3)
        let shown = try AlertUseCases(store: DataStore(database: database), clock: clock, supplies: { [] }).overview()
        #expect(shown.sources.first { $0.name == "API quota" }?.state == "unreadable")
    }

    final class ArgvRecorder: CommandRunner {
        let seen = Mutex<[[String]]>([])
        func output(of argv: [String], timeout: TimeInterval) async throws -> String {
            seen.withLock { $0.append(argv) }
            return "50"
        }
    }

    @Test("a reload of config.toml that changes the commands starts the new ones and stops the old; an unchanged reload restarts nothing")
    func reloadCommands() async throws {
        let database = try DoseTapDatabase(directory: freshDataFolder("dosetap-alert-svc"))
        let bus = EventBus()
        let configured = Mutex([AlertCommandSource(name: "old", argv: ["old-quota"], interval: 600)])
        let runner = ArgvRecorder()
        let service = AlertService(database: database, events: bus, clock: clock, logger: Logger(label: "t"),
                                   commands: { configured.withLock { $0 } }, runner: runner) { _, _ in }
        let task = Task { try await service.run() }
        defer { task.cancel() }
        await clock.waitForSleepers(1)
        #expect(runner.seen.withLock { $0 } == [["old-quota"]])
        bus.publish(.configurationReloaded)
        try await Task.sleep(for: .milliseconds(50))
        #expect(runner.seen.withLock { $0 } == [["old-quota"]], "unchanged: not run again")
        configured.withLock { $0 = [AlertCommandSource(name: "new", argv: ["new-quota", "--left"], interval: 600)] }
        bus.publish(.configurationReloaded)
        for _ in 0..<300 where runner.seen.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
        await clock.waitForSleepers(1)
        #expect(runner.seen.withLock { $0 } == [["old-quota"], ["new-quota", "--left"]])
        clock.advance(by: 600)
        for _ in 0..<300 where runner.seen.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(30))
        #expect(runner.seen.withLock { $0 }.last == ["new-quota", "--left"])
        #expect(runner.seen.withLock { $0 }.filter { $0 == ["old-quota"] }.count == 1, "the old command's loop stopped")
    }
}
