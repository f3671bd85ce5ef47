import DoseTapCore
import Foundation
import Logging
import Synchronization

/// What an iTag-style GATT button reports.
public enum GATTButtonEvent: Sendable, Equatable {
    /// Connected, services resolved and notifications on 0xFFE1 started.
    case connected
    /// One notification of `01`, stamped with the instant DoseTap received it.
    case press(at: Date)
    /// `org.bluez.Battery1.Percentage` of the device (the initial value, then every change).
    case battery(Int)
    /// The link ended after `connected` (link loss, bluetoothd restarting, the objects removed). A
    /// reconnection follows.
    case disconnected(reason: String)
}

/// How long to wait before the next connection attempt: 1 s, 2 s, 5 s, 10 s, 20 s, then every 30 s.
/// The count restarts when a connection reached notifications.
public struct ReconnectBackoff: Sendable, Equatable {
    public var steps: [Duration]

    public init(steps: [Duration] = [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(20), .seconds(30)]) {
        self.steps = steps
    }

    /// The wait after `failures` consecutive attempts that failed or ended (0 → none; past the last step, the last step).
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0, !steps.isEmpty else { return .zero }
        return steps[min(failures, steps.count) - 1]
    }
}

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
        let prefix = device + "/"
        return tree.compactMap { path, interfaces -> String? in
            guard path.hasPrefix(prefix), let chrc = interfaces[gattCharacteristic],
                  chrc["UUID"]?.string.map(normalizeUUID) == characteristicUUID,
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

/// A client of iTag-style GATT buttons through BlueZ: find the device (discovering it if BlueZ does not
/// know it yet), `Device1.Connect`, wait for `ServicesResolved`, find 0xFFE1 under 0xFFE0, `StartNotify`,
/// and report every `Value` of `01` in `PropertiesChanged` as a press; the battery from `Battery1`.
/// After link loss, the objects disappearing or bluetoothd restarting it reconnects with `ReconnectBackoff`
/// (timers and signals only: no polling). Only signals from the current owner of `org.bluez` count.
///
/// Stopping (cancellation) calls `StopNotify`; it leaves the link up unless asked (an iTag beeps when
/// its link is lost, and a restarted agent picks an open link up again without a new connection).
public final class GATTButtonClient: Sendable {
    public struct Timing: Sendable {
        /// `Device1.Connect` (BlueZ gives up on an LE connection by itself well within this).
        public var connect: Duration = .seconds(30)
        /// `ServicesResolved` after the link is up.
        public var resolve: Duration = .seconds(30)
        /// Every other call.
        public var call: Duration = .seconds(10)
        /// `StopNotify` and `Disconnect` while stopping.
        public var cleanup: Duration = .seconds(2)
        public var backoff = ReconnectBackoff()
        public init() {}
    }

    public let bluez: BlueZClient
    public let timing: Timing
    private let clock: any WallClock
    private let logger: Logger

    public init(bluez: BlueZClient, clock: any WallClock, timing: Timing = Timing(), logger: Logger = Logger(label: "dosetap.gatt")) {
        self.bluez = bluez
        self.clock = clock
        self.timing = timing
        self.logger = logger
    }

    /// The button's events until the stream is dropped (which stops following it).
    public func events(address: String, disconnectOnStop: Bool = false) -> AsyncStream<GATTButtonEvent> {
        let (stream, continuation) = AsyncStream<GATTButtonEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let task = Task {
            await self.follow(address: address, disconnectOnStop: disconnectOnStop) { continuation.yield($0) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Follows one button until cancelled (or the bus connection closes), handing each event to `handle` in
    /// order. Presses are stamped when they arrive, however long `handle` takes. Returns after the button was
    /// left cleanly (`StopNotify`; `Disconnect` too when `disconnectOnStop` and this client made the link).
    public func follow(address: String, disconnectOnStop: Bool = false,
                       _ handle: @escaping @Sendable (GATTButtonEvent) async -> Void) async {
        guard let address = BluetoothAddress.canonical(address) else {
            logger.error("not a Bluetooth address", metadata: ["address": "\(address)"])
            return
        }
        let (stream, continuation) = AsyncStream<GATTButtonEvent>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.reconnecting(address: address, disconnectOnStop: disconnectOnStop) { continuation.yield($0) }
                continuation.finish()
            }
            for await event in stream { await handle(event) }
            // Cancelled: the session below stops, cleans up, and the group waits for it.
        }
    }

    /// Device1.Disconnect of the button, if BlueZ has it connected (a button removed from the allowlist).
    public func disconnect(address: String) async {
        guard let tree = try? await bluez.managedObjects(), let path = ITagGATT.devicePath(address: address, in: tree),
              tree[path]?[ITagGATT.device]?["Connected"]?.bool == true else { return }
        do {
            _ = try await bluez.connection.call(destination: BlueZClient.service, path: path, interface: ITagGATT.device,
                                                member: "Disconnect", timeout: timing.call)
            logger.info("iTag disconnected", metadata: ["button": "\(address)"])
        } catch {
            logger.notice("cannot disconnect the iTag", metadata: ["button": "\(address)", "error": "\(error)"])
        }
    }

    private func reconnecting(address: String, disconnectOnStop: Bool, _ emit: @escaping @Sendable (GATTButtonEvent) -> Void) async {
        var failures = 0
        var lastReason = ""
        // An adapter coming (back) on ends the wait at once: the link went down because it was off.
        let wake = AdapterWake()
        let watcher = Task { [bluez] in
            guard let adapters = try? await bluez.adapterChanges() else { return }
            for await change in adapters {
                if case .poweredOn = change { wake.fire() } else if case .added = change { wake.fire() }
            }
        }
        defer { watcher.cancel() }
        while !Task.isCancelled {
            let session = GATTButtonSession(client: self, address: address, disconnectOnStop: disconnectOnStop, emit: emit)
            let end = await session.run()
            switch end {
            case .stopped:
                return
            case .busClosed:
                logger.warning("D-Bus connection closed: no longer following the iTag", metadata: ["button": "\(address)"])
                return
            case .ended(let reason, let wasNotifying):
                if wasNotifying {
                    emit(.disconnected(reason: reason))
                    failures = 0
                }
                failures += 1
                let delay = timing.backoff.delay(afterFailures: failures)
                // One line per new reason: a button left in a drawer must not log every 30 s all night.
                let level: Logger.Level = wasNotifying || reason != lastReason ? .notice : .debug
                logger.log(level: level, "iTag link down; reconnecting", metadata: [
                    "button": "\(address)", "reason": "\(reason)", "in": "\(delay)",
                ])
                lastReason = reason
                await wake.wait(upTo: delay)
            }
        }
    }

    func log(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        logger.log(level: level, message, metadata: metadata)
    }

    func now() -> Date { clock.now() }
}

/// How one connection attempt ended.
enum GATTSessionEnd: Sendable, Equatable {
    case stopped
    case busClosed
    case ended(reason: String, wasNotifying: Bool)
}

/// One connection attempt and, if it succeeds, one link: from finding the device to the link going away.
/// Used by one task only.
final class GATTButtonSession {
    private enum Phase { case waitingForBlueZ, findingDevice, connecting, resolving, notifying }

    /// Why the session stops (thrown through the steps).
    private enum Stop: Error {
        case stopped
        case busClosed
        /// The link went away by itself: nothing to clean up.
        case lost(String)
        /// A step failed: drop a link this session made before trying again.
        case failed(String)
    }

    private enum Happening {
        case ownerChanged(String)
        case added(path: String, interfaces: [String: [String: DBusValue]])
        case removed(path: String, interfaces: [String])
        case properties(path: String, interface: String, changed: [String: DBusValue])
        case timeout(UInt64)
    }

    private let client: GATTButtonClient
    private let address: String
    private let disconnectOnStop: Bool
    private let emit: @Sendable (GATTButtonEvent) -> Void
    private let inbox: SignalInbox
    private var iterator: AsyncStream<SignalInbox.Input>.Iterator
    private var connection: DBusConnection { client.bluez.connection }

    private var phase = Phase.waitingForBlueZ
    private var owner: String?
    private var devicePath: String?
    private var characteristicPath: String?
    private var servicePath: String?
    private var linkUp = false
    private var connectedHere = false
    private var notifying = false
    private var timerToken: UInt64 = 0
    private var lastBattery: Int?

    init(client: GATTButtonClient, address: String, disconnectOnStop: Bool, emit: @escaping @Sendable (GATTButtonEvent) -> Void) {
        self.client = client
        self.address = address
        self.disconnectOnStop = disconnectOnStop
        self.emit = emit
        inbox = SignalInbox(connection: client.bluez.connection)
        iterator = inbox.stream.makeAsyncIterator()
    }

    private var metadata: Logger.Metadata { ["button": "\(address)"] }

    func run() async -> GATTSessionEnd {
        defer { inbox.close() }
        do {
            try await start()
            try await listen()
        } catch let stop as Stop {
            return await finish(stop)
        } catch is CancellationError {
            return await finish(.stopped)
        } catch {
            return await finish(.failed("\(error)"))
        }
    }

    private func finish(_ stop: Stop) async -> GATTSessionEnd {
        let wasNotifying = phase == .notifying
        switch stop {
        case .stopped:
            // Leave cleanly, even though the task is cancelled (D-Bus calls don't look at cancellation).
            if notifying, let path = characteristicPath { await cleanupCall(path, ITagGATT.gattCharacteristic, "StopNotify") }
            if disconnectOnStop, connectedHere, let path = devicePath { await cleanupCall(path, ITagGATT.device, "Disconnect") }
            return .stopped
        case .busClosed:
            return .busClosed
        case .lost(let reason):
            return .ended(reason: reason, wasNotifying: wasNotifying)
        case .failed(let reason):
            if connectedHere, linkUp, let path = devicePath { await cleanupCall(path, ITagGATT.device, "Disconnect") }
            return .ended(reason: reason, wasNotifying: wasNotifying)
        }
    }

    private func cleanupCall(_ path: String, _ interface: String, _ member: String) async {
        do {
            _ = try await connection.call(destination: BlueZClient.service, path: path, interface: interface, member: member,
                                          timeout: client.timing.cleanup)
        } catch {
            client.log(.debug, "iTag cleanup call failed", metadata.merging(["call": "\(member)", "error": "\(error)"]) { $1 })
        }
    }

    // MARK: The steps

    private func start() async throws {
        // Subscribe before reading anything, so nothing that happens in between is missed.
        try await subscribe(DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                          member: "NameOwnerChanged", arg0: BlueZClient.service))
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, interface: "org.freedesktop.DBus.ObjectManager",
                                          member: "InterfacesAdded"))
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, interface: "org.freedesktop.DBus.ObjectManager",
                                          member: "InterfacesRemoved"))

        // 1. bluetoothd, whose unique name every later signal must come from.
        owner = try? await call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(BlueZClient.service)],
                                destination: "org.freedesktop.DBus").first?.string
        if owner == nil {
            client.log(.notice, "bluetoothd is not running: waiting for it", metadata)
            while owner == nil {
                if case .ownerChanged(let new) = try await next(), !new.isEmpty { owner = new }
            }
        }

        // 2. The device: known to BlueZ, or discovered.
        phase = .findingDevice
        var tree = try await managedObjects()
        devicePath = ITagGATT.devicePath(address: address, in: tree)
        if devicePath == nil {
            client.log(.notice, "iTag not known to BlueZ yet: discovering it", metadata)
            do { try await abandonOnCancel { [client] in try await client.bluez.startDiscovery() } } catch is CancellationError {
                throw Stop.stopped
            } catch {
                client.log(.notice, "cannot start discovery", metadata.merging(["error": "\(error)"]) { $1 })
            }
            while devicePath == nil {
                guard case .added(let path, let interfaces) = try await next(), interfaces[ITagGATT.device] != nil else { continue }
                devicePath = ITagGATT.devicePath(address: address, in: [path: interfaces])
            }
        }
        guard let devicePath else { throw Stop.failed("no device") }
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, pathNamespace: devicePath,
                                          interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"))
        tree = try await managedObjects()
        guard let device = tree[devicePath]?[ITagGATT.device] else { throw Stop.lost("the device was removed") }
        if let level = tree[devicePath]?[ITagGATT.battery]?["Percentage"]?.int { battery(level) }

        // 3. The link.
        phase = .connecting
        linkUp = device["Connected"]?.bool == true
        if !linkUp { try await connect(devicePath) }

        // 4. Services resolved.
        phase = .resolving
        let resolved = try? await call(devicePath, "org.freedesktop.DBus.Properties", "Get",
                                       [.string(ITagGATT.device), .string("ServicesResolved")]).first?.bool
        if resolved != true {
            let token = startTimer(client.timing.resolve)
            waiting: while true {
                switch try await next() {
                case .properties(devicePath, ITagGATT.device, let changed) where changed["ServicesResolved"]?.bool == true:
                    break waiting
                case .timeout(token):
                    throw Stop.failed("services not resolved within \(client.timing.resolve)")
                default:
                    continue
                }
            }
        }

        // 5. 0xFFE1 under 0xFFE0, and its notifications.
        tree = try await managedObjects()
        guard let characteristic = ITagGATT.pressCharacteristic(device: devicePath, in: tree) else {
            throw Stop.failed("no characteristic 0xFFE1 under service 0xFFE0: not an iTag-style button?")
        }
        characteristicPath = characteristic
        servicePath = tree[characteristic]?[ITagGATT.gattCharacteristic]?["Service"]?.string
        if let level = tree[devicePath]?[ITagGATT.battery]?["Percentage"]?.int { battery(level) }
        do {
            _ = try await call(characteristic, ITagGATT.gattCharacteristic, "StartNotify", [])
        } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
            // This connection already asked for them.
        } catch let error as DBusError {
            throw Stop.failed("StartNotify failed: \(error)")
        }
        notifying = true
        phase = .notifying
        client.log(.info, "iTag connected: listening for presses", metadata.merging(["characteristic": "\(characteristic)"]) { $1 })
        emit(.connected)
    }

    private func connect(_ devicePath: String) async throws {
        do {
            _ = try await call(devicePath, ITagGATT.device, "Connect", [], timeout: client.timing.connect)
            connectedHere = true
            linkUp = true
        } catch let error as DBusError where error.name == "org.bluez.Error.AlreadyConnected" {
            linkUp = true
        } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
            // Someone else (the agent, `button test`) is connecting it: wait for the link.
            let token = startTimer(client.timing.connect)
            while !linkUp {
                switch try await next() {
                case .properties(devicePath, ITagGATT.device, let changed) where changed["Connected"]?.bool == true:
                    linkUp = true
                case .timeout(token):
                    throw Stop.failed("another connection attempt did not finish within \(client.timing.connect)")
                default:
                    continue
                }
            }
        } catch let error as DBusError {
            throw Stop.failed("cannot connect: \(error.name == "org.freedesktop.DBus.Error.NoReply" ? "no answer within \(client.timing.connect)" : error.description)")
        }
    }

    private func listen() async throws -> Never {
        guard let characteristicPath else { throw Stop.failed("no characteristic") }
        while true {
            guard case .properties(characteristicPath, ITagGATT.gattCharacteristic, let changed) = try await next(),
                  let value = changed["Value"] else { continue }
            let at = client.now()
            guard let bytes = value.bytes else {
                client.log(.warning, "malformed iTag notification ignored", metadata.merging(["value": "\(value)"]) { $1 })
                continue
            }
            if ITagGATT.isPress(bytes) {
                emit(.press(at: at))
            } else {
                client.log(.notice, "iTag notification that is not a press ignored",
                           metadata.merging(["value": "\(bytes.map { String(format: "%02x", $0) }.joined())"]) { $1 })
            }
        }
    }

    // MARK: Signals

    /// The next thing that happened, after what every step handles alike: a new owner of org.bluez, the device
    /// or the characteristic removed, the link dropping, the battery. Cancelled or the bus gone → thrown.
    private func next() async throws(Stop) -> Happening {
        while true {
            guard let input = await iterator.next() else {
                if Task.isCancelled { throw .stopped }
                if !connection.isConnected { throw .busClosed }
                throw .lost("the signal stream ended")
            }
            guard let happening = classify(input) else { continue }
            switch happening {
            case .ownerChanged(let new):
                if phase == .waitingForBlueZ { return happening }
                throw .lost(new.isEmpty ? "bluetoothd stopped" : "bluetoothd restarted")
            case .removed(let path, let interfaces):
                if path == devicePath, interfaces.contains(ITagGATT.device) { throw .lost("the device was removed") }
                if path == characteristicPath || path == servicePath, phase == .notifying { throw .lost("its GATT services were removed") }
            case .added(let path, let interfaces):
                if path == devicePath, let level = interfaces[ITagGATT.battery]?["Percentage"]?.int { battery(level) }
            case .properties(let path, let interface, let changed) where path == devicePath:
                if interface == ITagGATT.battery, let level = changed["Percentage"]?.int { battery(level) }
                if interface == ITagGATT.device, let connected = changed["Connected"]?.bool {
                    if connected {
                        linkUp = true
                    } else if linkUp {
                        linkUp = false
                        throw .lost("link lost")
                    }
                }
            default:
                break
            }
            return happening
        }
    }

    /// Reports the battery when it differs from what this session last reported.
    private func battery(_ level: Int) {
        guard level != lastBattery else { return }
        lastBattery = level
        emit(.battery(level))
    }

    private func classify(_ input: SignalInbox.Input) -> Happening? {
        let message: DBusMessage
        switch input {
        case .timeout(let token): return .timeout(token)
        case .signal(let m): message = m
        }
        if message.member == "NameOwnerChanged" {
            guard message.sender == "org.freedesktop.DBus", message.body.count == 3, message.body[0].string == BlueZClient.service,
                  let new = message.body[2].string else { return nil }
            return .ownerChanged(new)
        }
        // Only bluetoothd speaks for the button (another process on the bus could send look-alike signals).
        guard let owner, message.sender == owner else { return nil }
        switch message.member {
        case "InterfacesAdded":
            guard message.body.count == 2, let path = message.body[0].string, let interfaces = message.body[1].stringKeyed else {
                return malformed(message)
            }
            return .added(path: path, interfaces: interfaces.compactMapValues(\.stringKeyed))
        case "InterfacesRemoved":
            guard message.body.count == 2, let path = message.body[0].string, let names = message.body[1].array?.compactMap(\.string) else {
                return malformed(message)
            }
            return .removed(path: path, interfaces: names)
        case "PropertiesChanged":
            guard message.body.count >= 2, let path = message.path, let interface = message.body[0].string,
                  let changed = message.body[1].stringKeyed else { return malformed(message) }
            return .properties(path: path, interface: interface, changed: changed)
        default:
            return nil
        }
    }

    private func malformed(_ message: DBusMessage) -> Happening? {
        client.log(.warning, "malformed BlueZ signal ignored",
                   metadata.merging(["member": "\(message.member ?? "?")", "signature": "\(message.body.map(\.signature).joined())"]) { $1 })
        return nil
    }

    private func subscribe(_ rule: DBusMatchRule) async throws {
        do { try await inbox.subscribe(rule) } catch {
            if Task.isCancelled { throw Stop.stopped }
            if !connection.isConnected { throw Stop.busClosed }
            throw Stop.failed("cannot subscribe to BlueZ's signals: \(error)")
        }
    }

    private func startTimer(_ after: Duration) -> UInt64 {
        timerToken += 1
        inbox.timer(after: after, token: timerToken)
        return timerToken
    }

    // MARK: Calls

    /// A call that stops being waited for when the task is cancelled (`CancellationError`).
    private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
                      destination: String = BlueZClient.service, timeout: Duration? = nil) async throws -> [DBusValue] {
        let connection = connection
        let timeout = timeout ?? client.timing.call
        return try await abandonOnCancel {
            try await connection.call(destination: destination, path: path, interface: interface, member: member,
                                      arguments: arguments, timeout: timeout)
        }
    }

    private func managedObjects() async throws -> ITagGATT.Tree {
        do {
            return try await abandonOnCancel { [client] in try await client.bluez.managedObjects() }
        } catch is CancellationError {
            throw Stop.stopped
        } catch {
            if !connection.isConnected { throw Stop.busClosed }
            throw Stop.failed("cannot read BlueZ's objects: \(error)")
        }
    }
}

/// The signals a session listens to and its timers, in one stream. Closing it cancels the forwarding tasks
/// (which drops the match rules) and the timers.
final class SignalInbox: Sendable {
    enum Input: Sendable {
        case signal(DBusMessage)
        case timeout(UInt64)
    }

    let stream: AsyncStream<Input>
    private let continuation: AsyncStream<Input>.Continuation
    private let connection: DBusConnection
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(connection: DBusConnection) {
        self.connection = connection
        (stream, continuation) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(4096))
    }

    func subscribe(_ rule: DBusMatchRule) async throws {
        let signals = try await connection.signals(rule)
        let continuation = continuation
        let task = Task {
            for await message in signals { continuation.yield(.signal(message)) }
            // The connection closed (or the inbox did): the session sees the end.
            continuation.finish()
        }
        tasks.withLock { $0.append(task) }
    }

    func timer(after: Duration, token: UInt64) {
        let continuation = continuation
        let task = Task {
            try? await Task.sleep(for: after)
            if !Task.isCancelled { continuation.yield(.timeout(token)) }
        }
        tasks.withLock { $0.append(task) }
    }

    func close() {
        let all = tasks.withLock { t -> [Task<Void, Never>] in
            defer { t.removeAll() }
            return t
        }
        for task in all { task.cancel() }
        continuation.finish()
    }
}

/// Runs `operation`, but stops waiting for it as soon as the task is cancelled (a D-Bus call cannot be
/// withdrawn: its late reply is dropped). Throws `CancellationError` then.
func abandonOnCancel<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let waiter = AbandonableWaiter<T>()
    Task { await waiter.run(operation) }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { waiter.arm($0) }
    } onCancel: {
        waiter.settle(.failure(CancellationError()))
    }
}

/// One result, handed over once to whoever waits (see `abandonOnCancel`).
final class AbandonableWaiter<T: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<T, any Error>)
        case settled(Result<T, any Error>)
        case done
    }

    private let state = Mutex<State>(.idle)

    func run(_ operation: @Sendable () async throws -> T) async {
        do { settle(.success(try await operation())) } catch { settle(.failure(error)) }
    }

    func arm(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { s -> Result<T, any Error>? in
            if case .settled(let result) = s {
                s = .done
                return result
            }
            s = .waiting(continuation)
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    func settle(_ result: Result<T, any Error>) {
        let waiting = state.withLock { s -> CheckedContinuation<T, any Error>? in
            switch s {
            case .idle:
                s = .settled(result)
                return nil
            case .waiting(let c):
                s = .done
                return c
            case .settled, .done:
                return nil
            }
        }
        waiting?.resume(with: result)
    }
}

/// Ends a reconnection wait early when an adapter is powered on or plugged in (or was since the last
/// wait), without polling: one continuation, resumed by whichever comes first — the adapter, the
/// delay, or cancellation.
final class AdapterWake: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else { s.pending = true; return nil }
            s.waiter = nil
            return w
        }
        waiter?.resume()
    }

    /// Returns after `delay`, or as soon as `fire()` is called (at once if it was called since the last wait).
    func wait(upTo delay: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask { await self.fired() }
            await group.next()
            group.cancelAll()
        }
    }

    private func fired() async {
        state.withLock { $0.cancelled = false }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || s.cancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.cancelled = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }
}
