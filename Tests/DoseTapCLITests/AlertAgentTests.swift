import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// Usage alerts through the real agent binary: a umockdev laptop and Bluetooth mouse (the
/// mouse-beside-laptop recording with lower capacities), a BTHome button reporting 4 % on the mock
/// BlueZ, a command source and a hung one — python-dbusmock's notification daemon shows what arrives.
@Suite("dosetap agent: usage alerts for real", .serialized)
struct AlertAgentTests {
    static let shelly = "A4:C1:38:8D:18:B2"

    func notifications(_ desktop: DBusConnection) async throws -> [(summary: String, urgency: DBusValue?, actions: [String])] {
        let reply = try await desktop.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                           interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls", arguments: [.string("Notify")])
        return (reply.first?.array ?? []).compactMap { call in
            guard case .structure(let fields) = call, fields.count == 2, let args = fields[1].array, args.count == 8 else { return nil }
            return (args[3].string ?? "", args[6].stringKeyed?["urgency"], (args[5].array ?? []).compactMap(\.string))
        }
    }

    @Test("each battery alerts once (laptop, mouse, button cell, command); a hung command is killed at its timeout; a restart repeats nothing")
    func alertsOnce() async throws {
        let cli = try CLI()
        // The recording with the laptop at 5 % and the mouse at 14 %.
        let recording = try String(contentsOf: Fixtures.root.appendingPathComponent("power_supply/mouse-beside-laptop.umockdev"), encoding: .utf8)
            .replacingOccurrences(of: "A: capacity=42\\n", with: "A: capacity=5\\n")
            .replacingOccurrences(of: "A: capacity=40\\n", with: "A: capacity=14\\n")
        let fixture = cli.home.appendingPathComponent("drained.umockdev")
        try recording.write(to: fixture, atomically: true, encoding: .utf8)
        let quota = cli.home.appendingPathComponent("quota-left")
        try "#!/bin/sh\necho 'quota: 3% left'\n".write(to: quota, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: quota.path)
        try cli.writeConfig("""
            [[alerts.command]]
            name = "quota"
            command = ["\(quota.path)"]
            interval = 60

            [[alerts.command]]
            name = "stuck"
            command = ["/bin/sh", "-c", "sleep 28.5 & wait"]
            timeout = 1
            """)
        #expect(try await cli.run(["button", "add", Self.shelly, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)

        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { system in
            let bluez = try DBusConnection(bus: .address(system.address))
            try await bluez.addMockBlueZDevice(Self.shelly, alias: "SBBT-002C")
            try await PrivateBus.run(mockTemplate: "notification_daemon") { session in
                let desktop = try DBusConnection(bus: .address(session.address))
                func runAgent(_ body: @Sendable (LineBuffer) async throws -> Void) async throws -> [String] {
                    let log = LineBuffer()
                    let argv = ["-d", fixture.path, "--", CLI.binary, "agent"]
                    let result = try await Subprocess.run(
                        .path("/usr/bin/umockdev-run"), arguments: Arguments(argv),
                        environment: cli.environment(tz: "UTC", extra: ["DBUS_SYSTEM_BUS_ADDRESS": system.address,
                                                                        "DBUS_SESSION_BUS_ADDRESS": session.address,
                                                                        "DOSETAP_AUDIO_DEVICE": "null"]),
                        input: .none, output: .discarded, error: .sequence
                    ) { execution in
                        let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                        #expect(await log.wait(for: "listening to BlueZ", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
                        try await body(log)
                        try execution.send(signal: .terminate)
                        _ = try? await reader.value
                    }
                    #expect(result.terminationStatus == .exited(0))
                    return log.all
                }

                let first = try await runAgent { log in
                    // The button's cell: a BTHome battery object (0x01) of 4 %, no press.
                    try await bluez.sendBTHome(Self.shelly, [0x40, 0x00, 0x12, 0x01, 0x04])
                    #expect(await log.wait(for: "button:bedside battery critical: 4% left", timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
                    #expect(await log.wait(for: "quota battery critical: 3% left", timeout: 10) != nil)
                    #expect(await log.wait(for: "/bin/sh ran longer than 1 s and was killed", timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
                    #expect(await log.wait(for: "Primary battery critical: 5% left", timeout: 10) != nil)
                    #expect(await log.wait(for: "MX Master 3 battery low: 14% left", timeout: 10) != nil)
                }
                let shown = try await notifications(desktop).filter { $0.summary.contains("battery") }
                #expect(Set(shown.map(\.summary)) == ["Primary battery critical: 5% left", "MX Master 3 battery low: 14% left",
                                                      "button:bedside battery critical: 4% left", "quota battery critical: 3% left"])
                #expect(shown.count == 4, "each once: \(shown.map(\.summary))")
                #expect(shown.first { $0.summary.hasPrefix("MX") }?.urgency == .byte(1))
                #expect(shown.filter { $0.summary.contains("critical") }.allSatisfy { $0.urgency == .byte(2) })
                #expect(shown.allSatisfy { $0.actions == ["alerts-snooze-1h", "Snooze 1h"] })
                #expect(!first.contains { $0.contains("button action recorded") }, "a battery report is no press")

                // A restart: the same readings, nothing said again.
                _ = try await runAgent { log in
                    _ = await log.wait(for: "/bin/sh ran longer than 1 s and was killed", timeout: 10)
                    try await Task.sleep(for: .milliseconds(500))
                }
                #expect(try await notifications(desktop).filter { $0.summary.contains("battery") }.count == 4)
            }
        }
        let history = try AlertRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).history()
        #expect(history.count == 4)
        #expect(try DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).allEvents().isEmpty)
    }
}
