import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// A simulated BTHome button on a private system bus (python-dbusmock's bluez5 template), the real agent,
/// the real store: a press logs a dose; a stranger's button, a replay and a removed button do nothing.
@Suite("BLE buttons through BlueZ, end to end")
struct ButtonAgentTests {
    static let button = "A4:C1:38:8D:18:B2"
    static let stranger = "11:22:33:44:55:66"

    func devicePath(_ address: String) -> String { "/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_") }

    /// The mock's adapter hci0 and its devices, as bluetoothd would have them.
    func populate(_ mock: DBusConnection, devices: [(address: String, alias: String)]) async throws {
        _ = try await mock.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddAdapter",
                                arguments: [.string("hci0"), .string("bedside-pi")])
        for device in devices {
            _ = try await mock.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddDevice",
                                    arguments: [.string("hci0"), .string(device.address), .string(device.alias)])
        }
    }

    /// Sets Device1.ServiceData on the mock, which emits PropertiesChanged as BlueZ does for an advert.
    func advertise(_ bus: DBusConnection, _ address: String, _ payload: [UInt8]) async throws {
        _ = try await bus.call(destination: "org.bluez", path: devicePath(address), interface: "org.freedesktop.DBus.Properties",
                               member: "Set", arguments: [.string("org.bluez.Device1"), .string("ServiceData"),
                                                          .variant(.vardict([BLEAdvert.bthomeUUID: .bytes(payload)]))])
    }

    @Test("press → Dose 1; replay and stranger ignored; battery recorded; removal picked up without a restart")
    func press() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["button", "add", Self.button, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await populate(mock, devices: [(Self.button, "SBBT-002C"), (Self.stranger, "neighbour")])
            let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
            let log = LineBuffer()
            let result = try await Subprocess.run(
                exe, arguments: Arguments(argv),
                environment: cli.environment(tz: "America/New_York", extra: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "DOSETAP_AUDIO_DEVICE": "null"]),
                input: .none, output: .discarded, error: .sequence
            ) { execution in
                let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                #expect(await log.wait(for: "listening to BlueZ", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")

                // A press: BTHome v2 plaintext, packet id 7, battery 93 %, button event 0x01.
                try await advertise(mock, Self.button, [0x40, 0x00, 0x07, 0x01, 0x5D, 0x3A, 0x01])
                #expect(await log.wait(for: "button action recorded", timeout: 5) != nil, "\(log.all.joined(separator: "\n"))")
                // The same advert again (BlueZ reports repeats): no second action.
                try await advertise(mock, Self.button, [0x40, 0x00, 0x07, 0x01, 0x5D, 0x3A, 0x01])
                // A stranger's button: nothing, said once.
                try await advertise(mock, Self.stranger, [0x40, 0x00, 0x01, 0x3A, 0x01])
                try await advertise(mock, Self.stranger, [0x40, 0x00, 0x02, 0x3A, 0x01])
                #expect(await log.wait(for: "button that was not added", timeout: 5) != nil)
                try await Task.sleep(for: .milliseconds(500))

                // Removed while the agent runs: its presses no longer act.
                #expect(try await cli.run(["button", "remove", Self.button]).exitCode == 0)
                #expect(await log.wait(for: "buttons changed", timeout: 5) != nil)
                try await advertise(mock, Self.button, [0x40, 0x00, 0x09, 0x3A, 0x01])
                try await Task.sleep(for: .milliseconds(500))
                try execution.send(signal: .terminate)
                _ = try? await reader.value
            }
            #expect(result.terminationStatus == .exited(0))
        }
        #expect(buttonEvents(in: cli) == 1)
        let repo = DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory))
        let events = try repo.allEvents()
        #expect(events.count == 1)
        #expect(events.first?.source == .button)
        if case .dose1 = events.first?.kind {} else { Issue.record("expected Dose 1, got \(String(describing: events.first))") }
        let levels = try BatterySampleRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).latestLevels()
        #expect(levels["button:bedside"]?.level == 93)
    }

    @Test("bluetoothd restarts: the agent re-reads BlueZ's objects and the next press still acts")
    func bluetoothdRestart() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["button", "add", Self.button, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await populate(mock, devices: [(Self.button, "SBBT-002C")])
            let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
            let log = LineBuffer()
            let result = try await Subprocess.run(
                exe, arguments: Arguments(argv),
                environment: cli.environment(tz: "America/New_York", extra: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "DOSETAP_AUDIO_DEVICE": "null"]),
                input: .none, output: .discarded, error: .sequence
            ) { execution in
                let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                #expect(await log.wait(for: "listening to BlueZ", timeout: 15) != nil)
                // bluetoothd dies and comes back: a new owner of org.bluez with a fresh object tree.
                try killMock(address: bus.address)
                let restarted = Task {
                    try await Subprocess.run(.path("/usr/bin/python3"), arguments: ["-m", "dbusmock", "--system", "--template", "bluez5"],
                                             environment: .custom(["PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": bus.address]),
                                             input: .none, output: .discarded, error: .discarded)
                }
                defer { restarted.cancel(); try? killMock(address: bus.address) }
                #expect(await log.wait(for: "bluetoothd restarted", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
                try await populate(mock, devices: [(Self.button, "SBBT-002C")])
                try await Task.sleep(for: .milliseconds(500))
                try await advertise(mock, Self.button, [0x40, 0x00, 0x03, 0x3A, 0x01])
                #expect(await log.wait(for: "button action recorded", timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
                try execution.send(signal: .terminate)
                _ = try? await reader.value
            }
            #expect(result.terminationStatus == .exited(0))
        }
        #expect(buttonEvents(in: cli) == 1)
    }

    /// Kills the python-dbusmock server on this bus.
    func killMock(address: String) throws {
        for pid in try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap(Int32.init) {
            guard let cmd = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                  String(decoding: cmd, as: UTF8.self).contains("dbusmock"),
                  let env = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                  String(decoding: env, as: UTF8.self).contains(address) else { continue }
            kill(pid, SIGKILL)
        }
    }

    /// Dose events recorded from buttons, read from the store after the agent stopped.
    func buttonEvents(in cli: CLI) -> Int {
        (try? DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).allEvents().filter { $0.source == .button }.count) ?? -1
    }

    @Test("button add/list/map/remove and their validation errors")
    func commands() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["button", "add", "a4-c1-38-8d-18-b2", "--kind", "bthome", "--bindkey", "231d39c1d7cc1ab1aee224cd096db932"]).exitCode == 0)
        #expect(try await cli.run(["button", "add", "11:22:33:44:55:66", "--kind", "hid", "--name", "shutter"]).exitCode == 0)
        #expect(try await cli.run(["button", "map", "11:22:33:44:55:66", "--single", "snooze", "--hold", "none", "--no-double"]).exitCode == 0)
        let list = try JSONSerialization.jsonObject(with: Data(try await cli.run(["button", "list", "--json"]).out.utf8)) as? [[String: Any]] ?? []
        #expect(list.count == 2)
        let shelly = try #require(list.first { $0["address"] as? String == "A4:C1:38:8D:18:B2" })
        #expect(shelly["encrypted"] as? Bool == true)
        let shutter = try #require(list.first { $0["name"] as? String == "shutter" })
        let mapping = try #require(shutter["mapping"] as? [String: Any])
        #expect(mapping["single"] as? String == "snooze" && mapping["hold"] as? String == "none" && mapping["noDouble"] as? Bool == true)
        #expect(try await cli.run(["button", "remove", "11:22:33:44:55:66"]).exitCode == 0)
        for (args, message) in [
            (["button", "add", "AA:BB:CC", "--kind", "bthome"], "invalid address 'AA:BB:CC'"),
            (["button", "add", "AA:BB:CC:DD:EE:GG", "--kind", "itag"], "invalid address"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", "1234"], "invalid bindkey: expected 32 hex digits"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "bthome", "--bindkey", String(repeating: "z", count: 32)], "invalid bindkey"),
            (["button", "add", "AA:BB:CC:DD:EE:FF", "--kind", "flic"], "flic"),
            (["button", "map", "AA:BB:CC:DD:EE:FF", "--single", "take"], "no button AA:BB:CC:DD:EE:FF"),
            (["button", "map", "A4:C1:38:8D:18:B2", "--single", "dance"], "dance"),
            (["button", "remove", "11:22:33:44:55:66"], "no button 11:22:33:44:55:66"),
        ] {
            let r = try await cli.run(args)
            #expect(r.exitCode != 0 && r.exitCode != nil, "\(args)")
            #expect(r.err.contains(message) && r.err.split(separator: "\n").count == 1, "\(args): \(r.err)")
        }
    }
}
