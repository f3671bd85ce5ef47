import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Subprocess
import Synchronization
import Testing

/// Usage alerts end to end in-process: the real udev adapter on a umockdev laptop and Bluetooth mouse,
/// drained by uevents, the battery monitor, the event bus, `AlertService` and the store. (In
/// `UdevFixtures`: a testbed replaces /sys for the whole process.)
extension UdevFixtures {
    @Suite("Usage alerts on umockdev batteries")
    struct AlertUdevTests {
        static let laptop = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0C0A:00/power_supply/BAT0"
        static let mouse = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.2/0003:046D:C52B.0003/0003:046D:4082.0004/power_supply/hidpp_battery_0"

        final class Delivered: Sendable {
            let all = Mutex<[String]>([])
        }

        @Test("a laptop and a scope=Device mouse drained by uevents: warning then critical, once each, in the history")
        func drained() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (scripts/run-tests.sh)")
            let scenario = try #require(try Fixtures.powerSupplyScenarios().first { $0.name == "mouse-beside-laptop" })
            let testbed = UmockdevTestbed()
            try testbed.add(scenario.umockdev)
            let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000))
            let bus = EventBus()
            let delivered = Delivered()
            let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alert-udev-\(UUID().uuidString)")
            let database = try DoseTapDatabase(directory: dir)
            let alerts = AlertService(database: database, events: bus, clock: clock, logger: logger) { level, message in
                delivered.all.withLock { $0.append("\(level.rawValue): \(message)") }
            }
            let (evaluated, evaluations) = AsyncStream<BatteryStatus>.makeStream()
            let monitor = BatteryMonitor(source: try UdevPowerSupplySource(), history: nil, clock: clock,
                                         configuration: ConfigurationHolder(AgentConfiguration()), logger: logger, events: bus,
                                         onEvaluated: { evaluations.yield($0) })
            let alertTask = Task { try await alerts.run() }
            try await Task.sleep(for: .milliseconds(50))  // the alert service subscribes before the first reading
            let monitorTask = Task { try await monitor.run() }
            var readings = evaluated.makeAsyncIterator()
            _ = await readings.next()
            func set(_ path: String, _ capacity: Int) async throws {
                testbed.setAttribute(path, "capacity", "\(capacity)")
                testbed.uevent(path, action: "change")
                _ = try #require(await readings.next())
            }
            // Mouse 40 → 14 % (86 % used: warning) → 13 → 4 % (critical) → 3; laptop 42 → 15 (warning) → 5 (critical).
            for (path, capacity) in [(Self.mouse, 14), (Self.mouse, 13), (Self.mouse, 4), (Self.mouse, 3), (Self.laptop, 15), (Self.laptop, 5)] {
                try await set(path, capacity)
            }
            for _ in 0..<300 where delivered.all.withLock({ $0.count }) < 4 { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(50))
            bus.finish()
            monitorTask.cancel()
            alertTask.cancel()
            #expect(delivered.all.withLock { $0 } == [
                "warning: MX Master 3 battery low: 14% left", "critical: MX Master 3 battery critical: 4% left",
                "warning: Primary battery low: 15% left", "critical: Primary battery critical: 5% left",
            ])
            let history = try AlertRepository(database: database).history()
            #expect(history.map { "\($0.source) \($0.level.rawValue)" } == ["Primary critical", "Primary warning", "MX Master 3 critical", "MX Master 3 warning"])
            withExtendedLifetime(testbed) {}
        }

        /// The agent binary in this testbed (it inherits libumockdev-preload and UMOCKDEV_DIR), drained by
        /// uevents sent from here: each level is said once, in its log.
        @Test("the real agent binary on a laptop and a mouse drained by uevents: each alert once, on the notification daemon")
        func agentDrained() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (scripts/run-tests.sh)")
            let binary = try #require(ProcessInfo.processInfo.environment["DOSETAP_BIN"], "DOSETAP_BIN names the dosetap binary (scripts/run-tests.sh)")
            let scenario = try #require(try Fixtures.powerSupplyScenarios().first { $0.name == "mouse-beside-laptop" })
            let testbed = UmockdevTestbed()
            try testbed.add(scenario.umockdev)
            let home = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alert-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: home) }
            // The notification daemon of python-dbusmock on a private session bus (its processes run under the
            // same preload, which leaves D-Bus alone). The testbed is used from one task at a time, in order.
            let box = TestbedBox(testbed)
            try await PrivateBus.run(mockTemplate: "notification_daemon") { session in
                let testbed = box.testbed
                let environment = Environment.inherit.updating([
                    "HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
                    "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "TZ": "UTC",
                    "DBUS_SESSION_BUS_ADDRESS": session.address, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent",
                    "DOSETAP_AUDIO_DEVICE": "null",
                ])
                let log = Lines()
                let result = try await Subprocess.run(.path(.init(binary)), arguments: ["agent"], environment: environment,
                                                      input: .none, output: .discarded, error: .sequence) { execution in
                    let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                    #expect(try await log.wait(for: "agent ready"), "\(log.all.joined(separator: "\n"))")
                    // Mouse 40 → 14 % (warning) → 13 → 4 % (critical) → 3; laptop 42 → 15 (warning) → 5 (critical).
                    for (path, capacity, expected) in [(Self.mouse, 14, "MX Master 3 battery low: 14% left"), (Self.mouse, 13, nil),
                                                       (Self.mouse, 4, "MX Master 3 battery critical: 4% left"), (Self.mouse, 3, nil),
                                                       (Self.laptop, 15, "Primary battery low: 15% left"),
                                                       (Self.laptop, 5, "Primary battery critical: 5% left")] as [(String, Int, String?)] {
                        testbed.setAttribute(path, "capacity", "\(capacity)")
                        testbed.uevent(path, action: "change")
                        if let expected {
                            #expect(try await log.wait(for: expected), "\(log.all.joined(separator: "\n"))")
                        } else {
                            try await Task.sleep(for: .milliseconds(300))
                        }
                    }
                    try await Task.sleep(for: .milliseconds(500))
                    try execution.send(signal: .terminate)
                    _ = try? await reader.value
                }
                #expect(result.terminationStatus == .exited(0))
                let alerts = log.all.filter { $0.contains("battery low:") || $0.contains("battery critical:") }
                #expect(alerts.count == 4, "each once: \(alerts.joined(separator: "\n"))")
                let desktop = try DBusConnection(bus: .address(session.address))
                let reply = try await desktop.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                   interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls", arguments: [.string("Notify")])
                let shown = (reply.first?.array ?? []).compactMap { call -> (String, DBusValue?)? in
                    guard case .structure(let fields) = call, fields.count == 2, let args = fields[1].array, args.count == 8 else { return nil }
                    return (args[3].string ?? "", args[6].stringKeyed?["urgency"])
                }
                #expect(shown.map(\.0) == ["MX Master 3 battery low: 14% left", "MX Master 3 battery critical: 4% left",
                                           "Primary battery low: 15% left", "Primary battery critical: 5% left"])
                #expect(shown.map(\.1) == [.byte(1), .byte(2), .byte(1), .byte(2)])
            }
            withExtendedLifetime(testbed) {}
        }

        final class TestbedBox: @unchecked Sendable {
            let testbed: UmockdevTestbed
            init(_ testbed: UmockdevTestbed) { self.testbed = testbed }
        }

        /// Lines of a child's stderr, with a wait for one that contains a text.
        final class Lines: Sendable {
            private let lines = Mutex<[String]>([])
            func append(_ line: String) { lines.withLock { $0.append(line) } }
            var all: [String] { lines.withLock { $0 } }
            func wait(for text: String, timeout: Double = 10) async throws -> Bool {
                let end = Date().addingTimeInterval(timeout)
                while Date() < end {
                    if all.contains(where: { $0.contains(text) }) { return true }
                    try await Task.sleep(for: .milliseconds(20))
                }
                return all.contains(where: { $0.contains(text) })
            }
        }
    }
}
