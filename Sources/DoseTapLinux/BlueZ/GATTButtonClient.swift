import DoseTapCore
import Foundation
import Logging
import Synchronization

/// A client of iTag-style GATT buttons through BlueZ: find the device (discovering it if BlueZ does not
/// know it yet), `Device1.Connect`, wait for `ServicesResolved`, find 0xFFE1 under 0xFFE0, `StartNotify`,
/// and report every `Value` of `01` in `PropertiesChanged` as a press; the battery from `Battery1`.
/// After link loss, the objects disappearing or bluetoothd restarting it reconnects with `ReconnectBackoff`
/// (timers and signals only: no polling). Only signals from the current owner of `org.bluez` count.
/// Every timer (the back-off, the step timeouts) waits on the scheduling port, so tests move a fake clock.
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
    /// Stamps the presses.
    private let clock: any WallClock
    /// Runs the back-off and the step timeouts.
    let scheduler: any Scheduling
    private let logger: Logger

    /// Presses stamped on `clock`, timers on `scheduler`.
    public init(bluez: BlueZClient, clock: any WallClock, scheduler: any Scheduling, timing: Timing = Timing(),
                logger: Logger = Logger(label: "dosetap.gatt")) {
        self.bluez = bluez
        self.clock = clock
        self.scheduler = scheduler
        self.timing = timing
        self.logger = logger
    }

    /// One clock for the stamps and the timers (a test's `FakeClock`, or `TimerFDScheduler.shared`).
    public convenience init(bluez: BlueZClient, clock: any Scheduling, timing: Timing = Timing(),
                            logger: Logger = Logger(label: "dosetap.gatt")) {
        self.init(bluez: bluez, clock: clock, scheduler: clock, timing: timing, logger: logger)
    }

    /// Presses stamped on `clock`; the timers wait on the machine's wall clock (`TimerFDScheduler.shared`).
    public convenience init(bluez: BlueZClient, clock: any WallClock, timing: Timing = Timing(),
                            logger: Logger = Logger(label: "dosetap.gatt")) {
        self.init(bluez: bluez, clock: clock, scheduler: TimerFDScheduler.shared, timing: timing, logger: logger)
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
    /// - Parameters:
    ///   - profile: the service and characteristics (an iTag's by default).
    ///   - conversation: for a button that talks back (Flic 2), a new conversation for each connection.
    public func follow(address: String, profile: GATTProfile = .iTag,
                       conversation: (@Sendable () -> any GATTConversation)? = nil, disconnectOnStop: Bool = false,
                       _ handle: @escaping @Sendable (GATTButtonEvent) async -> Void) async {
        guard let address = BluetoothAddress.canonical(address) else {
            logger.error("not a Bluetooth address", metadata: ["address": "\(address)"])
            return
        }
        let (stream, continuation) = AsyncStream<GATTButtonEvent>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.reconnecting(address: address, profile: profile, conversation: conversation,
                                        disconnectOnStop: disconnectOnStop) { continuation.yield($0) }
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
            logger.info("button disconnected", metadata: ["button": "\(address)"])
        } catch {
            logger.notice("cannot disconnect the button", metadata: ["button": "\(address)", "error": "\(error)"])
        }
    }

    private func reconnecting(address: String, profile: GATTProfile, conversation: (@Sendable () -> any GATTConversation)?,
                              disconnectOnStop: Bool, _ emit: @escaping @Sendable (GATTButtonEvent) -> Void) async {
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
        // A button that talks back (Flic 2) advertises when it wants its app: while waiting to reconnect after the
        // link failed (not after the button's protocol refused us, which would retry as fast as it advertises), an
        // advert from it ends the wait.
        let advertWakes = AdvertWakeSwitch()
        let adverts = conversation == nil ? nil : Task { [bluez] in
            guard let adverts = try? await bluez.adverts() else { return }
            for await advert in adverts where advert.address == address {
                if advertWakes.isOn { wake.fire() }
            }
        }
        defer { adverts?.cancel() }
        while !Task.isCancelled {
            let session = GATTButtonSession(client: self, profile: profile, conversation: conversation?(), address: address,
                                            disconnectOnStop: disconnectOnStop, emit: emit)
            let end = await session.run()
            switch end {
            case .stopped:
                return
            case .busClosed:
                logger.warning("D-Bus connection closed: no longer following the \(profile.label)", metadata: ["button": "\(address)"])
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
                logger.log(level: level, "\(profile.label) link down; reconnecting", metadata: [
                    "button": "\(address)", "reason": "\(reason)", "in": "\(delay)",
                ])
                lastReason = reason
                advertWakes.isOn = conversation != nil && !reason.hasPrefix("\(profile.label):")
                await wake.wait(upTo: delay, on: scheduler)
                advertWakes.isOn = false
            }
        }
    }

    func log(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        logger.log(level: level, message, metadata: metadata)
    }

    func now() -> Date { clock.now() }
}

/// Whether an advert may end the reconnection wait now.
final class AdvertWakeSwitch: Sendable {
    private let on = Mutex(false)
    var isOn: Bool {
        get { on.withLock { $0 } }
        set { on.withLock { $0 = newValue } }
    }
}
