internal import CDBus
internal import CDBusLazy
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// A private connection to a D-Bus bus, driven by the agent's event loop (`EpollLoop`) without busy
/// waiting: libdbus's watches become descriptor watches in the loop's epoll set and its timeouts monotonic
/// timerfds there, and every libdbus call happens on the loop's thread. A signal costs one wake-up of one
/// thread (the loop's), which then also runs the task that consumes it.
///
/// - `call(...)`: method calls with a timeout; errors come back as `DBusError` with their name.
/// - `signals(_:)`: an `AsyncStream` of the signals matching a rule (AddMatch is sent for you).
/// - Malformed messages are logged and dropped; a disconnect ends every stream and fails pending calls.
public final class DBusConnection: Sendable {
    public typealias Bus = DBusConnectionCore.Bus
    private let core: DBusConnectionCore

    public init(bus: Bus, logger: Logger = Logger(label: "dosetap.dbus")) throws(DBusError) {
        core = try DBusConnectionCore(bus: bus, logger: logger)
    }

    /// The core outlives this handle's deinit while it closes: libdbus's callbacks point at the core,
    /// never at an object being destroyed.
    deinit {
        core.close()
    }

    public var uniqueName: String { core.uniqueName }
    public var isConnected: Bool { core.isConnected }
    public func close() { core.close() }

    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        try await core.call(destination: destination, path: path, interface: interface, member: member,
                            arguments: arguments, timeout: timeout)
    }

    public func send(path: String, interface: String, member: String, arguments: [DBusValue] = []) throws {
        try core.send(path: path, interface: interface, member: member, arguments: arguments)
    }

    public func signals(_ rule: DBusMatchRule) async throws -> AsyncStream<DBusMessage> {
        try await core.signals(rule)
    }
}

/// The connection itself; see `DBusConnection`.
public final class DBusConnectionCore: @unchecked Sendable {
    public enum Bus: Sendable, Equatable {
        /// `$DBUS_SYSTEM_BUS_ADDRESS`, else the system bus.
        case system
        /// `$DBUS_SESSION_BUS_ADDRESS`.
        case session
        case address(String)
    }

    /// Where every libdbus call happens (the serial context of this connection).
    let queue: EpollLoop
    private let raw: OpaquePointer
    private let logger: Logger
    private var subscriptions: [UUID: (DBusMatchRule, AsyncStream<DBusMessage>.Continuation)] = [:]
    private var pending: [UUID: CheckedContinuation<DBusMessage, any Error>] = [:]
    private var closed = false
    /// This connection's unique name on the bus (":1.42").
    public let uniqueName: String

    /// libdbus is loaded by the first connection, not at start-up (Sources/CDBusLazy): nil, or why it could not be.
    private static let loadFailure: String? = LazyLibrary.loadProblem { dosetap_dbus_load($0, $1) }

    public init(bus: Bus, logger: Logger = Logger(label: "dosetap.dbus"), loop: EpollLoop = .shared) throws(DBusError) {
        if let failure = Self.loadFailure { throw .local("cannot use D-Bus: \(failure)") }
        self.logger = logger
        queue = loop
        dbus_threads_init_default()
        var error = DBusErrorBox()
        var connection: OpaquePointer?
        switch bus {
        case .system: connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error.raw)
        case .session: connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error.raw)
        case .address(let address):
            connection = dbus_connection_open_private(address, &error.raw)
            if let c = connection, dbus_bus_register(c, &error.raw) == 0 {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                connection = nil
            }
        }
        guard let connection else { throw error.take() ?? .local("cannot connect to the bus") }
        raw = connection
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        dbus_connection_set_exit_on_disconnect(connection, 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        queue.sync {
            dbus_connection_set_watch_functions(raw, { watch, data in
                DBusConnectionCore.from(data).addWatch(watch!)
            }, { watch, data in
                DBusConnectionCore.from(data).removeWatch(watch!)
            }, { watch, data in
                DBusConnectionCore.from(data).toggleWatch(watch!)
            }, context, nil)
            dbus_connection_set_timeout_functions(raw, { timeout, data in
                DBusConnectionCore.from(data).addTimeout(timeout!)
            }, { timeout, data in
                DBusConnectionCore.from(data).removeTimeout(timeout!)
            }, { timeout, data in
                DBusConnectionCore.from(data).toggleTimeout(timeout!)
            }, context, nil)
            dbus_connection_set_dispatch_status_function(raw, { _, status, data in
                if status == DBUS_DISPATCH_DATA_REMAINS {
                    let me = DBusConnectionCore.from(data)
                    me.queue.execute { me.dispatchAll() }
                }
            }, context, nil)
            dbus_connection_add_filter(raw, { _, message, data -> DBusHandlerResult in
                DBusConnectionCore.from(data).filter(message!)
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }, context, nil)
        }
        queue.execute { self.dispatchAll() }
    }

    /// Closes the connection: every signal stream ends, every pending call fails.
    func close() {
        queue.sync { closeOnQueue(reason: "connection closed") }
    }

    private func closeOnQueue(reason: String) {
        guard !closed else { return }
        closed = true
        for (_, sub) in subscriptions { sub.1.finish() }
        subscriptions.removeAll()
        for (_, p) in pending { p.resume(throwing: DBusError.local(reason)) }
        pending.removeAll()
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
        for (_, w) in watches { if let r = w.registration { queue.unwatch(r, closing: true) } }
        watches.removeAll()
        for (_, t) in timers { queue.unwatch(t, closing: true) }
        timers.removeAll()
    }

    public var isConnected: Bool { queue.sync { !closed && dbus_connection_get_is_connected(raw) != 0 } }

    static func from(_ data: UnsafeMutableRawPointer?) -> DBusConnectionCore {
        Unmanaged<DBusConnectionCore>.fromOpaque(data!).takeUnretainedValue()
    }

    // MARK: Calls

    /// Calls a method and waits for its reply (or a D-Bus error, or the timeout).
    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        guard let built = dbus_message_new_method_call(destination, path, interface, member) else {
            throw DBusError.local("cannot build call \(interface).\(member) on \(path)")
        }
        let message = MessageRef(built)
        try DBusCodec.encodeBody(arguments, into: message.raw)
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let reply = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DBusMessage, any Error>) in
            queue.execute { [self] in
                guard !closed else {
                    continuation.resume(throwing: DBusError.local("not connected"))
                    return
                }
                var pendingCall: OpaquePointer?
                guard dbus_connection_send_with_reply(raw, message.raw, &pendingCall, ms) != 0, let pendingCall else {
                    continuation.resume(throwing: DBusError.local("cannot send \(member): not connected"))
                    return
                }
                let id = UUID()
                pending[id] = continuation
                let box = Unmanaged.passRetained(PendingBox(connection: self, id: id)).toOpaque()
                dbus_pending_call_set_notify(pendingCall, { call, data in
                    let box = Unmanaged<PendingBox>.fromOpaque(data!).takeUnretainedValue()
                    box.connection?.complete(call!, id: box.id)
                }, box, { data in
                    Unmanaged<PendingBox>.fromOpaque(data!).release()
                })
                // The reply may already be there.
                if dbus_pending_call_get_completed(pendingCall) != 0 {
                    complete(pendingCall, id: id)
                }
                dbus_pending_call_unref(pendingCall)
            }
        }
        if reply.kind == .error {
            throw DBusError(name: reply.errorName ?? "org.freedesktop.DBus.Error.Failed", message: reply.body.first?.string ?? "")
        }
        return reply.body
    }

    private final class PendingBox {
        weak var connection: DBusConnectionCore?
        let id: UUID
        init(connection: DBusConnectionCore, id: UUID) {
            self.connection = connection
            self.id = id
        }
    }

    private func complete(_ call: OpaquePointer, id: UUID) {
        guard let continuation = pending.removeValue(forKey: id) else { return }
        guard let reply = dbus_pending_call_steal_reply(call) else {
            continuation.resume(throwing: DBusError.local("no reply"))
            return
        }
        defer { dbus_message_unref(reply) }
        do {
            continuation.resume(returning: try DBusCodec.message(from: reply))
        } catch {
            logger.warning("malformed D-Bus reply rejected", metadata: ["error": "\(error)"])
            continuation.resume(throwing: error)
        }
    }

    /// Sends a signal or a call without waiting for a reply.
    public func send(path: String, interface: String, member: String, arguments: [DBusValue] = []) throws {
        guard let message = dbus_message_new_signal(path, interface, member) else {
            throw DBusError.local("cannot build signal \(interface).\(member)")
        }
        defer { dbus_message_unref(message) }
        try DBusCodec.encodeBody(arguments, into: message)
        try queue.sync {
            guard !closed, dbus_connection_send(raw, message, nil) != 0 else { throw DBusError.local("not connected") }
        }
    }

    // MARK: Signals

    /// Signals matching `rule`, until the stream is dropped or the connection closes.
    public func signals(_ rule: DBusMatchRule) async throws -> AsyncStream<DBusMessage> {
        let (stream, continuation) = AsyncStream<DBusMessage>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        queue.sync { subscriptions[id] = (rule, continuation) }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.queue.execute {
                self.subscriptions[id] = nil
                if !self.closed {
                    Task { try? await self.removeMatch(rule) }
                }
            }
        }
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                           interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule.text)])
        return stream
    }

    private func removeMatch(_ rule: DBusMatchRule) async throws {
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                           interface: "org.freedesktop.DBus", member: "RemoveMatch", arguments: [.string(rule.text)])
    }

    private func filter(_ message: OpaquePointer) {
        guard dbus_message_get_type(message) == DOSETAP_DBUS_MESSAGE_TYPE_SIGNAL else { return }
        if dbus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") != 0 {
            logger.warning("D-Bus connection lost")
            queue.execute { self.closeOnQueue(reason: "disconnected from the bus") }
            return
        }
        let arrived = Date()
        var decoded: DBusMessage
        do {
            decoded = try DBusCodec.message(from: message)
            decoded.receivedAt = arrived
        } catch {
            let member = dbus_message_get_member(message).map { String(cString: $0) } ?? "?"
            logger.warning("malformed D-Bus signal rejected", metadata: ["member": "\(member)", "error": "\(error)"])
            return
        }
        for (_, sub) in subscriptions where sub.0.matches(decoded) {
            sub.1.yield(decoded)
        }
    }

    // MARK: Event loop integration (all on the loop's thread)

    private var watches: [UnsafeMutableRawPointer: WatchState] = [:]
    private var timers: [UnsafeMutableRawPointer: EpollLoop.Watch] = [:]

    /// One libdbus watch: its direction, and its registration in the loop while libdbus has it enabled.
    /// libdbus watches one socket twice (reading, writing) and epoll takes a descriptor once, so each watch
    /// registers a `dup` of it (a distinct registration of the same open socket).
    private final class WatchState {
        let fd: Int32
        let flag: UInt32
        var registration: EpollLoop.Watch?
        init(fd: Int32, flag: UInt32) {
            self.fd = fd
            self.flag = flag
        }
    }

    private func addWatch(_ watch: OpaquePointer) -> dbus_bool_t {
        let flags = dbus_watch_get_flags(watch)
        let flag = flags & DOSETAP_DBUS_WATCH_READABLE != 0 ? DOSETAP_DBUS_WATCH_READABLE : DOSETAP_DBUS_WATCH_WRITABLE
        watches[UnsafeMutableRawPointer(watch)] = WatchState(fd: dbus_watch_get_unix_fd(watch), flag: flag)
        toggleWatch(watch)
        return 1
    }

    private func removeWatch(_ watch: OpaquePointer) {
        if let state = watches.removeValue(forKey: UnsafeMutableRawPointer(watch)), let registration = state.registration {
            queue.unwatch(registration, closing: true)
        }
    }

    private func toggleWatch(_ watch: OpaquePointer) {
        guard let state = watches[UnsafeMutableRawPointer(watch)] else { return }
        let enabled = dbus_watch_get_enabled(watch) != 0
        if enabled, state.registration == nil {
            let copy = dup(state.fd)
            guard copy >= 0 else {
                logger.error("D-Bus: cannot watch the bus socket", metadata: ["error": "\(String(cString: strerror(errno)))"])
                return
            }
            let flag = state.flag
            let bound = LoopBound(value: (watch: watch, state: state))
            do {
                state.registration = try queue.watch(fd: copy, for: flag == DOSETAP_DBUS_WATCH_READABLE ? .readable : .writable) {
                    [weak self] events in
                    let (watch, state) = bound.value
                    guard let self, let current = self.watches[UnsafeMutableRawPointer(watch)], current === state else { return }
                    var handled = flag
                    if events.contains(.error) { handled |= DOSETAP_DBUS_WATCH_ERROR }
                    if events.contains(.hangUp) { handled |= DOSETAP_DBUS_WATCH_HANGUP }
                    self.handle(watch, handled)
                }
            } catch {
                Glibc.close(copy)
                logger.error("D-Bus: cannot watch the bus socket", metadata: ["error": "\(error)"])
            }
        } else if !enabled, let registration = state.registration {
            queue.unwatch(registration, closing: true)
            state.registration = nil
        }
    }

    private func handle(_ watch: OpaquePointer, _ flags: UInt32) {
        guard !closed else { return }
        dbus_watch_handle(watch, flags)
        dispatchAll()
    }

    private func dispatchAll() {
        guard !closed else { return }
        while dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    private func addTimeout(_ timeout: OpaquePointer) -> dbus_bool_t {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return 1 }
        let key = UnsafeMutableRawPointer(timeout)
        let interval = UInt64(max(1, dbus_timeout_get_interval(timeout))) * 1_000_000
        let bound = LoopBound(value: timeout)
        do {
            timers[key] = try queue.repeatingTimer(every: interval) { [weak self] in
                let timeout = bound.value
                guard let self, !self.closed, self.timers[UnsafeMutableRawPointer(timeout)] != nil else { return }
                dbus_timeout_handle(timeout)
                self.dispatchAll()
            }
        } catch {
            logger.error("D-Bus: cannot arm a timeout", metadata: ["error": "\(error)"])
            return 0
        }
        return 1
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        if let timer = timers.removeValue(forKey: UnsafeMutableRawPointer(timeout)) {
            queue.unwatch(timer, closing: true)
        }
    }

    private func toggleTimeout(_ timeout: OpaquePointer) {
        removeTimeout(timeout)
        _ = addTimeout(timeout)
    }
}

/// Owns one reference to a libdbus message (messages are immutable once sent; safe to hand to the queue).
final class MessageRef: @unchecked Sendable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
    deinit { dbus_message_unref(raw) }
}

/// libdbus's DBusError, initialised and freed.
struct DBusErrorBox {
    var raw = CDBus.DBusError()
    init() { dbus_error_init(&raw) }

    mutating func take() -> DBusError? {
        guard dbus_error_is_set(&raw) != 0 else { return nil }
        defer { dbus_error_free(&raw) }
        return DBusError(name: raw.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                         message: raw.message.map { String(cString: $0) } ?? "")
    }
}
