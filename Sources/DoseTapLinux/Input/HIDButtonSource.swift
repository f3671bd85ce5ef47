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
/// by `HIDButtonReader`s; the shared `UdevClient`'s monitor (subscribed to `input`) opens a remote's nodes as they appear (remotes
/// connect and disconnect all the time) and closes them when udev removes them. Every node of one
/// address is one logical button (`HIDRemoteMerger`).
///
/// libudev is not thread-safe: the udev client's queue is this source's queue too, where its subscription
/// and every reader live. The open nodes sit in one private epoll set watched by one `DispatchSource` on
/// that queue (see `HIDButtonReader`).
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
    private let udev: UdevClient
    private var queue: DispatchQueue { udev.queue }
    private let io: any HIDButtonIO
    private let logger: Logger
    /// The epoll set every open node sits in, watched by one DispatchSource on `queue`.
    private let poller: HIDEventPoller
    // Touched only on `queue`.
    private var subscription: Subscription?

    /// On the process's shared udev client (the agent's).
    public init(udev: UdevClient, io: any HIDButtonIO = SystemHIDButtonIO(), logger: Logger = Logger(label: "dosetap.hid")) throws {
        let poller: HIDEventPoller
        do {
            poller = try HIDEventPoller(queue: udev.queue)
        } catch {
            throw HIDButtonError("cannot watch input devices: \(error)", underlying: error)
        }
        self.udev = udev
        self.poller = poller
        self.io = io
        self.logger = logger
    }

    /// On a udev client of its own (the command line, tests).
    public convenience init(io: any HIDButtonIO = SystemHIDButtonIO(), logger: Logger = Logger(label: "dosetap.hid")) throws {
        let client: UdevClient
        do { client = try UdevClient(logger: logger) } catch { throw HIDButtonError(error.description) }
        try self.init(udev: client, io: io, logger: logger)
    }

    deinit {
        let subscription = self.subscription
        queue.async {
            subscription?.shutDown(reason: .stopped)
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

    /// On the client's queue.
    static func scan(udev: UdevClient) -> [HIDRemote] {
        var found: [HIDRemote] = []
        do {
            try udev.enumerate(subsystem: "input", sysname: "event*") { device in
                if let remote = Self.remote(from: device) { found.append(remote) }
            }
        } catch {
            return []
        }
        return found.sorted { (Self.eventNumber($0.sysname), $0.devnode) < (Self.eventNumber($1.sysname), $1.devnode) }
    }

    static func eventNumber(_ sysname: String) -> Int {
        Int(sysname.drop { !$0.isNumber }) ?? Int.max
    }

    /// The remote behind one `eventN` device, or nil when it is not a Bluetooth HID node with an address.
    static func remote(from device: UdevDevice) -> HIDRemote? {
        guard let sysname = device.sysname, let devnode = device.devnode else { return nil }
        guard sysname.hasPrefix("event") else { return nil }
        guard let input = device.parent(subsystem: "input"), let hid = device.parent(subsystem: "hid") else { return nil }

        let property = { (d: UdevDevice, key: String) -> String? in d.property(key) }
        let attribute = { (d: UdevDevice, key: String) -> String? in
            d.attribute(key).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }

        // The hid device's bus decides ("0005:0000248A:00008266", or its kernel name "0005:248A:8266.0004");
        // only when neither can be read do the input side's ID_BUS and id/bustype.
        let busField = { (text: String) -> UInt32? in
            let field = text.prefix { $0 != ":" }
            return field.count == 4 ? UInt32(field, radix: 16) : nil
        }
        let hidBus = property(hid, "HID_ID").flatMap(busField)
            ?? hid.sysname.flatMap(busField)
        let bluetooth = hidBus.map { $0 == 0x0005 }
            ?? (property(device, "ID_BUS") == "bluetooth" || attribute(input, "id/bustype").flatMap { UInt32($0, radix: 16) } == 0x0005)
        guard bluetooth else { return nil }

        guard let address = attribute(input, "uniq").flatMap(HIDRemote.normalize(address:))
            ?? property(hid, "HID_UNIQ").flatMap(HIDRemote.normalize(address:)) else { return nil }

        let name = attribute(input, "name").map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        return HIDRemote(
            sysname: sysname,
            devnode: devnode,
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
        let udev: UdevClient
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
        var monitor: UdevSubscription?
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
                monitor = try owner.udev.subscribe(subsystem: "input") { [weak self] devices in
                    for device in devices {
                        guard let change = HIDButtonSource.hotplugChange(device) else { continue }
                        self?.hotplug(action: change.action, remote: change.remote, devnode: change.devnode)
                    }
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

extension HIDButtonSource {
    /// What one `input` device the monitor announced means here, or nil when it is not an `event*` node:
    /// the action, the remote (nil when the node is not a Bluetooth HID remote, or is gone: on "remove"
    /// only the node name is known) and the node.
    static func hotplugChange(_ device: UdevDevice) -> (action: String, remote: HIDRemote?, devnode: String?)? {
        guard let name = device.sysname, name.hasPrefix("event") else { return nil }
        let action = device.action ?? "change"
        let devnode = device.devnode ?? device.property("DEVNAME")
        let remote = action == "remove" ? nil : remote(from: device)
        return (action, remote, devnode)
    }
}
