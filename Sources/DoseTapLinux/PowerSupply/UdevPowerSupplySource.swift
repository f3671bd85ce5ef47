import Dispatch
import DoseTapCore
import Foundation
import Logging

public struct PowerSupplySourceError: Error, CustomStringConvertible {
    public var description: String
}

/// Reads `/sys/class/power_supply` through libudev and follows the shared `UdevClient`'s monitor for
/// add, change and remove events.
///
/// libudev objects are not thread-safe, so everything here runs on the client's serial queue. Every read
/// builds a fresh `udev_device`, because libudev caches attribute values per device object.
public final class UdevPowerSupplySource: PowerSupplySource, @unchecked Sendable {
    private let udev: UdevClient
    private var queue: DispatchQueue { udev.queue }
    private let logger: Logger

    /// On the process's shared udev client (the agent's).
    public init(udev: UdevClient, logger: Logger = Logger(label: "dosetap.power-supply")) {
        self.udev = udev
        self.logger = logger
    }

    /// On a udev client of its own (the command line's one-shot reads, tests).
    public convenience init(logger: Logger = Logger(label: "dosetap.power-supply")) throws {
        let client: UdevClient
        do { client = try UdevClient(logger: logger) } catch { throw PowerSupplySourceError(description: error.description) }
        self.init(udev: client, logger: logger)
    }

    public func snapshot() throws -> [RawPowerSupply] {
        try queue.sync { try enumerate() }
    }

    public func read(name: String) -> RawPowerSupply? {
        queue.sync {
            udev.withDevice(subsystem: "power_supply", sysname: name, Self.raw(from:)) ?? nil
        }
    }

    public func events() -> AsyncStream<PowerSupplyEvent> {
        let (stream, continuation) = AsyncStream<PowerSupplyEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        queue.async { [self] in
            do {
                let subscription = try udev.subscribe(subsystem: "power_supply") { [logger] devices in
                    for device in devices {
                        if let event = Self.event(from: device, logger: logger) { continuation.yield(event) }
                    }
                }
                continuation.onTermination = { [queue] _ in
                    queue.async { subscription.cancel() }
                }
            } catch {
                logger.error("power supply monitor unavailable", metadata: ["error": "\(error)"])
                continuation.finish()
            }
        }
        return stream
    }

    private func enumerate() throws -> [RawPowerSupply] {
        var supplies: [RawPowerSupply] = []
        do {
            // A supply unplugged between the listing and this read simply yields no device or no type.
            try udev.enumerate(subsystem: "power_supply") { device in
                if let raw = Self.raw(from: device) { supplies.append(raw) }
            }
        } catch {
            switch error.stage {
            case .scan: throw PowerSupplySourceError(description: "cannot list power supplies: \(error.reason)")
            default: throw PowerSupplySourceError(description: "cannot enumerate power supplies: \(error.reason)")
            }
        }
        return supplies.sorted { $0.name < $1.name }
    }

    /// What one device the monitor announced means, or nil for an action that means nothing here.
    static func event(from device: UdevDevice, logger: Logger) -> PowerSupplyEvent? {
        let action = device.action ?? "change"
        let name = device.sysname ?? ""
        switch action {
        case "remove":
            return .removed(name: name)
        case "add", "change", "online", "offline", "move":
            if let raw = raw(from: device) {
                return action == "add" ? .added(raw) : .changed(raw)
            }
            return .removed(name: name)
        default:
            logger.debug("ignored udev action", metadata: ["action": "\(action)", "supply": "\(name)"])
            return nil
        }
    }

    /// The attributes of one device, or nil when it vanished (no readable `type`).
    static func raw(from device: UdevDevice) -> RawPowerSupply? {
        guard let sysname = device.sysname else { return nil }
        var attributes: [String: String] = [:]
        for key in RawPowerSupply.attributeNames {
            // NULL for a missing attribute, or one whose read failed (ENODEV when the battery left).
            if let value = device.attribute(key) { attributes[key] = value }
        }
        guard attributes["type"] != nil else { return nil }
        return RawPowerSupply(name: sysname, attributes: attributes)
    }
}
