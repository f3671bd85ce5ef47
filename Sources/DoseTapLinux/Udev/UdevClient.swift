internal import CUdev
import Dispatch
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Why libudev said no.
public struct UdevError: Error, CustomStringConvertible {
    enum Stage: Sendable {
        case load, context, monitor, listen, enumerate, scan
    }

    let stage: Stage
    /// `strerror` of the failure.
    let reason: String

    public var description: String {
        switch stage {
        case .load: "cannot use udev: \(reason)"
        case .context: "cannot create a udev context: \(reason)"
        case .monitor: "cannot open the udev monitor: \(reason)"
        case .listen: "cannot listen to udev events: \(reason)"
        case .enumerate: "cannot enumerate devices: \(reason)"
        case .scan: "cannot list devices: \(reason)"
        }
    }

    static func fromErrno(_ stage: Stage) -> UdevError { UdevError(stage: stage, reason: String(cString: strerror(errno))) }
    static func code(_ stage: Stage, _ rc: Int32) -> UdevError { UdevError(stage: stage, reason: String(cString: strerror(-rc))) }
}

/// The process's one libudev client: one context, one serial queue, and ONE netlink monitor whose
/// subsystem filter is the union of what its subscribers asked for; each batch of devices the monitor
/// delivers is fanned out to the subscribers of each device's subsystem. The power supplies, the HID
/// remotes and the vibration motor share it (the agent makes one and hands it to all three).
///
/// libudev is not thread-safe: the context, the monitor, every enumeration and every `UdevDevice` are
/// touched only on `queue`. The adapters that use the client keep their own udev-related state on the
/// same queue, so a subscriber's callback runs where that state lives. The monitor exists only while
/// someone subscribes, and listens only to the subsystems still subscribed: no wake-up for devices
/// nobody wants, and no timer at all.
public final class UdevClient: @unchecked Sendable {
    /// Where everything that touches libudev runs (and the adapters' state beside it).
    let queue = DispatchQueue(label: "dosetap.udev")
    private let udev: OpaquePointer
    private let logger: Logger

    // Touched only on `queue`.
    private var monitor: Monitor?
    private var subscribers: [UInt64: Subscriber] = [:]
    private var nextID: UInt64 = 0

    private struct Subscriber {
        let subsystem: String
        let deliver: ([UdevDevice]) -> Void
    }

    /// libudev is loaded by the first client, not at start-up (Sources/CUdev): nil, or why it could not be.
    private static let loadFailure: String? = LazyLibrary.loadProblem { dosetap_udev_load($0, $1) }

    public init(logger: Logger = Logger(label: "dosetap.udev")) throws(UdevError) {
        if let failure = Self.loadFailure { throw UdevError(stage: .load, reason: failure) }
        guard let context = udev_new() else { throw .fromErrno(.context) }
        udev = context
        self.logger = logger
    }

    deinit {
        // Every subscription holds the client, so no monitor is left here; the context goes on the queue.
        let context = UnsafeUdevContext(pointer: udev)
        let monitor = self.monitor
        queue.async {
            monitor?.cancel()
            udev_unref(context.pointer)
        }
    }

    // MARK: Hotplug

    /// Calls `deliver` on `queue` with the devices of `subsystem` that one wake-up of the monitor drained
    /// (in the order udev sent them; never an empty batch), until the subscription is cancelled. Call on
    /// `queue`. Throws when no monitor can be opened (no netlink socket, e.g. in some containers): the
    /// caller goes on without hotplug.
    func subscribe(subsystem: String, _ deliver: @escaping ([UdevDevice]) -> Void) throws(UdevError) -> UdevSubscription {
        dispatchPrecondition(condition: .onQueue(queue))
        let wanted = Set(subscribers.values.map(\.subsystem))
        if let monitor {
            if !wanted.contains(subsystem) { try monitor.listen(to: wanted.union([subsystem])) }
        } else {
            monitor = try Monitor(udev: udev, queue: queue, subsystems: [subsystem]) { [weak self] devices in
                self?.fanOut(devices)
            }
        }
        nextID += 1
        subscribers[nextID] = Subscriber(subsystem: subsystem, deliver: deliver)
        return UdevSubscription(client: self, id: nextID)
    }

    /// Ends one subscription (idempotent). On `queue`.
    func unsubscribe(_ id: UInt64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let gone = subscribers.removeValue(forKey: id) else { return }
        let wanted = Set(subscribers.values.map(\.subsystem))
        if wanted.isEmpty {
            monitor?.cancel()
            monitor = nil
        } else if !wanted.contains(gone.subsystem) {
            do { try monitor?.listen(to: wanted) } catch {
                // The old filter stays: the extra devices are dropped below.
                logger.debug("cannot narrow the udev monitor's filter", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The subsystems the monitor listens to now (tests; nil without a monitor).
    var monitoredSubsystems: Set<String>? {
        queue.sync { monitor?.subsystems }
    }

    private func fanOut(_ devices: [UdevDevice]) {
        let bySubsystem = Dictionary(grouping: devices) { $0.subsystem ?? "" }
        for (id, subscriber) in subscribers.sorted(by: { $0.key < $1.key }) {
            guard let batch = bySubsystem[subscriber.subsystem], !batch.isEmpty,
                  subscribers[id] != nil else { continue }   // one callback may have cancelled another
            subscriber.deliver(batch)
        }
    }

    // MARK: Reading

    /// Every device of `subsystem` (whose sysname matches the glob `sysname`, if given), each handed to
    /// `body` while it is valid. On `queue`.
    func enumerate(subsystem: String, sysname: String? = nil, _ body: (UdevDevice) -> Void) throws(UdevError) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let enumerator = udev_enumerate_new(udev) else { throw .fromErrno(.enumerate) }
        defer { udev_enumerate_unref(enumerator) }
        udev_enumerate_add_match_subsystem(enumerator, subsystem)
        if let sysname { udev_enumerate_add_match_sysname(enumerator, sysname) }
        let rc = udev_enumerate_scan_devices(enumerator)
        guard rc >= 0 else { throw .code(.scan, rc) }
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            // A device gone between the listing and this read simply yields nothing.
            if let path = udev_list_entry_get_name(current), let device = udev_device_new_from_syspath(udev, path) {
                body(UdevDevice(device))
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
    }

    /// The sysnames of the devices of `subsystem` whose sysname matches the glob `sysname` ("sound", "card*").
    public func sysnames(subsystem: String, matching sysname: String? = nil) throws(UdevError) -> [String] {
        let result = queue.sync { () -> Result<[String], UdevError> in
            var names: [String] = []
            do {
                try enumerate(subsystem: subsystem, sysname: sysname) { device in
                    if let name = device.sysname { names.append(name) }
                }
            } catch let error as UdevError {
                return .failure(error)
            } catch {
                return .failure(.fromErrno(.scan))
            }
            return .success(names.sorted())
        }
        return try result.get()
    }

    /// A fresh read of one device (libudev caches attribute values per device object: a new object
    /// reads sysfs again), handed to `body` while it is valid; nil when there is no such device. On `queue`.
    func withDevice<T>(subsystem: String, sysname: String, _ body: (UdevDevice) -> T) -> T? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let device = udev_device_new_from_subsystem_sysname(udev, subsystem, sysname) else { return nil }
        defer { udev_device_unref(device) }
        return body(UdevDevice(device))
    }

    // MARK: The monitor

    /// The one `udev_monitor`. Its socket is watched in the agent's event loop (`EpollLoop`: a uevent wakes
    /// that one thread, no libdispatch manager thread and worker), whose handler reads it with `queue.sync`
    /// (run inline on the loop's thread when the queue is idle). The monitor is touched and cancelled only
    /// on that queue; the loop watches a `dup` of its socket, closed there after the watch ends, so the
    /// descriptor number it removes can never be one reused meanwhile.
    private final class Monitor: @unchecked Sendable {
        private let monitor: OpaquePointer
        private let loop: EpollLoop
        private var watch: EpollLoop.Watch?
        /// On `queue`.
        private var cancelled = false
        private(set) var subsystems: Set<String>

        init(udev: OpaquePointer, queue: DispatchQueue, loop: EpollLoop = .shared, subsystems: Set<String>,
             deliver: @escaping ([UdevDevice]) -> Void) throws(UdevError) {
            guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else { throw .fromErrno(.monitor) }
            for subsystem in subsystems.sorted() { udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil) }
            let rc = udev_monitor_enable_receiving(monitor)
            guard rc >= 0 else {
                udev_monitor_unref(monitor)
                throw .code(.listen, rc)
            }
            self.monitor = monitor
            self.loop = loop
            self.subsystems = subsystems
            let copy = dup(udev_monitor_get_fd(monitor))
            guard copy >= 0 else {
                udev_monitor_unref(monitor)
                throw .fromErrno(.monitor)
            }
            let bound = LoopBound(value: deliver)
            do {
                watch = try loop.watch(fd: copy) { [self] _ in
                    queue.sync {
                        guard !cancelled else { return }
                        // The socket is non-blocking: drain everything that is queued, then hand it out.
                        var devices: [OpaquePointer] = []
                        while let device = udev_monitor_receive_device(self.monitor) { devices.append(device) }
                        defer { devices.forEach { udev_device_unref($0) } }
                        if !devices.isEmpty { bound.value(devices.map(UdevDevice.init)) }
                    }
                }
            } catch {
                close(copy)
                udev_monitor_unref(monitor)
                throw .fromErrno(.monitor)
            }
        }

        /// Replaces the subsystem filter (kernel side, a socket filter; libudev checks it again per device).
        func listen(to wanted: Set<String>) throws(UdevError) {
            var rc = udev_monitor_filter_remove(monitor)
            if rc >= 0 {
                for subsystem in wanted.sorted() { udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil) }
                rc = udev_monitor_filter_update(monitor)
            }
            guard rc >= 0 else { throw .code(.listen, rc) }
            subsystems = wanted
        }

        /// On `queue`.
        func cancel() {
            guard !cancelled else { return }
            cancelled = true
            if let watch { loop.unwatch(watch, closing: true) }
            udev_monitor_unref(monitor)
        }
    }
}

/// One subscriber of a `UdevClient`. Cancel it on the client's queue; dropping it cancels it too.
final class UdevSubscription: @unchecked Sendable {
    private let client: UdevClient
    private let id: UInt64

    fileprivate init(client: UdevClient, id: UInt64) {
        self.client = client
        self.id = id
    }

    deinit {
        let client = client, id = id
        client.queue.async { client.unsubscribe(id) }
    }

    /// On the client's queue.
    func cancel() {
        client.unsubscribe(id)
    }
}

/// One `udev_device`, valid only inside the callback or closure it was handed to (on the client's queue).
struct UdevDevice {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    var sysname: String? { udev_device_get_sysname(pointer).map { String(cString: $0) } }
    var subsystem: String? { udev_device_get_subsystem(pointer).map { String(cString: $0) } }
    var devnode: String? { udev_device_get_devnode(pointer).map { String(cString: $0) } }
    /// "add", "remove", "change", … (nil for a device that was read, not announced).
    var action: String? { udev_device_get_action(pointer).map { String(cString: $0) } }
    var driver: String? { udev_device_get_driver(pointer).map { String(cString: $0) } }

    /// A udev property (`ID_BUS`, `HID_UNIQ`, …).
    func property(_ key: String) -> String? {
        udev_device_get_property_value(pointer, key).map { String(cString: $0) }
    }

    /// A sysfs attribute as read (nil when missing, or when its read failed: ENODEV when the device left).
    func attribute(_ key: String) -> String? {
        udev_device_get_sysattr_value(pointer, key).map { String(cString: $0) }
    }

    /// The nearest ancestor of `subsystem` (owned by this device: same lifetime).
    func parent(subsystem: String, devtype: String? = nil) -> UdevDevice? {
        udev_device_get_parent_with_subsystem_devtype(pointer, subsystem, devtype).map(UdevDevice.init)
    }

    /// The parent device (owned by this device: same lifetime).
    var parent: UdevDevice? { udev_device_get_parent(pointer).map(UdevDevice.init) }
}

/// The context pointer, handed to the queue once its owner is gone.
private struct UnsafeUdevContext: @unchecked Sendable {
    let pointer: OpaquePointer
}
