import CUdev
import Dispatch
import DoseTapCore
import Foundation
import Logging

/// BLE HID remotes (camera shutters such as the "AB Shutter3") as buttons.
///
/// **Discovery** (libudev): every `input` device named `event*` with a `hid` ancestor on the Bluetooth
/// bus — `HID_ID=0005:…` (the kernel's name for the hid device, "0005:248A:8266.0004", says the same),
/// or, when the bus is not readable there, `ID_BUS=bluetooth` on the node or `id/bustype` 0005 on the
/// input device. That covers BLE remotes (BlueZ's HoG profile creates them through `/dev/uhid`:
/// `/devices/virtual/misc/uhid/0005:…/input/inputN/eventM`) and classic ones (the kernel's hidp, under
/// `…/bluetooth/hci0/hci0:N/0005:…`). Its address is the input device's `uniq` (BlueZ and hidp both
/// put the remote's address there, and the adapter's in `phys`), or the hid device's `HID_UNIQ`,
/// normalised to "AA:BB:CC:DD:EE:FF". A node without an address cannot be matched against the
/// button list and is skipped. BlueZ's AVRCP media keys of headphones (a uinput device on bus 0005
/// with no hid parent) are not remotes and are not listed.
///
/// **Reading** (`events(addresses:)`): the nodes of the allowed addresses are opened, grabbed and read
/// by `HIDButtonReader`s; a `udev_monitor` on `input` opens a remote's nodes as they appear (remotes
/// connect and disconnect all the time) and closes them when udev removes them. Every node of one
/// address is one logical button (`HIDRemoteMerger`).
///
/// libudev is not thread-safe: the context, the monitor and every reader live on one serial queue. The
/// open nodes sit in one private epoll set watched by one `DispatchSource` (see `HIDButtonReader`).
///
/// How the agent uses it (one `GestureRecognizer` per address; `expire(at:)` at each `deadline`):
/// ```swift
/// let hid = try HIDButtonSource()
/// for await event in hid.events(addresses: ["FF:FF:3A:07:12:C4"]) {   // the allowlisted hid buttons
///     switch event {
///     case .signal(let address, let signal):
///         let gestures = recognizers[address, default: GestureRecognizer()].feed(signal)   // → actions
///     case .disconnected(let remote, _, interruptedPress: true):
///         recognizers[remote.address] = GestureRecognizer()   // a press cut by a disconnect is dropped
///     case .connected, .disconnected, .unavailable:
///         break   // already logged; `.unavailable` carries the one-line reason (e.g. permission)
///     }
/// }
/// // After a config reload: hid.setAddresses(newAllowlist). For `button scan`: hid.remotes().
/// ```
public final class HIDButtonSource: @unchecked Sendable {
    private let queue = DispatchQueue(label: "dosetap.hid")
    private let udev: OpaquePointer
    private let io: any HIDButtonIO
    private let logger: Logger
    /// The epoll set every open node sits in, watched by one DispatchSource on `queue`.
    private let poller: HIDEventPoller
    // Touched only on `queue`.
    private var subscription: Subscription?

    public init(io: any HIDButtonIO = SystemHIDButtonIO(), logger: Logger = Logger(label: "dosetap.hid")) throws {
        let poller: HIDEventPoller
        do {
            poller = try HIDEventPoller(queue: queue)
        } catch {
            throw HIDButtonError("cannot watch input devices: \(error)", underlying: error)
        }
        guard let context = udev_new() else {
            throw HIDButtonError("cannot create a udev context: \(String(cString: strerror(errno)))")
        }
        udev = context
        self.poller = poller
        self.io = io
        self.logger = logger
    }

    deinit {
        let context = HIDUnsafeUdevContext(pointer: udev)
        let subscription = self.subscription
        queue.async {
            subscription?.shutDown(reason: .stopped)
            udev_unref(context.pointer)
        }
    }

    /// Every Bluetooth HID remote node present now (for `dosetap button scan`), sorted by node number.
    public func remotes() -> [HIDRemote] {
        queue.sync { Self.scan(udev: udev) }
    }

    /// The signals of the remotes in `addresses` ("AA:BB:CC:DD:EE:FF", any case), following hotplug,
    /// until the stream is dropped. One subscription at a time: a second call ends the first stream.
    /// Ending the stream releases every grab and closes every node.
    public func events(addresses: Set<String>) -> AsyncStream<HIDButtonEvent> {
        let (stream, continuation) = AsyncStream<HIDButtonEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let allowed = Set(addresses.compactMap { HIDRemote.normalize(address: $0) })
        let token = StreamToken()
        // Set before anything runs, so a stream dropped at once never leaves nodes open.
        continuation.onTermination = { [weak self, queue] _ in
            let owner = self
            queue.async {
                token.ended = true
                guard let subscription = token.subscription else { return }
                subscription.shutDown(reason: .stopped)
                if let owner, owner.subscription === subscription { owner.subscription = nil }
            }
        }
        queue.async { [self] in
            guard !token.ended else { return }
            subscription?.shutDown(reason: .stopped)
            let subscription = Subscription(context: Context(udev: udev, queue: queue, io: io, logger: logger, poller: poller),
                                            allowed: allowed, continuation: continuation)
            token.subscription = subscription
            self.subscription = subscription
            subscription.start()
        }
        return stream
    }

    /// The button list changed: opens the newly allowed remotes that are present, closes the others.
    public func setAddresses(_ addresses: Set<String>) {
        let allowed = Set(addresses.compactMap { HIDRemote.normalize(address: $0) })
        queue.async { [self] in subscription?.setAllowed(allowed) }
    }

    // MARK: - udev

    static func scan(udev: OpaquePointer) -> [HIDRemote] {
        guard let enumerator = udev_enumerate_new(udev) else { return [] }
        defer { udev_enumerate_unref(enumerator) }
        udev_enumerate_add_match_subsystem(enumerator, "input")
        udev_enumerate_add_match_sysname(enumerator, "event*")
        guard udev_enumerate_scan_devices(enumerator) >= 0 else { return [] }
        var found: [HIDRemote] = []
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            if let path = udev_list_entry_get_name(current), let device = udev_device_new_from_syspath(udev, path) {
                if let remote = Self.remote(from: device) { found.append(remote) }
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return found.sorted { (Self.eventNumber($0.sysname), $0.devnode) < (Self.eventNumber($1.sysname), $1.devnode) }
    }

    static func eventNumber(_ sysname: String) -> Int {
        Int(sysname.drop { !$0.isNumber }) ?? Int.max
    }

    /// The remote behind one `eventN` device, or nil when it is not a Bluetooth HID node with an address.
    static func remote(from device: OpaquePointer) -> HIDRemote? {
        guard let sysnamePtr = udev_device_get_sysname(device), let devnodePtr = udev_device_get_devnode(device) else {
            return nil
        }
        let sysname = String(cString: sysnamePtr)
        guard sysname.hasPrefix("event") else { return nil }
        // Parents are owned by the child: no unref.
        guard let input = udev_device_get_parent_with_subsystem_devtype(device, "input", nil),
              let hid = udev_device_get_parent_with_subsystem_devtype(device, "hid", nil) else { return nil }

        let property = { (d: OpaquePointer, key: String) -> String? in
            udev_device_get_property_value(d, key).map { String(cString: $0) }
        }
        let attribute = { (d: OpaquePointer, key: String) -> String? in
            udev_device_get_sysattr_value(d, key).map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
        }

        // The hid device's bus decides ("0005:0000248A:00008266", or its kernel name "0005:248A:8266.0004");
        // only when neither can be read do the input side's ID_BUS and id/bustype.
        let busField = { (text: String) -> UInt32? in
            let field = text.prefix { $0 != ":" }
            return field.count == 4 ? UInt32(field, radix: 16) : nil
        }
        let hidBus = property(hid, "HID_ID").flatMap(busField)
            ?? udev_device_get_sysname(hid).flatMap { busField(String(cString: $0)) }
        let bluetooth = hidBus.map { $0 == 0x0005 }
            ?? (property(device, "ID_BUS") == "bluetooth" || attribute(input, "id/bustype").flatMap { UInt32($0, radix: 16) } == 0x0005)
        guard bluetooth else { return nil }

        guard let address = attribute(input, "uniq").flatMap(HIDRemote.normalize(address:))
            ?? property(hid, "HID_UNIQ").flatMap(HIDRemote.normalize(address:)) else { return nil }

        let name = attribute(input, "name").map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        return HIDRemote(
            sysname: sysname,
            devnode: String(cString: devnodePtr),
            address: address,
            name: name,
            adapter: attribute(input, "phys").flatMap(HIDRemote.normalize(address:)),
            vendorID: attribute(input, "id/vendor").flatMap { UInt16($0, radix: 16) },
            productID: attribute(input, "id/product").flatMap { UInt16($0, radix: 16) },
            looksLikeKeyboard: property(device, "ID_INPUT_KEYBOARD") == "1"
        )
    }

    // MARK: - One subscription

    /// One `events(addresses:)` call: whether its stream ended, and its subscription. Touched only on `queue`.
    private final class StreamToken: @unchecked Sendable {
        var ended = false
        var subscription: Subscription?
    }

    /// What a subscription needs of its source (it may outlive the source object by one queue hop).
    private struct Context {
        let udev: OpaquePointer
        let queue: DispatchQueue
        let io: any HIDButtonIO
        let logger: Logger
        let poller: HIDEventPoller
    }

    /// The open nodes of one `events(addresses:)` stream. Lives on the source's queue.
    private final class Subscription: @unchecked Sendable {
        let owner: Context
        var allowed: Set<String>
        let continuation: AsyncStream<HIDButtonEvent>.Continuation
        var monitor: HIDInputMonitor?
        var readers: [String: (remote: HIDRemote, reader: HIDButtonReader)] = [:]   // by devnode
        var merger = HIDRemoteMerger()
        var unavailable: Set<String> = []   // devnodes already reported, until they change
        var stopped = false

        init(context: Context, allowed: Set<String>, continuation: AsyncStream<HIDButtonEvent>.Continuation) {
            owner = context
            self.allowed = allowed
            self.continuation = continuation
        }

        func start() {
            // The monitor first, so a remote that connects during the scan is not missed.
            do {
                monitor = try HIDInputMonitor(udev: owner.udev, queue: owner.queue) { [weak self] action, remote, devnode in
                    self?.hotplug(action: action, remote: remote, devnode: devnode)
                }
            } catch {
                owner.logger.warning("no udev monitor for input devices: HID remotes that connect later are not seen",
                                     metadata: ["error": "\(error)"])
            }
            reconcile()
        }

        func setAllowed(_ addresses: Set<String>) {
            guard !stopped else { return }
            allowed = addresses
            for (devnode, entry) in readers where !allowed.contains(entry.remote.address) {
                close(devnode, reason: .notAllowed)
            }
            unavailable.removeAll()
            reconcile()
        }

        /// Opens every present node of an allowed remote that is not open yet.
        func reconcile() {
            for remote in HIDButtonSource.scan(udev: owner.udev) where allowed.contains(remote.address) && readers[remote.devnode] == nil {
                open(remote)
            }
        }

        func hotplug(action: String, remote: HIDRemote?, devnode: String?) {
            guard !stopped else { return }
            switch action {
            case "remove":
                if let devnode {
                    unavailable.remove(devnode)
                    if readers[devnode] != nil { close(devnode, reason: .removed) }
                }
            default:
                guard let remote, allowed.contains(remote.address) else { return }
                if let open = readers[remote.devnode] {
                    if open.remote.address == remote.address { return }
                    close(remote.devnode, reason: .removed)
                }
                if action == "add" { unavailable.remove(remote.devnode) }
                open(remote)
            }
        }

        func open(_ remote: HIDRemote) {
            let devnode = remote.devnode
            let address = remote.address
            do {
                let reader = try HIDButtonReader.open(devnode: devnode, expectedAddress: address, io: owner.io,
                                                      poller: owner.poller, logger: owner.logger) { [weak self] output in
                    self?.readerOutput(output, devnode: devnode, address: address)
                }
                readers[devnode] = (remote, reader)
                unavailable.remove(devnode)
                owner.logger.info("HID remote connected: \(remote)\(reader.grabbed ? "" : " (not grabbed)")")
                continuation.yield(.connected(remote, grabbed: reader.grabbed))
            } catch {
                // Once per node until it changes: a remote that stays unreadable does not flood the log.
                guard unavailable.insert(devnode).inserted else { return }
                owner.logger.warning("\(error)")
                continuation.yield(.unavailable(remote, error))
            }
        }

        func readerOutput(_ output: HIDButtonReader.Output, devnode: String, address: String) {
            guard !stopped, let entry = readers[devnode] else { return }
            switch output {
            case .signal(let signal):
                if let merged = merger.feed(address: address, node: devnode, signal) {
                    continuation.yield(.signal(address: address, merged))
                }
            case .ended(let reason, _):
                readers[devnode] = nil
                let interrupted = merger.remove(address: address, node: devnode)
                continuation.yield(.disconnected(entry.remote, reason: reason, interruptedPress: interrupted))
            }
        }

        func close(_ devnode: String, reason: HIDDisconnectReason) {
            guard let entry = readers.removeValue(forKey: devnode) else { return }
            entry.reader.stopOnQueue()
            let interrupted = merger.remove(address: entry.remote.address, node: devnode)
            owner.logger.info("HID remote \(devnode) (\(entry.remote.address)): \(reason)")
            continuation.yield(.disconnected(entry.remote, reason: reason, interruptedPress: interrupted))
        }

        func shutDown(reason: HIDDisconnectReason) {
            guard !stopped else { return }
            for devnode in readers.keys.sorted() { close(devnode, reason: reason) }
            stopped = true
            monitor?.cancel()
            monitor = nil
            continuation.finish()
        }
    }
}

/// The context pointer, handed to the queue once its owner is gone.
private struct HIDUnsafeUdevContext: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A `udev_monitor` on the `input` subsystem, read by a `DispatchSource` on the owner's queue. Calls
/// `changed(action, remote, devnode)` on that queue for every `event*` device: the remote is nil when the
/// device is not a Bluetooth HID remote (or is gone: on "remove" only the node name is known).
final class HIDInputMonitor: @unchecked Sendable {
    private let source: DispatchSourceRead

    init(udev: OpaquePointer, queue: DispatchQueue,
         changed: @escaping (_ action: String, _ remote: HIDRemote?, _ devnode: String?) -> Void) throws {
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            throw HIDButtonError("cannot open the udev monitor: \(String(cString: strerror(errno)))")
        }
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "input", nil)
        let rc = udev_monitor_enable_receiving(monitor)
        guard rc >= 0 else {
            udev_monitor_unref(monitor)
            throw HIDButtonError("cannot listen to udev events: \(String(cString: strerror(-rc)))")
        }
        let box = HIDMonitorHandler(changed)
        source = DispatchSource.makeReadSource(fileDescriptor: udev_monitor_get_fd(monitor), queue: queue)
        source.setEventHandler { [monitor, box] in
            while let device = udev_monitor_receive_device(monitor) {
                defer { udev_device_unref(device) }
                guard let name = udev_device_get_sysname(device), String(cString: name).hasPrefix("event") else { continue }
                let action = udev_device_get_action(device).map { String(cString: $0) } ?? "change"
                let devnode = udev_device_get_devnode(device).map { String(cString: $0) }
                    ?? udev_device_get_property_value(device, "DEVNAME").map { String(cString: $0) }
                let remote = action == "remove" ? nil : HIDButtonSource.remote(from: device)
                box.changed(action, remote, devnode)
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

/// The monitor's callback; called only on the owner's queue.
private final class HIDMonitorHandler: @unchecked Sendable {
    let changed: (String, HIDRemote?, String?) -> Void
    init(_ changed: @escaping (String, HIDRemote?, String?) -> Void) { self.changed = changed }
}
