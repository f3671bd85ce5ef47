import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing

/// The libdbus layer against a real private dbus-daemon and python-dbusmock.
@Suite("D-Bus layer on a private bus", .serialized)
struct DBusTests {
    static let mock = (path: "/org/freedesktop/Notifications", interface: "org.freedesktop.DBus.Mock")

    /// Adds an echo method to the notification mock: returns its argument unchanged.
    func addEcho(_ bus: DBusConnection, signature: String) async throws {
        _ = try await bus.call(destination: "org.freedesktop.Notifications", path: Self.mock.path, interface: Self.mock.interface,
                               member: "AddMethod", arguments: [.string("org.dosetap.Test"), .string("Echo"), .string(signature),
                                                                .string(signature), .string("ret = args[0]")])
    }

    @Test("connects, knows its unique name, lists names")
    func connect() async throws {
        try await PrivateBus.run { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            #expect(c.uniqueName.hasPrefix(":"))
            let names = try await c.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                         interface: "org.freedesktop.DBus", member: "ListNames")
            #expect(names.first?.array?.contains(.string(c.uniqueName)) == true)
            c.close()
            #expect(!c.isConnected)
        }
    }

    @Test("every type BlueZ uses survives a round trip through a real peer", arguments: [
        ("a{sv}", DBusValue.vardict(["Name": .string("Shelly BLU"), "RSSI": .int16(-61), "Paired": .bool(false),
                                     "UUIDs": .strings(["0000fcd2-0000-1000-8000-00805f9b34fb"])])),
        ("a{qv}", .dictionary(keySignature: "q", valueSignature: "v", [DBusDictEntry(key: .uint16(0x0ba9), value: .variant(.bytes([1, 2, 3])))])),
        ("a{oa{sa{sv}}}", .dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", [
            DBusDictEntry(key: .objectPath("/org/bluez/hci0/dev_AA_BB"), value: .dictionary(keySignature: "s", valueSignature: "a{sv}", [
                DBusDictEntry(key: .string("org.bluez.Device1"), value: .vardict(["Address": .string("AA:BB:CC:DD:EE:FF"),
                                                                                   "ServiceData": .vardict(["0000fcd2-0000-1000-8000-00805f9b34fb": .bytes([0x44, 0x00, 0x01, 0x3A, 0x01])])])),
            ])),
        ])),
        ("ay", .bytes([0, 255, 0x3a, 1])),
        ("ay", .bytes([])),
        ("o", .objectPath("/org/bluez/hci0")),
        ("v", .variant(.variant(.uint32(7)))),
        ("(sib)", .structure([.string("x"), .int32(-1), .bool(true)])),
        ("as", .strings([])),
        ("t", .uint64(UInt64.max)),
        ("d", .double(-0.5)),
        ("s", .string("ünïcødé ☾ 2:45")),
    ])
    func roundTrip(signature: String, value: DBusValue) async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            try await addEcho(c, signature: signature)
            let back = try await c.call(destination: "org.freedesktop.Notifications", path: Self.mock.path,
                                        interface: "org.dosetap.Test", member: "Echo", arguments: [value])
            #expect(back == [value])
            #expect(back.first?.signature == signature)
        }
    }

    @Test("a D-Bus error comes back with its name and message")
    func errors() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            await #expect {
                _ = try await c.call(destination: "org.freedesktop.Notifications", path: Self.mock.path,
                                     interface: "org.dosetap.Test", member: "Missing")
            } throws: { error in
                (error as? DBusError)?.name == "org.freedesktop.DBus.Error.UnknownMethod"
            }
            await #expect {
                _ = try await c.call(destination: "org.nobody.Here", path: "/", interface: "org.nobody", member: "X")
            } throws: { error in
                (error as? DBusError)?.name == "org.freedesktop.DBus.Error.ServiceUnknown"
            }
        }
    }

    @Test("a call that gets no answer times out, without blocking the connection")
    func timeout() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            _ = try await c.call(destination: "org.freedesktop.Notifications", path: Self.mock.path, interface: Self.mock.interface,
                                 member: "AddMethod", arguments: [.string("org.dosetap.Test"), .string("Slow"), .string(""),
                                                                  .string(""), .string("import time; time.sleep(30)")])
            let start = Date()
            await #expect {
                _ = try await c.call(destination: "org.freedesktop.Notifications", path: Self.mock.path,
                                     interface: "org.dosetap.Test", member: "Slow", timeout: .milliseconds(300))
            } throws: { error in
                (error as? DBusError)?.name == "org.freedesktop.DBus.Error.NoReply"
            }
            // Not waited for: far sooner than the 30 s answer (no tighter wall-clock bound holds on a loaded machine).
            #expect(Date().timeIntervalSince(start) < 20)
        }
    }

    @Test("signals matching a rule arrive; others do not")
    func signals() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let stream = try await c.signals(DBusMatchRule(interface: "org.freedesktop.Notifications", member: "ActionInvoked"))
            for (member, args) in [("NotificationClosed", [DBusValue.uint32(1), .uint32(2)]), ("ActionInvoked", [.uint32(7), .string("take")])] {
                _ = try await c.call(destination: "org.freedesktop.Notifications", path: Self.mock.path, interface: Self.mock.interface,
                                     member: "EmitSignal", arguments: [.string("org.freedesktop.Notifications"), .string(member),
                                                                       .string(args.map(\.signature).joined()),
                                                                       .array(elementSignature: "v", args.map { .variant($0) })])
            }
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.member == "ActionInvoked")
            #expect(first?.body == [.uint32(7), .string("take")])
        }
    }

    @Test("the daemon going away ends signal streams and fails calls, without crashing")
    func disconnect() async throws {
        let (c, stream) = try await PrivateBus.run { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            return (c, try await c.signals(DBusMatchRule(member: "Anything")))
        }
        // The daemon has been killed.
        var iterator = stream.makeAsyncIterator()
        let next = await iterator.next()
        #expect(next == nil)
        await #expect(throws: DBusError.self) {
            _ = try await c.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                 interface: "org.freedesktop.DBus", member: "ListNames")
        }
        #expect(!c.isConnected)
    }

    @Test("values that cannot be encoded are refused with a reason", arguments: [
        DBusValue.objectPath("not/a/path"), .objectPath("/trailing/"), .array(elementSignature: "s", [.int32(1)]),
        .dictionary(keySignature: "s", valueSignature: "v", [DBusDictEntry(key: .int32(1), value: .variant(.bool(true)))]),
    ])
    func badValues(_ value: DBusValue) async throws {
        try await PrivateBus.run { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            await #expect(throws: DBusError.self) {
                _ = try await c.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "ListNames", arguments: [value])
            }
            // The connection still works.
            #expect(try await c.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "GetId").first?.string?.count == 32)
        }
    }

    @Test("the system bus honours DBUS_SYSTEM_BUS_ADDRESS; no bus is a clear error")
    func systemBusAddress() throws {
        #expect(throws: DBusError.self) { _ = try DBusConnection(bus: .address("unix:path=/nonexistent/bus")) }
    }
}
