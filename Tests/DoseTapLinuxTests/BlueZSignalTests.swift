@testable import DoseTapLinux
import Testing

/// The one decoder of BlueZ's signals (used by `BlueZClient` and the GATT sessions). Pure.
@Suite("BlueZ signals decoded once")
struct BlueZSignalTests {
    static let device = "/org/bluez/hci0/dev_FF_FF_10_0E_8A_2C"

    static func signal(_ interface: String, _ member: String, path: String = "/", sender: String = ":1.7",
                       _ body: [DBusValue]) -> DBusMessage {
        DBusMessage(kind: .signal, sender: sender, path: path, interface: interface, member: member, body: body)
    }

    static func interfaces(_ entries: [String: [String: DBusValue]]) -> DBusValue {
        .dictionary(keySignature: "s", valueSignature: "a{sv}",
                    entries.sorted { $0.key < $1.key }.map { DBusDictEntry(key: .string($0.key), value: .vardict($0.value)) })
    }

    @Test("the four signals, with their arguments")
    func decodes() throws {
        let added = Self.signal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [
            .objectPath(Self.device), Self.interfaces(["org.bluez.Battery1": ["Percentage": .byte(80)]]),
        ])
        #expect(try BlueZSignal.decode(added) == .interfacesAdded(path: Self.device,
                                                                   interfaces: ["org.bluez.Battery1": ["Percentage": .byte(80)]]))
        let removed = Self.signal("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [
            .objectPath(Self.device), .strings(["org.bluez.Device1", "org.bluez.Battery1"]),
        ])
        #expect(try BlueZSignal.decode(removed) == .interfacesRemoved(path: Self.device, interfaces: ["org.bluez.Device1", "org.bluez.Battery1"]))
        let changed = Self.signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: Self.device, [
            .string("org.bluez.Device1"), .vardict(["Connected": .bool(false)]), .strings([]),
        ])
        #expect(try BlueZSignal.decode(changed) == .propertiesChanged(path: Self.device, interface: "org.bluez.Device1",
                                                                       changed: ["Connected": .bool(false)]))
        let owner = Self.signal("org.freedesktop.DBus", "NameOwnerChanged", sender: "org.freedesktop.DBus", [
            .string("org.bluez"), .string(":1.7"), .string(""),
        ])
        #expect(try BlueZSignal.decode(owner) == .nameOwnerChanged(name: "org.bluez", newOwner: ""))
    }

    @Test("not one of them: another member or interface, a method call, a NameOwnerChanged not from the bus")
    func others() throws {
        #expect(try BlueZSignal.decode(Self.signal("org.bluez.Device1", "PropertiesChanged", [.string("x"), .vardict([:])])) == nil)
        #expect(try BlueZSignal.decode(Self.signal("org.freedesktop.DBus.Properties", "Changed", [])) == nil)
        var call = Self.signal("org.freedesktop.DBus.Properties", "PropertiesChanged", [.string("x"), .vardict([:])])
        call.kind = .methodCall
        #expect(try BlueZSignal.decode(call) == nil)
        let spoofed = Self.signal("org.freedesktop.DBus", "NameOwnerChanged", sender: ":1.99", [
            .string("org.bluez"), .string(":1.7"), .string(":1.99"),
        ])
        #expect(try BlueZSignal.decode(spoofed) == nil)
    }

    @Test("one of them with the wrong arguments: malformed, with its member and signature")
    func malformed() {
        #expect(throws: BlueZSignal.Malformed(member: "PropertiesChanged", signature: "s")) {
            try BlueZSignal.decode(Self.signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: Self.device,
                                               [.string("org.bluez.GattCharacteristic1")]))
        }
        #expect(throws: BlueZSignal.Malformed(member: "InterfacesAdded", signature: "ss")) {
            try BlueZSignal.decode(Self.signal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [.string("/x"), .string("y")]))
        }
        #expect(throws: BlueZSignal.Malformed(member: "InterfacesRemoved", signature: "o")) {
            try BlueZSignal.decode(Self.signal("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [.objectPath("/x")]))
        }
        #expect(throws: BlueZSignal.Malformed(member: "NameOwnerChanged", signature: "ss")) {
            try BlueZSignal.decode(Self.signal("org.freedesktop.DBus", "NameOwnerChanged", sender: "org.freedesktop.DBus",
                                               [.string("org.bluez"), .string("")]))
        }
    }
}
