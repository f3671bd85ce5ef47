import DoseTapLinux
import Foundation
import Testing

@Suite("iTag GATT: the reconnection schedule and where the press characteristic is")
struct ITagGATTTests {
    @Test("backoff: nothing before a failure, then 1, 2, 5, 10, 20 s, then 30 s for ever")
    func backoff() {
        let b = ReconnectBackoff()
        #expect(b.delay(afterFailures: -1) == .zero)
        #expect(b.delay(afterFailures: 0) == .zero)
        #expect((1...6).map { b.delay(afterFailures: $0) } == [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(20), .seconds(30)])
        #expect(b.delay(afterFailures: 7) == .seconds(30))
        #expect(b.delay(afterFailures: 1_000_000) == .seconds(30))
        #expect(ReconnectBackoff(steps: []).delay(afterFailures: 3) == .zero)
    }

    static let device = "/org/bluez/hci0/dev_FF_FF_10_0E_8A_2C"

    static func service(_ uuid: String, device: String = device) -> [String: [String: DBusValue]] {
        ["org.bluez.GattService1": ["UUID": .string(uuid), "Device": .objectPath(device), "Primary": .bool(true)]]
    }

    static func characteristic(_ uuid: String, service: String) -> [String: [String: DBusValue]] {
        ["org.bluez.GattCharacteristic1": ["UUID": .string(uuid), "Service": .objectPath(service), "Value": .bytes([])]]
    }

    static let tree: ITagGATT.Tree = [
        "/org/bluez/hci0": ["org.bluez.Adapter1": ["Address": .string("00:01:02:03:04:05")]],
        device: ["org.bluez.Device1": ["Address": .string("FF:FF:10:0E:8A:2C"), "Connected": .bool(false)]],
        // 0xFFE1 under 0x180F, listed first: not the press characteristic.
        device + "/service000c": service("0000180f-0000-1000-8000-00805f9b34fb"),
        device + "/service000c/char000d": characteristic(ITagGATT.characteristicUUID, service: device + "/service000c"),
        device + "/service0010": service(ITagGATT.serviceUUID),
        device + "/service0010/char0011": characteristic(ITagGATT.characteristicUUID, service: device + "/service0010"),
        device + "/service0010/char0014": characteristic("0000ffe2-0000-1000-8000-00805f9b34fb", service: device + "/service0010"),
        // Another iTag: same layout, another device.
        "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B": ["org.bluez.Device1": ["Address": .string("FF:FF:C2:11:04:9B")]],
        "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B/service0010": service(ITagGATT.serviceUUID, device: "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B"),
        "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B/service0010/char0011":
            characteristic(ITagGATT.characteristicUUID, service: "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B/service0010"),
    ]

    @Test("the device by address, in any spelling; a connected copy under another adapter wins")
    func device() {
        #expect(ITagGATT.devicePath(address: "ff:ff:10:0e:8a:2c", in: Self.tree) == Self.device)
        #expect(ITagGATT.devicePath(address: "FF-FF-C2-11-04-9B", in: Self.tree) == "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B")
        #expect(ITagGATT.devicePath(address: "FF:FF:C2:11:04:9B", in: Self.tree) == "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B")
        #expect(ITagGATT.devicePath(address: "11:22:33:44:55:66", in: Self.tree) == nil)
        #expect(ITagGATT.devicePath(address: "not an address", in: Self.tree) == nil)
        // Without an Address property, the path names it.
        #expect(ITagGATT.devicePath(address: "AA:BB:CC:DD:EE:FF", in: ["/org/bluez/hci1/dev_AA_BB_CC_DD_EE_FF": ["org.bluez.Device1": [:]]])
                == "/org/bluez/hci1/dev_AA_BB_CC_DD_EE_FF")
        var two = Self.tree
        two["/org/bluez/hci1/dev_FF_FF_10_0E_8A_2C"] = ["org.bluez.Device1": ["Address": .string("FF:FF:10:0E:8A:2C"), "Connected": .bool(true)]]
        #expect(ITagGATT.devicePath(address: "FF:FF:10:0E:8A:2C", in: two) == "/org/bluez/hci1/dev_FF_FF_10_0E_8A_2C")
    }

    @Test("0xFFE1 under 0xFFE0 of this device only")
    func characteristic() {
        #expect(ITagGATT.pressCharacteristic(device: Self.device, in: Self.tree) == Self.device + "/service0010/char0011")
        #expect(ITagGATT.pressCharacteristic(device: "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B", in: Self.tree)
                == "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B/service0010/char0011")
        // No 0xFFE0 service: nothing, even with an 0xFFE1 characteristic.
        var noService = Self.tree
        noService[Self.device + "/service0010"] = Self.service("0000ffe5-0000-1000-8000-00805f9b34fb")
        #expect(ITagGATT.pressCharacteristic(device: Self.device, in: noService) == nil)
        // A characteristic whose Service belongs to another device does not count.
        var foreign = Self.tree
        foreign[Self.device + "/service0010/char0011"] = Self.characteristic(
            ITagGATT.characteristicUUID, service: "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B/service0010")
        #expect(ITagGATT.pressCharacteristic(device: Self.device, in: foreign) == nil)
        // The service says it belongs to another device.
        var claimed = Self.tree
        claimed[Self.device + "/service0010"] = Self.service(ITagGATT.serviceUUID, device: "/org/bluez/hci0/dev_FF_FF_C2_11_04_9B")
        #expect(ITagGATT.pressCharacteristic(device: Self.device, in: claimed) == nil)
        // Upper-case or 16-bit UUIDs are the same UUIDs.
        var spelled = Self.tree
        spelled[Self.device + "/service0010"] = Self.service("FFE0")
        spelled[Self.device + "/service0010/char0011"] = Self.characteristic("0000FFE1-0000-1000-8000-00805F9B34FB", service: Self.device + "/service0010")
        #expect(ITagGATT.pressCharacteristic(device: Self.device, in: spelled) == Self.device + "/service0010/char0011")
        // A path that merely starts with the device's path is another device.
        #expect(ITagGATT.pressCharacteristic(device: "/org/bluez/hci0/dev_FF_FF_10_0E_8A", in: Self.tree) == nil)
    }

    @Test("a press is exactly 01")
    func press() {
        #expect(ITagGATT.isPress([0x01]))
        for value: [UInt8] in [[], [0x00], [0x02], [0xFF], [0x01, 0x00], [0x00, 0x01]] {
            #expect(!ITagGATT.isPress(value), "\(value)")
        }
    }

    @Test("UUID spellings")
    func uuids() {
        #expect(ITagGATT.normalizeUUID("FFE1") == ITagGATT.characteristicUUID)
        #expect(ITagGATT.normalizeUUID("0xffe0") == ITagGATT.serviceUUID)
        #expect(ITagGATT.normalizeUUID("0000FFE1-0000-1000-8000-00805F9B34FB") == ITagGATT.characteristicUUID)
        #expect(ITagGATT.normalizeUUID("ffe") == "ffe")
    }
}
