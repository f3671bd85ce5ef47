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
/// feedback in `capabilities/ff`, ranked by `VibraSelection`. A subscription to the `input` subsystem
/// on the shared `UdevClient`'s monitor rescans on hotplug, so a motor plugged in later is found (and one
/// unplugged is forgotten) without polling. Without a monitor (no udevd, e.g. in a container) every
/// `current()` rescans.
///
/// libudev is not thread-safe: the subscription and the cache are touched only on the client's queue.
public final class UdevVibraFinder: VibraDeviceFinder, @unchecked Sendable {
    private let udev: UdevClient
    private var queue: DispatchQueue { udev.queue }
    private let logger: Logger
    // Touched only on `queue`.
    private var monitor: UdevSubscription?
    private var cached: [ForceFeedbackCandidate] = []
    private var announced: ForceFeedbackCandidate?

    /// On the process's shared udev client (the agent's).
    public init(udev: UdevClient, watchHotplug: Bool = true, logger: Logger = Logger(label: "dosetap.haptics")) {
        self.udev = udev
        self.logger = logger
        queue.sync {
            cached = scan()
            announce()
            if watchHotplug {
                do {
                    monitor = try udev.subscribe(subsystem: "input") { [weak self] devices in
                        // One rescan per batch, and only for `event*` nodes.
                        guard let self, devices.contains(where: { $0.sysname?.hasPrefix("event") == true }) else { return }
                        self.cached = self.scan()
                        self.announce()
                    }
                } catch {
                    logger.debug("no udev monitor for input devices; rescanning on demand", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// On a udev client of its own (the command line, tests).
    public convenience init(watchHotplug: Bool = true, logger: Logger = Logger(label: "dosetap.haptics")) throws {
        let client: UdevClient
        do { client = try UdevClient(logger: logger) } catch { throw VibraDiscoveryError(description: error.description) }
        self.init(udev: client, watchHotplug: watchHotplug, logger: logger)
    }

    deinit {
        let monitor = self.monitor
        queue.async { monitor?.cancel() }
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
        var found: [ForceFeedbackCandidate] = []
        do {
            try udev.enumerate(subsystem: "input", sysname: "event*") { device in
                if let candidate = Self.candidate(from: device) { found.append(candidate) }
            }
        } catch {
            return []
        }
        return found
    }

    /// The candidate for one `eventN` device, or nil when it has no node or no force-feedback bits.
    static func candidate(from device: UdevDevice) -> ForceFeedbackCandidate? {
        guard let sysname = device.sysname, let devnode = device.devnode else { return nil }
        guard sysname.hasPrefix("event") else { return nil }
        // The capabilities live on the parent inputN device.
        guard let input = device.parent(subsystem: "input"),
              let ffText = input.attribute("capabilities/ff"),
              let capabilities = ForceFeedbackCapabilities(sysfs: ffText),
              !capabilities.codes.isEmpty else { return nil }
        let name = input.attribute("name")
        let tagged = device.property("DOSETAP_VIBRA") == "1"
        var drivers: [String] = []
        var ancestor = device.parent
        while let a = ancestor {
            if let driver = a.driver { drivers.append(driver) }
            ancestor = a.parent
        }
        return ForceFeedbackCandidate(sysname: sysname, devnode: devnode, name: name,
                                      capabilities: capabilities, tagged: tagged, drivers: drivers)
    }
}
