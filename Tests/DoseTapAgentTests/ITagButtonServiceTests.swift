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

/// iTags through the real ButtonService, the real GATT client on a mock bluetoothd and a real database.
/// Press times come from the fake clock (the GATT client stamps presses with the service's clock), so a
/// slow machine can neither make a press stale nor stretch a double press.
@Suite("iTags in the agent: GATT presses → gestures → the dose policy", .serialized)
struct ITagButtonServiceTests {
    static let itag = "FF:FF:10:0E:8A:2C"
    static let stranger = "FF:FF:C2:11:04:9B"

    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)

    static func mock(_ c: DBusConnection, _ path: String, _ member: String, _ arguments: [DBusValue],
                     interface: String = "org.freedesktop.DBus.Mock") async throws -> [DBusValue] {
        try await c.call(destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments)
    }

    /// hci0 and two iTags: (device, press characteristic) of each.
    static func populate(_ c: DBusConnection) async throws -> [String: (device: String, press: String)] {
        _ = try await mock(c, "/org/bluez", "AddAdapter", [.string("hci0"), .string("bedside-pi")], interface: "org.bluez.Mock")
        for m in MockBlueZGATT.methods {
            _ = try await mock(c, MockBlueZGATT.path, "AddMethod", [.string(MockBlueZGATT.interface), .string(m.name),
                                                                    .string(m.inSignature), .string(m.outSignature), .string(m.code)])
        }
        var out: [String: (String, String)] = [:]
        for address in [itag, stranger] {
            let paths = try await mock(c, MockBlueZGATT.path, "AddITag", [.string("hci0"), .string(address), .string("iTAG"), .byte(80)],
                                       interface: MockBlueZGATT.interface).map { $0.string ?? "" }
            out[address] = (paths[0], paths[1])
        }
        return out
    }

    static func set(_ c: DBusConnection, _ path: String, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        _ = try await c.call(destination: "org.bluez", path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                             arguments: [.string(interface), .string(name), .variant(value)])
    }

    static func press(_ c: DBusConnection, _ characteristic: String) async throws {
        try await set(c, characteristic, "org.bluez.GattCharacteristic1", "Value", .bytes([0x01]))
    }

    static func calls(_ c: DBusConnection, _ path: String, _ method: String) async throws -> Int {
        try await mock(c, path, "GetMethodCalls", [.string(method)]).first?.array?.count ?? -1
    }

    /// Polls (every 20 ms, at most `timeout` seconds of wall time) until `condition` holds. The deadline only
    /// bounds a failure; 30 s because the mock bluetoothd can be that slow in a full parallel run on two cores.
    static func eventually(timeout: TimeInterval = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
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

    @Test("an added iTag: press → Dose 1, double → snooze, battery as button:<name>; a stranger's iTag does nothing; removal releases it")
    func endToEnd() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-itag-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try DoseTapDatabase(directory: dir)
        let buttons = ButtonRepository(database: db)
        try buttons.save(try ButtonConfig(address: Self.itag, kind: .itag, name: "bedside"))
        let repo = DoseRepository(database: db)
        let samples = BatterySampleRepository(database: db)
        let logs = { var h = InMemoryLogHandler(); h.logLevel = .debug; return h }()
        let logger = Logger(label: "t") { _ in logs }
        let start = clock.now()

        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            let tags = try await Self.populate(mock)
            let itag = try #require(tags[Self.itag]), stranger = try #require(tags[Self.stranger])
            let (changes, changed) = AsyncStream<Void>.makeStream()
            let service = ButtonService(
                sources: ButtonSources.machine(bluez: BlueZClient(connection: try DBusConnection(bus: .address(bus.address)), logger: logger),
                                               hid: nil, clock: clock, logger: logger), buttons: buttons,
                doses: DoseUseCases(repository: repo, clock: clock), samples: samples, clock: clock, logger: logger,
                databaseChanges: changes)
            let running = Task { try await service.run() }
            defer { running.cancel() }

            // Connected; the initial battery recorded at once.
            #expect(await Self.eventually { Self.count(logs, "iTag connected: listening for presses") == 1 }, "\(logs.entries)")
            #expect(try await Self.eventually { try samples.latestLevels()["button:bedside"]?.level == 80 })

            // One press: a single once the double window (0.5 s) has passed → Dose 1 from the button.
            try await Self.press(mock, itag.press)
            #expect(await Self.eventually { Self.count(logs, "iTag press") == 1 })
            clock.advance(by: 0.6)
            _ = service.pipeline.expireGestures(address: Self.itag, at: clock.now())   // or the service's own timer did
            #expect(try await Self.eventually { try repo.count() == 1 })
            let first = try #require(try repo.allEvents().first)
            #expect(first.source == .button)
            if case .dose1 = first.kind {} else { Issue.record("expected Dose 1, got \(first.kind)") }

            // Two presses 0.3 s apart: one double → snooze, not two takes.
            clock.advance(by: 60)
            try await Self.press(mock, itag.press)
            #expect(await Self.eventually { Self.count(logs, "iTag press") == 2 })
            clock.advance(by: 0.3)
            try await Self.press(mock, itag.press)
            #expect(await Self.eventually { Self.count(logs, "iTag press") == 3 })
            #expect(try await Self.eventually { try repo.count() == 2 })
            clock.advance(by: 1)
            #expect(service.pipeline.expireGestures(address: Self.itag, at: clock.now()).isEmpty)
            let events = try repo.allEvents()
            #expect(events.count == 2)
            if case .snooze = events.last?.kind {} else { Issue.record("expected a snooze, got \(String(describing: events.last?.kind))") }

            // A stranger's iTag: never connected, its notifications reach nobody.
            try await Self.press(mock, stranger.press)
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.count(logs, "iTag press") == 3)
            #expect(try await Self.calls(mock, stranger.device, "Connect") == 0)
            #expect(try repo.count() == 2)

            // The battery: at most one sample per 10 minutes.
            clock.set(start.addingTimeInterval(300))
            try await Self.set(mock, itag.device, "org.bluez.Battery1", "Percentage", .byte(75))
            #expect(await Self.eventually { logs.entries.contains { $0.message.description == "iTag battery" && $0.metadata["level"] == "75" } })
            clock.set(start.addingTimeInterval(600))
            try await Self.set(mock, itag.device, "org.bluez.Battery1", "Percentage", .byte(70))
            #expect(try await Self.eventually { try samples.latestLevels()["button:bedside"]?.level == 70 })
            // (Had 75 been stored at +300 s, 70 at +600 s would have come too soon and 75 would still be the latest.)
            #expect(try samples.latestLevels()["button:bedside"]?.at == start.addingTimeInterval(600))

            // Removed while running: it stops listening and releases the link.
            #expect(try buttons.remove(address: Self.itag))
            changed.yield()
            #expect(try await Self.eventually { try await Self.calls(mock, itag.device, "Disconnect") == 1 })
            #expect(try await Self.calls(mock, itag.press, "StopNotify") == 1)
            running.cancel()
            _ = try? await running.value
        }
    }
}
