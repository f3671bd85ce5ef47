import DoseTapLinux
import DoseTapTesting
import Foundation
import Synchronization
import Testing

/// An iTag on a mock bluetoothd (python-dbusmock's bluez5 template plus GATT objects, see `MockBlueZGATT`).
@Suite("iTag GATT client on a mock BlueZ", .serialized)
struct GATTButtonClientTests {
    static let itag = "FF:FF:10:0E:8A:2C"
    static let other = "FF:FF:C2:11:04:9B"
    static let gatt = "org.bluez.GattCharacteristic1"

    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000))

    static func devicePath(_ address: String) -> String { "/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_") }

    /// Paths of one iTag in the mock.
    struct ITag {
        var device: String
        /// 0xFFE1 under 0xFFE0: the press characteristic.
        var press: String
        /// 0xFFE1 under another service (0x180F), listed first: must never be used.
        var decoy: String
    }

    /// A fast schedule, so reconnection tests take milliseconds.
    static var timing: GATTButtonClient.Timing {
        var t = GATTButtonClient.Timing()
        t.backoff = ReconnectBackoff(steps: [.milliseconds(100), .milliseconds(200)])
        t.resolve = .seconds(5)
        return t
    }

    static func mockCall(_ c: DBusConnection, _ path: String, _ member: String, _ arguments: [DBusValue],
                         interface: String = "org.freedesktop.DBus.Mock") async throws -> [DBusValue] {
        try await c.call(destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments)
    }

    static func installGATT(_ c: DBusConnection) async throws {
        for m in MockBlueZGATT.methods {
            _ = try await mockCall(c, MockBlueZGATT.path, "AddMethod", [.string(MockBlueZGATT.interface), .string(m.name),
                                                                        .string(m.inSignature), .string(m.outSignature), .string(m.code)])
        }
    }

    static func addAdapter(_ c: DBusConnection) async throws {
        _ = try await mockCall(c, "/org/bluez", "AddAdapter", [.string("hci0"), .string("bedside-pi")], interface: "org.bluez.Mock")
        try await installGATT(c)
    }

    /// An iTag device with battery, the press characteristic and a decoy 0xFFE1 under another service.
    @discardableResult
    static func addITag(_ c: DBusConnection, _ address: String, battery: UInt8 = 80) async throws -> ITag {
        let paths = try await mockCall(c, MockBlueZGATT.path, "AddITag", [.string("hci0"), .string(address), .string("iTAG"), .byte(battery)],
                                       interface: MockBlueZGATT.interface).map { $0.string ?? "" }
        return ITag(device: paths[0], press: paths[1], decoy: paths[2])
    }

    static func set(_ c: DBusConnection, _ path: String, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        _ = try await c.call(destination: "org.bluez", path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                             arguments: [.string(interface), .string(name), .variant(value)])
    }

    static func notify(_ c: DBusConnection, _ characteristic: String, _ value: [UInt8]) async throws {
        try await set(c, characteristic, gatt, "Value", .bytes(value))
    }

    static func calls(_ c: DBusConnection, _ path: String, _ method: String) async throws -> Int {
        try await mockCall(c, path, "GetMethodCalls", [.string(method)]).first?.array?.count ?? -1
    }

    /// The link drops as BlueZ reports it: services unresolved, then disconnected.
    static func dropLink(_ c: DBusConnection, _ device: String) async throws {
        try await set(c, device, "org.bluez.Device1", "ServicesResolved", .bool(false))
        try await set(c, device, "org.bluez.Device1", "Connected", .bool(false))
    }

    /// A client whose presses are stamped and whose timers (back-off, step timeouts) run on the fake clock.
    func client(_ bus: PrivateBus.Bus) throws -> GATTButtonClient {
        GATTButtonClient(bluez: BlueZClient(connection: try DBusConnection(bus: .address(bus.address))), clock: clock, timing: Self.timing)
    }

    /// Until `count` timers sleep on the fake clock. The client runs on a real bus, so this polls (every
    /// 5 ms, 30 s at most: a slow mock under a full parallel run) for it to get there; the time it then waits is the fake clock's.
    func sleepers(_ count: Int = 1) async -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while clock.sleeperCount < count, Date() < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return clock.sleeperCount >= count
    }

    /// The client waits out a back-off of `seconds` on the fake clock: still waiting just before, on its way
    /// just after.
    func passBackoff(_ seconds: TimeInterval, sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(await sleepers(), "no back-off started", sourceLocation: sourceLocation)
        clock.advance(by: seconds - 0.001)
        #expect(clock.sleeperCount == 1, "the back-off ended before \(seconds) s", sourceLocation: sourceLocation)
        clock.advance(by: 0.002)
        #expect(clock.sleeperCount == 0, "the back-off is longer than \(seconds) s", sourceLocation: sourceLocation)
    }

    @Test("connects, notifies on 0xFFE1 under 0xFFE0 only, reports presses and the battery; nothing else is a press")
    func presses() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            let stranger = try await Self.addITag(mock, Self.other)
            let log = EventLog(try client(bus).events(address: Self.itag.lowercased()))
            defer { log.stop() }

            #expect(await log.wait { $0.contains(.connected) }, "\(log.events)")
            #expect(log.events == [.battery(80), .connected])
            #expect(try await Self.calls(mock, itag.device, "Connect") == 1)
            #expect(try await Self.calls(mock, itag.press, "StartNotify") == 1)
            #expect(try await Self.calls(mock, itag.decoy, "StartNotify") == 0)
            #expect(try await Self.calls(mock, stranger.device, "Connect") == 0)
            #expect(try await Self.calls(mock, stranger.press, "StartNotify") == 0)

            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.count == 3 })
            #expect(log.events.last == .press(at: clock.now()))

            // Not presses: other values, an empty one, a malformed signal, the decoy, the other iTag, a look-alike
            // signal from another process. The battery change after them is the next event.
            try await Self.notify(mock, itag.press, [0x02])
            try await Self.notify(mock, itag.press, [])
            try await Self.notify(mock, itag.press, [0x01, 0x01])
            _ = try await Self.mockCall(mock, itag.press, "EmitSignal", [
                .string("org.freedesktop.DBus.Properties"), .string("PropertiesChanged"), .string("sa{sv}as"),
                .array(elementSignature: "v", [.variant(.string(Self.gatt)), .variant(.vardict(["Value": .string("01")])),
                                               .variant(.strings([]))]),
            ])
            _ = try await Self.mockCall(mock, itag.press, "EmitSignal", [
                .string("org.freedesktop.DBus.Properties"), .string("PropertiesChanged"), .string("s"),
                .array(elementSignature: "v", [.variant(.string(Self.gatt))]),
            ])
            try await Self.notify(mock, itag.decoy, [0x01])
            try await Self.notify(mock, stranger.press, [0x01])
            try mock.send(path: itag.press, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                          arguments: [.string(Self.gatt), .vardict(["Value": .bytes([0x01])]), .strings([])])
            try await Self.set(mock, itag.device, "org.bluez.Battery1", "Percentage", .byte(71))
            #expect(await log.wait { $0.contains(.battery(71)) }, "\(log.events)")
            #expect(log.events.count == 4, "\(log.events)")

            clock.advance(by: 0.3)
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.count == 5 })
            #expect(log.events.last == .press(at: clock.now()))
        }
    }

    @Test("link loss: Connect again after the backoff, notifications again, presses flow again")
    func reconnect() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            let log = EventLog(try client(bus).events(address: Self.itag))
            defer { log.stop() }
            #expect(await log.wait { $0.contains(.connected) })

            try await Self.dropLink(mock, itag.device)
            #expect(await log.wait { $0.contains(.disconnected(reason: "link lost")) }, "\(log.events)")
            // The first back-off step, on the clock: no new Connect until it has passed.
            #expect(await sleepers())
            #expect(try await Self.calls(mock, itag.device, "Connect") == 1)
            await passBackoff(0.1)
            #expect(await log.wait { $0.filter { $0 == .connected }.count == 2 }, "\(log.events)")
            #expect(try await Self.calls(mock, itag.device, "Connect") == 2)
            #expect(try await Self.calls(mock, itag.press, "StartNotify") == 2)
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.last == .press(at: clock.now()) }, "\(log.events)")

            // Connects that fail are retried on the backoff schedule until one succeeds.
            _ = try await Self.mockCall(mock, MockBlueZGATT.path, "FailConnects", [.objectPath(itag.device), .uint32(2)],
                                        interface: MockBlueZGATT.interface)
            try await Self.dropLink(mock, itag.device)
            #expect(await log.wait { $0.filter { $0 == .disconnected(reason: "link lost") }.count == 2 }, "\(log.events)")
            for step in [0.1, 0.2, 0.2] { await passBackoff(step) }   // the count restarted; past the last step, the last
            #expect(await log.wait(timeout: 10) { $0.filter { $0 == .connected }.count == 3 }, "\(log.events)")
            #expect(try await Self.calls(mock, itag.device, "Connect") == 5)
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.filter { if case .press = $0 { true } else { false } }.count == 2 }, "\(log.events)")
        }
    }

    @Test("services never resolved: the step times out on the clock, the link it made is dropped, the next attempt connects")
    func resolveTimeout() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            _ = try await Self.mockCall(mock, MockBlueZGATT.path, "SkipResolves", [.objectPath(itag.device), .uint32(1)],
                                        interface: MockBlueZGATT.interface)
            let log = EventLog(try client(bus).events(address: Self.itag))
            defer { log.stop() }
            // Linked, waiting for ServicesResolved under the 5-s step timeout on the fake clock.
            #expect(await sleepers())
            #expect(try await Self.calls(mock, itag.device, "Connect") == 1)
            clock.advance(by: 4.9)
            #expect(clock.sleeperCount == 1)
            clock.advance(by: 0.2)
            // Timed out: the link this attempt made is dropped, then the first back-off step.
            await passBackoff(0.1)
            #expect(try await Self.calls(mock, itag.device, "Disconnect") == 1)
            #expect(await log.wait { $0.contains(.connected) }, "\(log.events)")
            #expect(try await Self.calls(mock, itag.device, "Connect") == 2)
            // It never reached notifications: no `disconnected` for the failed attempt (each attempt reports the battery).
            #expect(log.events == [.battery(80), .battery(80), .connected], "\(log.events)")
        }
    }

    @Test("the adapter powered off and on: the reconnection wait ends at once instead of running its course")
    func adapterPowerCycle() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            var slow = Self.timing
            slow.backoff = ReconnectBackoff(steps: [.seconds(120)])
            let client = GATTButtonClient(bluez: BlueZClient(connection: try DBusConnection(bus: .address(bus.address))), clock: clock,
                                          timing: slow)
            let log = EventLog(client.events(address: Self.itag))
            defer { log.stop() }
            #expect(await log.wait { $0.contains(.connected) })
            // The adapter goes off (the link with it), then comes back: the 120-s wait must not run its course.
            try await Self.set(mock, "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", .bool(false))
            try await Self.dropLink(mock, itag.device)
            #expect(await log.wait { $0.contains(.disconnected(reason: "link lost")) }, "\(log.events)")
            // Parked on the fake clock's 120 s: however long this test takes, no Connect until the adapter is back.
            #expect(await sleepers())
            #expect(try await Self.calls(mock, itag.device, "Connect") == 1)
            try await Self.set(mock, "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", .bool(true))
            #expect(await log.wait { $0.filter { $0 == .connected }.count == 2 }, "\(log.events)")
            #expect(try await Self.calls(mock, itag.device, "Connect") == 2)
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.contains { if case .press = $0 { true } else { false } } }, "\(log.events)")
        }
    }

    @Test("a device BlueZ does not know yet: discovery, then it connects when it appears")
    func discovered() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let log = EventLog(try client(bus).events(address: Self.itag))
            defer { log.stop() }
            // Discovery is asked for on the adapter.
            var discovering = false
            for _ in 0..<250 where !discovering {
                discovering = try await mock.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
                                                  member: "Get", arguments: [.string("org.bluez.Adapter1"), .string("Discovering")]).first?.bool == true
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(discovering)
            let itag = try await Self.addITag(mock, Self.itag, battery: 55)
            #expect(await log.wait { $0.contains(.connected) }, "\(log.events)")
            #expect(log.events.contains(.battery(55)))
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.contains(.press(at: clock.now())) })
        }
    }

    @Test("the device removed, then back: reconnects; stopping calls StopNotify and keeps or drops the link as asked")
    func removedAndStopped() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            let log = EventLog(try client(bus).events(address: Self.itag))
            #expect(await log.wait { $0.contains(.connected) })
            _ = try await mock.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1", member: "RemoveDevice",
                                    arguments: [.objectPath(itag.device)])
            #expect(await log.wait { $0.contains(.disconnected(reason: "the device was removed")) }, "\(log.events)")
            await passBackoff(0.1)   // then it looks for the device again (discovery: it is gone)
            // The mock keeps the GATT children of a removed device: clear them before it comes back.
            for path in [itag.press, itag.decoy, String(itag.press.dropLast("/char0011".count)), String(itag.decoy.dropLast("/char000d".count))] {
                _ = try await Self.mockCall(mock, "/org/bluez", "RemoveObject", [.objectPath(path)])
            }
            let back = try await Self.addITag(mock, Self.itag)
            #expect(await log.wait { $0.filter { $0 == .connected }.count == 2 }, "\(log.events)")

            // Stopping: StopNotify, and the link stays up (an iTag beeps when it loses its link).
            log.stop()
            var stopped = false
            for _ in 0..<250 where !stopped {
                stopped = try await Self.calls(mock, back.press, "StopNotify") == 1
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(stopped)
            #expect(try await Self.calls(mock, back.device, "Disconnect") == 0)

            // A follower asked to drop the link it made does so.
            try await Self.dropLink(mock, back.device)
            let again = EventLog(try client(bus).events(address: Self.itag, disconnectOnStop: true))
            #expect(await again.wait { $0.contains(.connected) })
            again.stop()
            var disconnected = false
            for _ in 0..<250 where !disconnected {
                disconnected = try await Self.calls(mock, back.device, "Disconnect") == 1
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(disconnected)
        }
    }

    @Test("bluetoothd restarts: the client follows the new owner and connects again")
    func bluetoothdRestart() async throws {
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
            let mock = try DBusConnection(bus: .address(bus.address))
            try await Self.addAdapter(mock)
            try await Self.addITag(mock, Self.itag)
            let log = EventLog(try client(bus).events(address: Self.itag))
            defer { log.stop() }
            #expect(await log.wait { $0.contains(.connected) })
            PrivateBus.killMock(address: bus.address)
            let restarted = PrivateBus.startMock(template: "bluez5", system: true, address: bus.address)
            defer { restarted.cancel(); PrivateBus.killMock(address: bus.address) }
            #expect(await log.wait { $0.contains { if case .disconnected = $0 { true } else { false } } }, "\(log.events)")
            // The new bluetoothd: its tree is built once it owns the name. Its adapter appearing ends the back-off
            // at once (the fake clock is never moved here).
            var owned = false
            for _ in 0..<500 where !owned {
                owned = (try? await Self.mockCall(mock, "/org/bluez", "AddAdapter", [.string("hci0"), .string("bedside-pi")],
                                                   interface: "org.bluez.Mock")) != nil
                if !owned { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(owned)
            try await Self.installGATT(mock)
            let itag = try await Self.addITag(mock, Self.itag)
            #expect(await log.wait(timeout: 10) { $0.filter { $0 == .connected }.count == 2 }, "\(log.events)")
            try await Self.notify(mock, itag.press, [0x01])
            #expect(await log.wait { $0.contains { if case .press = $0 { true } else { false } } })
        }
    }
}

/// Collects a client's events as they come.
final class EventLog: Sendable {
    final class Store: Sendable {
        let events = Mutex<[GATTButtonEvent]>([])
    }

    private let store: Store
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<GATTButtonEvent>) {
        let store = Store()
        self.store = store
        task = Task {
            for await event in stream { store.events.withLock { $0.append(event) } }
        }
    }

    var events: [GATTButtonEvent] { store.events.withLock { $0 } }
    func stop() { task.cancel() }

    /// Waits (polling every 20 ms) until `condition` holds for the events so far; false after `timeout` seconds.
    /// Polls until `condition` holds: at once when it does; the deadline only bounds a failure. Generous (30 s):
    /// in a full parallel `make test` on two cores the mock bluetoothd (a Python process) can take many seconds
    /// to answer its first calls (seen in a from-nothing CI run).
    func wait(timeout: TimeInterval = 30, _ condition: ([GATTButtonEvent]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(events)
    }
}
