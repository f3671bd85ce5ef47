import CUdev
import Dispatch
import DoseTapCore
import Foundation
import Logging

public struct PowerSupplySourceError: Error, CustomStringConvertible {
    public var description: String
}

/// Reads `/sys/class/power_supply` through libudev and watches a `udev_monitor` for add, change and
/// remove events.
///
/// libudev objects are not thread-safe, so this type owns one udev context and touches it only on its
/// private serial queue. Every read builds a fresh `udev_device`, because libudev caches attribute
/// values per device object.
public final class UdevPowerSupplySource: PowerSupplySource, @unchecked Sendable {
    private let queue = DispatchQueue(label: "dosetap.udev.power-supply")
    private let udev: OpaquePointer
    private let logger: Logger

    public init(logger: Logger = Logger(label: "dosetap.power-supply")) throws {
        guard let context = udev_new() else {
            throw PowerSupplySourceError(description: "cannot create a udev context: \(Self.errnoText())")
        }
        udev = context
        self.logger = logger
    }

    deinit {
        udev_unref(udev)
    }

    public func snapshot() throws -> [RawPowerSupply] {
        try queue.sync { try enumerate() }
    }

    public func read(name: String) -> RawPowerSupply? {
        queue.sync {
            guard let device = udev_device_new_from_subsystem_sysname(udev, "power_supply", name) else {
                return nil
            }
            defer { udev_device_unref(device) }
            return Self.raw(from: device)
        }
    }

    public func events() -> AsyncStream<PowerSupplyEvent> {
        let (stream, continuation) = AsyncStream<PowerSupplyEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        queue.async { [self] in
            do {
                let monitor = try UdevMonitor(udev: udev, queue: queue, logger: logger) { event in
                    continuation.yield(event)
                }
                continuation.onTermination = { [queue] _ in
                    queue.async { monitor.cancel() }
                }
            } catch {
                logger.error("power supply monitor unavailable", metadata: ["error": "\(error)"])
                continuation.finish()
            }
        }
        return stream
    }

    private func enumerate() throws -> [RawPowerSupply] {
        guard let enumerator = udev_enumerate_new(udev) else {
            throw PowerSupplySourceError(description: "cannot enumerate power supplies: \(Self.errnoText())")
        }
        defer { udev_enumerate_unref(enumerator) }
        udev_enumerate_add_match_subsystem(enumerator, "power_supply")
        let rc = udev_enumerate_scan_devices(enumerator)
        guard rc >= 0 else {
            throw PowerSupplySourceError(description: "cannot list power supplies: \(String(cString: strerror(-rc)))")
        }
        var supplies: [RawPowerSupply] = []
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            if let path = udev_list_entry_get_name(current),
               let device = udev_device_new_from_syspath(udev, path) {
                // A supply unplugged between the listing and this read simply yields no device or no type.
                if let raw = Self.raw(from: device) { supplies.append(raw) }
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return supplies.sorted { $0.name < $1.name }
    }

    /// The attributes of one device, or nil when it vanished (no readable `type`).
    static func raw(from device: OpaquePointer) -> RawPowerSupply? {
        guard let sysname = udev_device_get_sysname(device) else { return nil }
        var attributes: [String: String] = [:]
        for key in RawPowerSupply.attributeNames {
            // NULL for a missing attribute, or one whose read failed (ENODEV when the battery left).
            if let value = udev_device_get_sysattr_value(device, key) {
                attributes[key] = String(cString: value)
            }
        }
        guard attributes["type"] != nil else { return nil }
        return RawPowerSupply(name: String(cString: sysname), attributes: attributes)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// One `udev_monitor` read by a `DispatchSource` on the owner's queue. Cancel it on that queue.
final class UdevMonitor: @unchecked Sendable {
    private let monitor: OpaquePointer
    private let source: DispatchSourceRead

    init(udev: OpaquePointer, queue: DispatchQueue, logger: Logger,
         deliver: @escaping @Sendable (PowerSupplyEvent) -> Void) throws {
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            throw PowerSupplySourceError(description: "cannot open the udev monitor: \(UdevPowerSupplySource.errnoText())")
        }
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "power_supply", nil)
        let rc = udev_monitor_enable_receiving(monitor)
        guard rc >= 0 else {
            udev_monitor_unref(monitor)
            throw PowerSupplySourceError(description: "cannot listen to udev events: \(String(cString: strerror(-rc)))")
        }
        self.monitor = monitor
        let fd = udev_monitor_get_fd(monitor)
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [monitor] in
            // The socket is non-blocking: drain everything that is queued.
            while let device = udev_monitor_receive_device(monitor) {
                defer { udev_device_unref(device) }
                let action = udev_device_get_action(device).map { String(cString: $0) } ?? "change"
                let name = udev_device_get_sysname(device).map { String(cString: $0) } ?? ""
                switch action {
                case "remove":
                    deliver(.removed(name: name))
                case "add", "change", "online", "offline", "move":
                    if let raw = UdevPowerSupplySource.raw(from: device) {
                        deliver(action == "add" ? .added(raw) : .changed(raw))
                    } else {
                        deliver(.removed(name: name))
                    }
                default:
                    logger.debug("ignored udev action", metadata: ["action": "\(action)", "supply": "\(name)"])
                }
            }
        }
        source.setCancelHandler { [monitor] in
            udev_monitor_unref(monitor)
        }
        source.resume()
    }

    func cancel() {
        source.cancel()
    }
}
