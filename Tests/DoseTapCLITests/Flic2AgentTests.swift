import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// A Flic 2 on a private system bus (python-dbusmock's bluez5 template plus `MockBlueZGATT.AddFlic2`), the button's
/// side of the protocol played by `SimulatedFlic2Button` (its certificate signed with a test factory key, which a
/// debug build of dosetap accepts from `DOSETAP_TEST_FLIC2_FACTORY_KEY`), the real `dosetap` binary, the real store.
@Suite("Flic 2 buttons through BlueZ GATT, end to end", .serialized)
struct Flic2AgentTests {
    static let address = "80:E4:DA:70:12:34"

    struct Setup {
        let bus: PrivateBus.Bus
        let mock: DBusConnection
        let peer: MockFlic2Peer
        let environment: [String: String]
    }

    static func mock(_ c: DBusConnection, _ path: String, _ member: String, _ arguments: [DBusValue],
                     interface: String = "org.freedesktop.DBus.Mock") async throws -> [DBusValue] {
        try await c.call(destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments)
    }

    /// hci0 and a Flic 2 answered by a simulated button.
    static func setUp(_ bus: PrivateBus.Bus, button: (BluetoothAddress, TestFlic2Factory) -> SimulatedFlic2Button) async throws -> Setup {
        let mock = try DBusConnection(bus: .address(bus.address))
        _ = try await Self.mock(mock, "/org/bluez", "AddAdapter", [.string("hci0"), .string("nightstand-pi")], interface: "org.bluez.Mock")
        for m in MockBlueZGATT.methods {
            _ = try await Self.mock(mock, MockBlueZGATT.path, "AddMethod", [.string(MockBlueZGATT.interface), .string(m.name),
                                                                            .string(m.inSignature), .string(m.outSignature), .string(m.code)])
        }
        let paths = try await Self.mock(mock, MockBlueZGATT.path, "AddFlic2", [.string("hci0"), .string(address), .string("F2")],
                                        interface: MockBlueZGATT.interface)
        let factory = TestFlic2Factory()
        let peer = MockFlic2Peer(connection: mock, device: paths[0].string ?? "", write: paths[1].string ?? "", notify: paths[2].string ?? "",
                                 button: button(BluetoothAddress(address)!, factory))
        try await peer.start()
        return Setup(bus: bus, mock: mock, peer: peer, environment: [
            "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "DOSETAP_TEST_FLIC2_FACTORY_KEY": HexBytes.string(factory.publicKey),
        ])
    }

    /// Runs `dosetap agent` on the private bus while `body` acts on its log; stops it with SIGTERM and expects exit 0.
    static func withAgent(_ cli: CLI, _ setup: Setup, tz: String = "UTC",
                          _ body: @Sendable (LineBuffer, @escaping @Sendable () -> String) async throws -> Void) async throws {
        let log = LineBuffer()
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let result = try await Subprocess.run(
            exe, arguments: Arguments(argv), environment: cli.environment(tz: tz, extra: setup.environment),
            input: .none, output: .discarded, error: .sequence
        ) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
            try await body(log) { log.all.joined(separator: "\n") }
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0))
    }

    @Test("pairing, the agent: press → Dose 1, double → snooze, hold → undo, battery, a replay refused, quick verify, an old queued press refused and counted once")
    func pairAndUse() async throws {
        let cli = try CLI()
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let setup = try await Self.setUp(bus) { SimulatedFlic2Button(address: $0, factory: $1, signatureVariant: 2) }
            // Pairing as a person does it.
            let add = try await cli.run(["button", "add", Self.address, "--kind", "flic2", "--name", "nightstand", "--seconds", "30"],
                                        env: setup.environment)
            #expect(add.exitCode == 0, "\(add.out)\n\(add.err)")
            #expect(add.out.contains("Hold the Flic 2 for 7 seconds until it flashes"), "\(add.out)")
            #expect(add.out.contains("Verified a genuine Flic 2 (serial BG00-T00001, battery 3.00 V, 100 %)."), "\(add.out)")
            #expect(add.out.contains("Added nightstand (80:E4:DA:70:12:34, flic2)"), "\(add.out)")
            let pairing = try #require(setup.peer.withButton { $0.pairings.first })
            let hex = Flic2Pairing(identifier: pairing.key, key: pairing.value).hex
            // The pairing is kept, never shown.
            let list = try await cli.run(["button", "list", "--json"])
            for text in [add.out, add.err, list.out, list.err] { #expect(!text.contains(hex)) }
            #expect(try await cli.sqlite("SELECT pairing FROM button").trimmingCharacters(in: .whitespacesAndNewlines) == hex)
            // It made the link for pairing, and dropped it.
            #expect(try await Self.mock(setup.mock, setup.peer.device, "GetMethodCalls", [.string("Disconnect")]).first?.array?.count == 1)

            // button test: quick verify, the gesture printed, nothing acted on.
            let (testExe, testArgv) = cli.command(["button", "test", "--seconds", "6"], scenario: nil, fakeTime: nil)
            let out = LineBuffer()
            let tested = try await Subprocess.run(
                testExe, arguments: Arguments(testArgv), environment: cli.environment(extra: setup.environment),
                input: .none, output: .sequence, error: .discarded
            ) { execution in
                let reader = Task { for try await line in execution.standardOutput.strings() { out.append(line) } }
                for _ in 0..<250 where !setup.peer.withButton({ $0.isConnected }) { try await Task.sleep(for: .milliseconds(20)) }
                #expect(setup.peer.withButton { $0.isConnected }, "button test never verified")
                setup.peer.press(.single)
                #expect(await out.wait(for: "nightstand: single → take (not acted on)", timeout: 5) != nil, "\(out.all)")
                _ = try? await reader.value
            }
            #expect(tested.terminationStatus == .exited(0))
            #expect(try await Self.mock(setup.mock, setup.peer.device, "GetMethodCalls", [.string("Disconnect")]).first?.array?.count == 2)

            try await Self.withAgent(cli, setup, tz: "America/New_York") { log, all in
                #expect(await log.wait(for: "Flic 2 verified: listening for presses", timeout: 20) != nil, "\(all())")
                // The agent says "verified" when its quick verify ends; the button listens from the InitButtonEvents
                // that follows. A press in between is queued (as a real Flic 2 does) and would arrive as "queued".
                for _ in 0..<250 where !setup.peer.withButton({ $0.isConnected }) { try await Task.sleep(for: .milliseconds(20)) }
                setup.peer.press(.single)
                #expect(await log.wait(for: "button action recorded", timeout: 10) != nil, "\(all())")
                setup.peer.press(.double)
                #expect(await log.wait(for: "gesture=double", timeout: 10) != nil, "\(all())")
                setup.peer.press(.hold)
                #expect(await log.wait(for: "gesture=hold", timeout: 10) != nil, "\(all())")

                // A replayed notification fails its MAC: the session ends, nothing is recorded, the agent verifies again.
                let replayed = setup.peer.press(.double)
                #expect(await log.wait(for: "gesture=double", count: 2, timeout: 10) != nil, "\(all())")
                setup.peer.notifyRaw(replayed)
                #expect(await log.wait(for: "Flic 2 session ended", timeout: 10) != nil, "\(all())")
                #expect(log.all.contains { $0.contains("Flic 2 session ended") && $0.contains("failed its MAC") }, "\(all())")
                #expect(await log.wait(for: "Flic 2 verified: listening for presses", count: 2, timeout: 20) != nil, "\(all())")
                #expect(log.count("gesture=double") == 2)

                // Out of reach: a press queued in the button for two minutes is refused as a dose when it arrives.
                try await setup.peer.dropLink()
                setup.peer.press(.single)
                setup.peer.withButton { $0.advance(seconds: 120) }
                // Back in reach (the agent may already be connecting it: AlreadyConnected is fine).
                _ = try? await Self.mock(setup.mock, setup.peer.device, "Connect", [], interface: "org.bluez.Device1")
                #expect(await log.wait(for: "Flic 2 press queued while out of reach", timeout: 30) != nil, "\(all())")
                #expect(await log.wait(for: "s old; a delayed input never records a dose", timeout: 10) != nil, "\(all())")
                // Another reconnect: the button replays what was not acknowledged; nothing is acted on twice.
                setup.peer.withButton { $0.replaysUnacknowledged = true }
                try await setup.peer.dropLink()
                #expect(await log.wait(for: "Flic 2 verified: listening for presses", count: 4, timeout: 30) != nil, "\(all())")
                try await Task.sleep(for: .milliseconds(500))
                #expect(log.count("Flic 2 press queued while out of reach") == 1, "\(all())")
                if ProcessInfo.processInfo.environment["DOSETAP_SHOW_AGENT_LOG"] != nil { print(all()) }
            }
        }
        let database = try DoseTapDatabase(directory: cli.dataDirectory)
        let events = try DoseRepository(database: database).allEvents()
        #expect(events.contains { if case .dose1 = $0.kind { true } else { false } }, "\(events)")
        #expect(try BatterySampleRepository(database: database).latestLevels()["button:nightstand"]?.level == 100)
        #expect(try ButtonRepository(database: database).progress(address: Self.address) != nil)
    }

    @Test("out of reach, then advertising again: the agent reconnects at once instead of waiting out its back-off")
    func reconnectsOnAdvert() async throws {
        let cli = try CLI()
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let setup = try await Self.setUp(bus) { SimulatedFlic2Button(address: $0, factory: $1) }
            let add = try await cli.run(["button", "add", Self.address, "--kind", "flic2", "--seconds", "30"], env: setup.environment)
            #expect(add.exitCode == 0, "\(add.err)")
            try await Self.withAgent(cli, setup) { log, all in
                #expect(await log.wait(for: "Flic 2 verified: listening for presses", timeout: 20) != nil, "\(all())")
                // Out of reach: four connection attempts fail (1, 2, 5 and 10 s apart), then the agent would wait 20 s.
                _ = try await Self.mock(setup.mock, MockBlueZGATT.path, "FailConnects", [.objectPath(setup.peer.device), .uint32(4)],
                                        interface: MockBlueZGATT.interface)
                try await setup.peer.dropLink()
                // Connects so far: pairing's, the agent's first, and the four that fail.
                var connects = 0
                for _ in 0..<200 where connects < 6 {
                    connects = try await Self.mock(setup.mock, setup.peer.device, "GetMethodCalls", [.string("Connect")]).first?.array?.count ?? 0
                    if connects < 6 { try await Task.sleep(for: .milliseconds(200)) }
                }
                #expect(connects == 6, "\(all())")
                try await Task.sleep(for: .milliseconds(300))
                // It advertises: reconnected well before those 20 s.
                let advertised = Date()
                _ = try await setup.mock.call(destination: "org.bluez", path: setup.peer.device, interface: "org.freedesktop.DBus.Properties",
                                              member: "Set", arguments: [.string("org.bluez.Device1"), .string("RSSI"), .variant(.int16(-60))])
                #expect(await log.wait(for: "Flic 2 verified: listening for presses", count: 2, timeout: 15) != nil, "\(all())")
                #expect(Date().timeIntervalSince(advertised) < 15)
                setup.peer.press(.single)
                #expect(await log.wait(for: "button action recorded", timeout: 10) != nil, "\(all())")
            }
        }
    }

    @Test("a pairing the button no longer knows (reset, or paired away): the agent says so as an error, once, and the button never acts")
    func forgottenPairing() async throws {
        let cli = try CLI()
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let setup = try await Self.setUp(bus) { SimulatedFlic2Button(address: $0, factory: $1) }
            let add = try await cli.run(["button", "add", Self.address, "--kind", "flic2", "--name", "nightstand", "--seconds", "30"],
                                        env: setup.environment)
            #expect(add.exitCode == 0, "\(add.err)")
            setup.peer.withButton { $0.forgetPairings() }
            try await Self.withAgent(cli, setup) { log, all in
                let stopped = "Flic 2 stopped: its pairing no longer works, so it never acts until it is added again"
                #expect(await log.wait(for: stopped, timeout: 20) != nil, "\(all())")
                #expect(log.all.contains { $0.contains(stopped) && $0.contains(" error ") && $0.contains("paired elsewhere") }, "\(all())")
                // Its retries (1 s, then 2 s apart: connects beyond pairing's and the agent's first) say nothing more.
                var connects = 0
                for _ in 0..<150 where connects < 4 {
                    connects = try await Self.mock(setup.mock, setup.peer.device, "GetMethodCalls", [.string("Connect")]).first?.array?.count ?? 0
                    if connects < 4 { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(connects >= 4, "\(all())")
                #expect(log.count(stopped) == 1, "\(all())")
                #expect(log.count("Flic 2 verified") == 0)
            }
        }
        #expect(try DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).count() == 0)
    }

    @Test("refused pairings: not in pairing mode, a certificate for another address, a button that is not a genuine Flic 2",
          arguments: ["public", "address", "factory"])
    func refusedPairing(_ problem: String) async throws {
        let cli = try CLI()
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let setup = try await Self.setUp(bus) { address, factory in
                switch problem {
                case "public": return SimulatedFlic2Button(address: address, factory: factory, publicMode: false)
                case "address":
                    var button = SimulatedFlic2Button(address: address, factory: factory)
                    button.certificateAddress = BluetoothAddress("80:E4:DA:70:99:99")!
                    return button
                default: return SimulatedFlic2Button(address: address, factory: TestFlic2Factory())
                }
            }
            let add = try await cli.run(["button", "add", Self.address, "--kind", "flic2", "--seconds", "20"], env: setup.environment)
            #expect(add.exitCode != 0)
            let expected = [
                "public": "dosetap: pairing failed: the button is not in pairing mode (a Flic 2 paired with a phone or hub refuses others until then): hold it for 7 seconds until it flashes, then try again",
                "address": "dosetap: pairing failed: verify failed: the button's certificate is for 80:E4:DA:70:99:99, not the device we connected to",
                "factory": "dosetap: pairing failed: verify failed: the button's certificate is not signed by Flic (not a genuine Flic 2)",
            ][problem]!
            #expect(add.err.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(expected), "\(add.err)")
            #expect(add.err.split(separator: "\n").count == 1, "one line: \(add.err)")
            // Nothing was paired on either side.
            #expect(setup.peer.withButton { $0.pairings.isEmpty })
        }
        #expect(try await cli.run(["button", "list", "--json"]).out.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test("no Flic 2 answers: a clear timeout, nothing added")
    func timeout() async throws {
        let cli = try CLI()
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            _ = try await Self.mock(mock, "/org/bluez", "AddAdapter", [.string("hci0"), .string("pi")], interface: "org.bluez.Mock")
            let add = try await cli.run(["button", "add", Self.address, "--kind", "flic2", "--seconds", "5"],
                                        env: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            #expect(add.exitCode != 0)
            #expect(add.err.contains("no Flic 2 paired at 80:E4:DA:70:12:34 within 5 s: is it in reach, and in pairing mode (hold it for 7 seconds until it flashes)?"), "\(add.err)")
        }
    }
}
