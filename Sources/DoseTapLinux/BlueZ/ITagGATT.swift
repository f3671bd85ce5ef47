import DoseTapCore

/// Where an iTag's press characteristic sits in BlueZ's object tree. Pure: tested without a bus.
public enum ITagGATT {
    public static let serviceUUID = "0000ffe0-0000-1000-8000-00805f9b34fb"
    public static let characteristicUUID = "0000ffe1-0000-1000-8000-00805f9b34fb"

    public typealias Tree = [String: [String: [String: DBusValue]]]

    static let device = "org.bluez.Device1"
    static let battery = "org.bluez.Battery1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"

    /// The device object of `address` ("AA:BB:CC:DD:EE:FF") under any adapter: by its `Address`, else by its
    /// path (`…/dev_AA_BB_CC_DD_EE_FF`). A connected one wins when several adapters know it.
    public static func devicePath(address: String, in tree: Tree) -> String? {
        guard let wanted = BluetoothAddress.canonical(address) else { return nil }
        let candidates = tree.compactMap { path, interfaces -> (String, Bool)? in
            guard let device = interfaces[Self.device] else { return nil }
            let found = device["Address"]?.string.flatMap(BluetoothAddress.canonical)
                ?? path.split(separator: "/").last.flatMap { last in
                    last.hasPrefix("dev_") ? BluetoothAddress.canonical(last.dropFirst(4).replacingOccurrences(of: "_", with: ":")) : nil
                }
            guard found == wanted else { return nil }
            return (path, device["Connected"]?.bool == true)
        }
        return candidates.sorted { ($0.1 ? 0 : 1, $0.0) < ($1.1 ? 0 : 1, $1.0) }.first?.0
    }

    /// The 0xFFE1 characteristic whose `Service` is a 0xFFE0 `GattService1` of this device (not an 0xFFE1
    /// under another service, not another device's).
    public static func pressCharacteristic(device: String, in tree: Tree) -> String? {
        characteristic(characteristicUUID, service: serviceUUID, device: device, in: tree)
    }

    /// The characteristic `uuid` whose `Service` is a `GattService1` `service` of this device.
    public static func characteristic(_ uuid: String, service serviceUUID: String, device: String, in tree: Tree) -> String? {
        let prefix = device + "/"
        let uuid = normalizeUUID(uuid)
        let serviceUUID = normalizeUUID(serviceUUID)
        return tree.compactMap { path, interfaces -> String? in
            guard path.hasPrefix(prefix), let chrc = interfaces[gattCharacteristic],
                  chrc["UUID"]?.string.map(normalizeUUID) == uuid,
                  let servicePath = chrc["Service"]?.string, servicePath.hasPrefix(prefix),
                  let service = tree[servicePath]?[gattService],
                  service["UUID"]?.string.map(normalizeUUID) == serviceUUID else { return nil }
            if let owner = service["Device"]?.string, owner != device { return nil }
            return path
        }.min()
    }

    /// A notification that is a press: exactly `01`.
    public static func isPress(_ value: [UInt8]) -> Bool { value == [0x01] }

    /// Lower case; a 16-bit UUID ("FFE1", "0xffe1") expanded on the Bluetooth base UUID.
    public static func normalizeUUID(_ uuid: String) -> String {
        var u = uuid.lowercased()
        if u.hasPrefix("0x") { u.removeFirst(2) }
        if u.count == 4, u.allSatisfy(\.isHexDigit) { return "0000\(u)-0000-1000-8000-00805f9b34fb" }
        return u
    }
}
