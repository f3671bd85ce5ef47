import DoseTapCore
import Foundation
import Logging
import Synchronization

/// A client of BlueZ (`org.bluez` on the system bus): the object tree, LE discovery with duplicate
/// adverts, and a stream of adverts from `InterfacesAdded` and `PropertiesChanged` on `Device1`. Its
/// signals are decoded by `BlueZSignal`, as the GATT sessions' are.
public final class BlueZClient: Sendable {
    public let connection: DBusConnection
    private let logger: Logger
    /// Stamps each advert's `receivedAt` (the wall clock; a test or benchmark may shift it).
    private let now: @Sendable () -> Date

    static let service = "org.bluez"

    public init(connection: DBusConnection, logger: Logger = Logger(label: "dosetap.bluez"), now: @escaping @Sendable () -> Date = { Date() }) {
        self.connection = connection
        self.logger = logger
        self.now = now
    }

    /// `ObjectManager.GetManagedObjects`: path → interface → properties.
    public func managedObjects() async throws -> [String: [String: [String: DBusValue]]] {
        let reply = try await connection.call(destination: Self.service, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                              member: "GetManagedObjects")
        guard case .dictionary(_, _, let entries)? = reply.first else {
            throw DBusError(name: "org.dosetap.Error.BadReply", message: "GetManagedObjects returned \(reply.first?.signature ?? "nothing")")
        }
        var out: [String: [String: [String: DBusValue]]] = [:]
        for entry in entries {
            guard let path = entry.key.string, let interfaces = entry.value.stringKeyed else { continue }
            out[path] = interfaces.compactMapValues { $0.stringKeyed }
        }
        return out
    }

    /// The adapters (`org.bluez.Adapter1` objects).
    public func adapters() async throws -> [String] {
        try await managedObjects().filter { $0.value["org.bluez.Adapter1"] != nil }.map(\.key).sorted()
    }

    /// LE discovery with every advert reported (`DuplicateData`), on every adapter that is powered.
    public func startDiscovery() async throws {
        for adapter in try await adapters() {
            do {
                _ = try await connection.call(destination: Self.service, path: adapter, interface: "org.bluez.Adapter1",
                                              member: "SetDiscoveryFilter",
                                              arguments: [.vardict(["Transport": .string("le"), "DuplicateData": .bool(true)])])
                _ = try await connection.call(destination: Self.service, path: adapter, interface: "org.bluez.Adapter1",
                                              member: "StartDiscovery")
            } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
                continue
            } catch {
                logger.warning("cannot start discovery", metadata: ["adapter": "\(adapter)", "error": "\(error)"])
            }
        }
    }

    public func stopDiscovery() async {
        for adapter in (try? await adapters()) ?? [] {
            _ = try? await connection.call(destination: Self.service, path: adapter, interface: "org.bluez.Adapter1", member: "StopDiscovery")
        }
    }

    /// Adverts: the devices already known, then every `InterfacesAdded` and `PropertiesChanged` of a
    /// `Device1`. Malformed signals are dropped.
    public func adverts() async throws -> AsyncStream<BLEAdvert> {
        let added = try await connection.signals(DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager",
                                                               member: "InterfacesAdded"))
        let changed = try await connection.signals(DBusMatchRule(sender: Self.service, pathNamespace: "/org/bluez",
                                                                 interface: "org.freedesktop.DBus.Properties",
                                                                 member: "PropertiesChanged", arg0: "org.bluez.Device1"))
        let removed = try await connection.signals(DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager",
                                                                 member: "InterfacesRemoved"))
        // Any process on the system bus may send a signal with BlueZ's paths: only bluetoothd's count. (The
        // caller starts again when org.bluez gets a new owner.)
        let owner = await self.owner()
        let known = (try? await managedObjects()) ?? [:]
        let (stream, continuation) = AsyncStream<BLEAdvert>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let addresses = AddressBook()
        let now = self.now
        for (path, interfaces) in known {
            if let props = interfaces["org.bluez.Device1"], let advert = Self.advert(path: path, properties: props, book: addresses, at: now()) {
                continuation.yield(advert)
            }
        }
        let a = Task {
            for await message in added {
                guard message.sender == owner, case .interfacesAdded(let path, let interfaces)? = try? BlueZSignal.decode(message),
                      let props = interfaces["org.bluez.Device1"],
                      let advert = Self.advert(path: path, properties: props, book: addresses, at: Self.arrival(message, now)) else { continue }
                continuation.yield(advert)
            }
        }
        let c = Task {
            for await message in changed {
                guard message.sender == owner, case .propertiesChanged(let path, _, let props)? = try? BlueZSignal.decode(message),
                      let advert = Self.advert(path: path, properties: props, book: addresses, at: Self.arrival(message, now)) else { continue }
                continuation.yield(advert)
            }
            continuation.finish()
        }
        let r = Task {
            for await message in removed {
                guard message.sender == owner, case .interfacesRemoved(let path, let interfaces)? = try? BlueZSignal.decode(message),
                      interfaces.contains("org.bluez.Device1") else { continue }
                addresses.forget(path: path)
            }
        }
        continuation.onTermination = { _ in
            a.cancel()
            c.cancel()
            r.cancel()
        }
        return stream
    }

    /// When the signal reached DoseTap (taken off the bus), on the clock `now` reads.
    static func arrival(_ message: DBusMessage, _ now: @Sendable () -> Date) -> Date {
        guard let arrived = message.receivedAt else { return now() }
        return now().addingTimeInterval(min(0, arrived.timeIntervalSinceNow))
    }

    /// Remembers each device path's address (PropertiesChanged carries only what changed).
    /// The address of each device object seen (BlueZ sends `Address` only when the object appears). At most
    /// `capacity` entries, and an object removed (`InterfacesRemoved`) is forgotten: a transmitter rotating
    /// through random addresses must not grow it for ever; a forgotten path falls back to its name.
    final class AddressBook: @unchecked Sendable {
        static let capacity = 4096
        private let lock = NSLock()
        private var byPath: [String: String] = [:]
        var count: Int { lock.lock(); defer { lock.unlock() }; return byPath.count }
        func forget(path: String) {
            lock.lock()
            defer { lock.unlock() }
            byPath[path] = nil
        }
        func address(path: String, properties: [String: DBusValue]) -> String? {
            lock.lock()
            defer { lock.unlock() }
            if let a = properties["Address"]?.string, let n = BluetoothAddress.canonical(a) {
                if byPath[path] == nil, byPath.count >= Self.capacity { byPath.removeAll(keepingCapacity: true) }
                byPath[path] = n
                return n
            }
            if let known = byPath[path] { return known }
            // BlueZ names device objects …/dev_AA_BB_CC_DD_EE_FF.
            guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
            let candidate = last.dropFirst(4).replacingOccurrences(of: "_", with: ":")
            return BluetoothAddress.canonical(candidate)
        }
    }

    static func advert(path: String, properties: [String: DBusValue], book: AddressBook, at receivedAt: Date) -> BLEAdvert? {
        guard let address = book.address(path: path, properties: properties) else { return nil }
        var serviceData: [String: [UInt8]] = [:]
        if let sd = properties["ServiceData"]?.stringKeyed {
            for (uuid, value) in sd { if let bytes = value.bytes { serviceData[uuid.lowercased()] = bytes } }
        }
        var manufacturer: [Int: [UInt8]] = [:]
        if let md = properties["ManufacturerData"]?.intKeyed {
            for (id, value) in md { if let bytes = value.bytes { manufacturer[id] = bytes } }
        }
        return BLEAdvert(address: address, name: properties["Name"]?.string ?? properties["Alias"]?.string,
                         rssi: properties["RSSI"]?.int, serviceData: serviceData, manufacturerData: manufacturer,
                         uuids: properties["UUIDs"]?.array?.compactMap(\.string) ?? [], receivedAt: receivedAt)
    }

    /// The unique name of bluetoothd (the owner of `org.bluez`), or nil when it is not running.
    public func owner() async -> String? {
        try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                   member: "GetNameOwner", arguments: [.string(Self.service)]).first?.string
    }

    /// What happened to an adapter: powered on or off, plugged in or out.
    public enum AdapterChange: Sendable, Equatable {
        case poweredOn(String)
        case poweredOff(String)
        case added(String)
        case removed(String)
    }

    /// Adapters powered on or off (`Adapter1.Powered` in PropertiesChanged) and adapters appearing or
    /// disappearing (`InterfacesAdded`/`InterfacesRemoved` with `org.bluez.Adapter1`). A powered-off
    /// adapter forgets its discovery session and its connections: whoever uses it starts again on power-on.
    public func adapterChanges() async throws -> AsyncStream<AdapterChange> {
        let powered = try await connection.signals(DBusMatchRule(sender: Self.service, pathNamespace: "/org/bluez",
                                                                 interface: "org.freedesktop.DBus.Properties",
                                                                 member: "PropertiesChanged", arg0: "org.bluez.Adapter1"))
        let added = try await connection.signals(DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager",
                                                               member: "InterfacesAdded"))
        let removed = try await connection.signals(DBusMatchRule(sender: Self.service, interface: "org.freedesktop.DBus.ObjectManager",
                                                                 member: "InterfacesRemoved"))
        // A new bluetoothd announces its adapters as it starts: those count too (the owner is read per signal).
        let owner = Mutex<String?>(await self.owner())
        let fromBlueZ: @Sendable (DBusMessage) async -> Bool = { [self] m in
            if let o = owner.withLock({ $0 }), m.sender == o { return true }
            let now = await self.owner()
            owner.withLock { $0 = now }
            return now != nil && m.sender == now
        }
        let (stream, continuation) = AsyncStream<AdapterChange>.makeStream()
        let tasks = [
            Task {
                for await m in powered {
                    guard case .propertiesChanged(let path, _, let changed)? = try? BlueZSignal.decode(m),
                          let on = changed["Powered"]?.bool, await fromBlueZ(m) else { continue }
                    continuation.yield(on ? .poweredOn(path) : .poweredOff(path))
                }
                continuation.finish()
            },
            Task {
                for await m in added {
                    guard case .interfacesAdded(let path, let interfaces)? = try? BlueZSignal.decode(m),
                          interfaces["org.bluez.Adapter1"] != nil, await fromBlueZ(m) else { continue }
                    continuation.yield(.added(path))
                }
            },
            Task {
                for await m in removed {
                    guard case .interfacesRemoved(let path, let interfaces)? = try? BlueZSignal.decode(m),
                          interfaces.contains("org.bluez.Adapter1"), await fromBlueZ(m) else { continue }
                    continuation.yield(.removed(path))
                }
            },
        ]
        continuation.onTermination = { _ in tasks.forEach { $0.cancel() } }
        return stream
    }

    /// Tells when `org.bluez` gets a new owner (bluetoothd restarted): re-read the tree, re-apply the filter.
    public func ownerChanges() async throws -> AsyncStream<String> {
        let signals = try await connection.signals(DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                 member: "NameOwnerChanged", arg0: Self.service))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let task = Task {
            for await m in signals {
                guard case .nameOwnerChanged(_, let newOwner)? = try? BlueZSignal.decode(m) else { continue }
                continuation.yield(newOwner)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
