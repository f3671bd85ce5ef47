import CUdev
import Dispatch
import Foundation
import Logging

/// One `/dev/input/event*` device that may hold a vibration motor, as udev describes it.
public struct ForceFeedbackCandidate: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// "event3".
    public var sysname: String
    /// "/dev/input/event3".
    public var devnode: String
    /// The input device's name ("gpio-vibrator", "Xbox Wireless Controller", …).
    public var name: String?
    /// From the parent `inputN` device's `capabilities/ff`.
    public var capabilities: ForceFeedbackCapabilities
    /// Our udev rule set `DOSETAP_VIBRA=1` on it (a known vibra driver).
    public var tagged: Bool
    /// The drivers of the device's ancestors, nearest first ("gpio-vibrator", "drv260x-haptics", …).
    public var drivers: [String]

    public init(sysname: String, devnode: String, name: String? = nil, capabilities: ForceFeedbackCapabilities,
                tagged: Bool = false, drivers: [String] = []) {
        self.sysname = sysname
        self.devnode = devnode
        self.name = name
        self.capabilities = capabilities
        self.tagged = tagged
        self.drivers = drivers
    }

    /// The kernel drivers of dedicated vibration motors (udev-rules/70-dosetap-vibra.rules tags the same list).
    public static let knownVibraDrivers: Set<String> = [
        "gpio-vibrator", "pwm-vibrator", "drv260x-haptics", "drv2665-haptics", "drv2667-haptics",
        "da7280", "regulator-haptic",
    ]

    public var hasKnownVibraDriver: Bool { drivers.contains { Self.knownVibraDrivers.contains($0) } }

    public var description: String {
        var parts = [devnode]
        if let name { parts.append("\"\(name)\"") }
        if let driver = drivers.first(where: { Self.knownVibraDrivers.contains($0) }) ?? drivers.first {
            parts.append("driver \(driver)")
        }
        parts.append("ff: \(capabilities)")
        if tagged { parts.append("tagged DOSETAP_VIBRA") }
        return parts.joined(separator: ", ")
    }
}

/// Which candidate drives the vibration: pure, so it is tested without udev.
public enum VibraSelection {
    /// Nil when the device cannot vibrate (no FF_RUMBLE, FF_PERIODIC or FF_CONSTANT). Higher is better:
    /// tagged by our udev rule, then a known vibra driver, then rumble over periodic over constant.
    public static func score(_ candidate: ForceFeedbackCandidate) -> Int? {
        let caps = candidate.capabilities
        guard caps.canVibrate else { return nil }
        var score = 0
        if candidate.tagged { score += 100 }
        if candidate.hasKnownVibraDriver { score += 50 }
        if caps.hasRumble { score += 10 } else if caps.hasPeriodic { score += 5 } else { score += 1 }
        return score
    }

    /// The best motor, or nil when none can vibrate. Ties go to the lowest event number.
    public static func best(_ candidates: [ForceFeedbackCandidate]) -> ForceFeedbackCandidate? {
        ranked(candidates).first
    }

    /// Every motor that can vibrate, best first.
    public static func ranked(_ candidates: [ForceFeedbackCandidate]) -> [ForceFeedbackCandidate] {
        candidates
            .compactMap { c in score(c).map { (c, $0) } }
            .sorted { a, b in
                if a.1 != b.1 { return a.1 > b.1 }
                let na = eventNumber(a.0.sysname), nb = eventNumber(b.0.sysname)
                if na != nb { return na < nb }
                return a.0.devnode < b.0.devnode
            }
            .map(\.0)
    }

    static func eventNumber(_ sysname: String) -> Int {
        Int(sysname.drop { !$0.isNumber }) ?? Int.max
    }
}

/// Where the vibration motor is now. `ForceFeedbackHaptics` asks before every play.
public protocol VibraDeviceFinder: Sendable {
    func current() -> ForceFeedbackCandidate?
}

/// A fixed answer (tests, or a `--device` given by hand).
public struct StaticVibraFinder: VibraDeviceFinder {
    public var device: ForceFeedbackCandidate?
    public init(_ device: ForceFeedbackCandidate?) { self.device = device }
    public func current() -> ForceFeedbackCandidate? { device }
}

public struct VibraDiscoveryError: Error, CustomStringConvertible {
    public var description: String
}

/// Finds the motor with libudev: every `input` device named `event*` whose parent advertises force
/// feedback in `capabilities/ff`, ranked by `VibraSelection`. A `udev_monitor` on the `input` subsystem
/// rescans on hotplug, so a motor plugged in later is found (and one unplugged is forgotten) without
/// polling. Without a monitor (no udevd, e.g. in a container) every `current()` rescans.
///
/// libudev is not thread-safe: the context, the monitor and the cache are touched only on `queue`.
public final class UdevVibraFinder: VibraDeviceFinder, @unchecked Sendable {
    private let queue = DispatchQueue(label: "dosetap.udev.vibra")
    private let udev: OpaquePointer
    private let logger: Logger
    // Touched only on `queue`.
    private var monitor: InputDeviceMonitor?
    private var cached: [ForceFeedbackCandidate] = []
    private var announced: ForceFeedbackCandidate?

    public init(watchHotplug: Bool = true, logger: Logger = Logger(label: "dosetap.haptics")) throws {
        guard let context = udev_new() else {
            throw VibraDiscoveryError(description: "cannot create a udev context: \(String(cString: strerror(errno)))")
        }
        udev = context
        self.logger = logger
        queue.sync {
            cached = scan()
            announce()
            if watchHotplug {
                do {
                    monitor = try InputDeviceMonitor(udev: udev, queue: queue) { [weak self] in
                        guard let self else { return }
                        self.cached = self.scan()
                        self.announce()
                    }
                } catch {
                    logger.debug("no udev monitor for input devices; rescanning on demand", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    deinit {
        // The monitor's cancel handler unrefs it on the queue; the context outlives it there.
        let context = UnsafeUdevContext(pointer: udev)
        let monitor = self.monitor
        queue.async {
            monitor?.cancel()
            udev_unref(context.pointer)
        }
    }

    public func current() -> ForceFeedbackCandidate? {
        candidates().first
    }

    /// Every usable motor, best first.
    public func candidates() -> [ForceFeedbackCandidate] {
        queue.sync {
            if monitor == nil { cached = scan() }
            return VibraSelection.ranked(cached)
        }
    }

    /// Forces a rescan (for example after installing the udev rule).
    public func rescan() {
        queue.sync {
            cached = scan()
            announce()
        }
    }

    private func announce() {
        let best = VibraSelection.best(cached)
        guard best != announced else { return }
        if let best {
            logger.info("vibration motor: \(best)")
        } else if announced != nil {
            logger.info("vibration motor gone")
        }
        announced = best
    }

    /// Every `event*` input device with force-feedback bits (usable or not; ranking filters).
    private func scan() -> [ForceFeedbackCandidate] {
        guard let enumerator = udev_enumerate_new(udev) else { return [] }
        defer { udev_enumerate_unref(enumerator) }
        udev_enumerate_add_match_subsystem(enumerator, "input")
        udev_enumerate_add_match_sysname(enumerator, "event*")
        guard udev_enumerate_scan_devices(enumerator) >= 0 else { return [] }
        var found: [ForceFeedbackCandidate] = []
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            if let path = udev_list_entry_get_name(current),
               let device = udev_device_new_from_syspath(udev, path) {
                if let candidate = Self.candidate(from: device) { found.append(candidate) }
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return found
    }

    /// The candidate for one `eventN` device, or nil when it has no node or no force-feedback bits.
    static func candidate(from device: OpaquePointer) -> ForceFeedbackCandidate? {
        guard let sysnamePtr = udev_device_get_sysname(device),
              let devnodePtr = udev_device_get_devnode(device) else { return nil }
        let sysname = String(cString: sysnamePtr)
        guard sysname.hasPrefix("event") else { return nil }
        // The capabilities live on the parent inputN device (owned by the child: no unref).
        let input = udev_device_get_parent_with_subsystem_devtype(device, "input", nil)
        guard let input,
              let ffText = udev_device_get_sysattr_value(input, "capabilities/ff"),
              let capabilities = ForceFeedbackCapabilities(sysfs: String(cString: ffText)),
              !capabilities.codes.isEmpty else { return nil }
        let name = udev_device_get_sysattr_value(input, "name").map { String(cString: $0) }
        let tagged = udev_device_get_property_value(device, "DOSETAP_VIBRA").map { String(cString: $0) } == "1"
        var drivers: [String] = []
        var ancestor = udev_device_get_parent(device)
        while let a = ancestor {
            if let driver = udev_device_get_driver(a) { drivers.append(String(cString: driver)) }
            ancestor = udev_device_get_parent(a)
        }
        return ForceFeedbackCandidate(sysname: sysname, devnode: String(cString: devnodePtr), name: name,
                                      capabilities: capabilities, tagged: tagged, drivers: drivers)
    }
}

/// The context pointer, handed to the queue once its owner is gone.
private struct UnsafeUdevContext: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A `udev_monitor` on the `input` subsystem, read by a `DispatchSource` on the owner's queue. Calls
/// `changed` (on that queue) after any add/remove/change of an `event*` device. Cancel it on that queue.
final class InputDeviceMonitor: @unchecked Sendable {
    private let source: DispatchSourceRead

    init(udev: OpaquePointer, queue: DispatchQueue, changed: @escaping @Sendable () -> Void) throws {
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            throw VibraDiscoveryError(description: "cannot open the udev monitor: \(String(cString: strerror(errno)))")
        }
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "input", nil)
        let rc = udev_monitor_enable_receiving(monitor)
        guard rc >= 0 else {
            udev_monitor_unref(monitor)
            throw VibraDiscoveryError(description: "cannot listen to udev events: \(String(cString: strerror(-rc)))")
        }
        source = DispatchSource.makeReadSource(fileDescriptor: udev_monitor_get_fd(monitor), queue: queue)
        source.setEventHandler { [monitor] in
            var relevant = false
            while let device = udev_monitor_receive_device(monitor) {
                if let name = udev_device_get_sysname(device), String(cString: name).hasPrefix("event") {
                    relevant = true
                }
                udev_device_unref(device)
            }
            if relevant { changed() }
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
