import DoseTapCore
import Foundation
import Logging
import Synchronization

/// `org.freedesktop.Notifications` on the session bus: shows notifications with an urgency, a sound
/// name and action buttons, and reports which button was pressed.
public final class DesktopNotifications: Sendable {
    public enum Urgency: UInt8, Sendable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    /// An action button pressed on one of our notifications.
    public struct Invocation: Sendable, Equatable {
        public var id: UInt32
        public var action: String
        public init(id: UInt32, action: String) {
            self.id = id
            self.action = action
        }
    }

    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    public let connection: DBusConnection
    private let logger: Logger
    /// Whether the server reads the body as markup (`body-markup` in `GetCapabilities`), once known.
    private let bodyMarkup = Mutex<Bool?>(nil)

    public init(connection: DBusConnection, logger: Logger = Logger(label: "dosetap.notifications")) {
        self.connection = connection
        self.logger = logger
    }

    /// The session bus's notification service, or nil when there is no session bus (a headless Pi):
    /// then notifications are logged only, which is not an error.
    public static func sessionIfAvailable(logger: Logger) -> DesktopNotifications? {
        guard ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"].map({ !$0.isEmpty }) ?? false else {
            logger.info("no session bus: desktop notifications are logged only")
            return nil
        }
        do {
            return DesktopNotifications(connection: try DBusConnection(bus: .session, logger: logger), logger: logger)
        } catch {
            logger.info("no session bus: desktop notifications are logged only", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Shows a notification; returns its id.
    /// - Parameter actions: (key, label) pairs; the keys come back in `invocations()`.
    @discardableResult
    public func notify(title: String, body: String, urgency: Urgency, soundName: String?, suppressSound: Bool,
                       actions: [(key: String, label: String)], category: String = "x-dosetap.dose",
                       timeout: Duration = .seconds(5)) async throws -> UInt32 {
        var hints: [String: DBusValue] = ["urgency": .byte(urgency.rawValue), "category": .string(category),
                                          "desktop-entry": .string("dosetap")]
        if let soundName { hints["sound-name"] = .string(soundName) }
        if suppressSound { hints["suppress-sound"] = .bool(true) }
        if urgency == .critical { hints["resident"] = .bool(true) }
        // A body can carry an alarm's label or a device's name: on a server that reads markup, `<a href=…>` or
        // `<img src=…>` in it would be a link or a fetch. Shown as the text it is.
        let shown = await readsMarkup() ? Self.escapedMarkup(body) : body
        let reply = try await connection.call(
            destination: Self.name, path: Self.path, interface: Self.name, member: "Notify",
            arguments: [.string("DoseTap"), .uint32(0), .string("appointment-soon"), .string(title), .string(shown),
                        .strings(actions.flatMap { [$0.key, $0.label] }), .vardict(hints),
                        .int32(urgency == .critical ? 0 : -1)],
            timeout: timeout)
        guard let id = reply.first?.int, id >= 0, id <= Int(UInt32.max) else {
            throw DBusError(name: "org.dosetap.Error.BadReply", message: "Notify returned \(reply)")
        }
        return UInt32(id)
    }

    /// True when the server reads the body as markup — or when it cannot say (escaping then costs at most
    /// a visible `&amp;`; not escaping could turn a forged label into a link).
    func readsMarkup() async -> Bool {
        if let known = bodyMarkup.withLock({ $0 }) { return known }
        guard let reply = try? await connection.call(destination: Self.name, path: Self.path, interface: Self.name,
                                                     member: "GetCapabilities", timeout: .seconds(2)),
              let capabilities = reply.first?.array?.compactMap(\.string) else { return true }
        let markup = capabilities.contains("body-markup")
        bodyMarkup.withLock { $0 = markup }
        return markup
    }

    /// The body as text under the notification spec's markup: `&`, `<` and `>` as entities.
    public static func escapedMarkup(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(c)
            }
        }
        return out
    }

    public func close(id: UInt32) async throws {
        _ = try await connection.call(destination: Self.name, path: Self.path, interface: Self.name,
                                      member: "CloseNotification", arguments: [.uint32(id)])
    }

    /// The unique name of the notification server (the owner of `org.freedesktop.Notifications`), or nil
    /// when none is running.
    public func owner() async -> String? {
        try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                   member: "GetNameOwner", arguments: [.string(Self.name)]).first?.string
    }

    /// Buttons pressed on notifications, only as the notification server reports them: any process on
    /// the session bus can send an `ActionInvoked` signal with our path, so a signal whose sender is not
    /// the current owner of `org.freedesktop.Notifications` is dropped (and logged). The owner is
    /// followed through `NameOwnerChanged` (a restarted server counts at once). Signals with unexpected
    /// arguments are dropped.
    public func invocations() async throws -> AsyncStream<Invocation> {
        let signals = try await connection.signals(DBusMatchRule(sender: Self.name, path: Self.path, interface: Self.name,
                                                                 member: "ActionInvoked"))
        let owners = try await connection.signals(DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                member: "NameOwnerChanged", arg0: Self.name))
        // Read after subscribing, so no change of owner falls in between.
        let owner = Shared<String?>(await self.owner())
        let (stream, continuation) = AsyncStream<Invocation>.makeStream()
        let follow = Task {
            for await m in owners {
                // Only the bus itself sends NameOwnerChanged (nobody else can own org.freedesktop.DBus).
                guard m.sender == "org.freedesktop.DBus", m.body.count == 3, m.body[0].string == Self.name,
                      let new = m.body[2].string else { continue }
                owner.withLock { $0 = new.isEmpty ? nil : new }
            }
        }
        let logger = self.logger
        let refusedSenders = Shared<Set<String>>([])
        let task = Task {
            for await message in signals {
                guard message.path == Self.path, message.interface == Self.name, message.member == "ActionInvoked" else { continue }
                var fromServer = message.sender != nil && owner.withLock { $0 } == message.sender
                if !fromServer {
                    // NameOwnerChanged of a server that just started may still be on its way: ask the bus.
                    let now = await self.owner()
                    owner.withLock { $0 = now }
                    fromServer = now != nil && message.sender == now
                }
                guard fromServer else {
                    // Once per sender (a flood of forgeries must not flood the log).
                    let first = refusedSenders.withLock { senders in
                        senders.count < 64 && senders.insert(message.sender ?? "").inserted
                    }
                    guard first else { continue }
                    logger.warning("notification action refused: not sent by the notification server", metadata: [
                        "sender": "\(DisplayText.escaped(message.sender ?? "none"))",
                    ])
                    continue
                }
                guard message.body.count == 2, case .uint32(let id) = message.body[0], case .string(let action) = message.body[1] else {
                    continue
                }
                continuation.yield(Invocation(id: id, action: action))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            task.cancel()
            follow.cancel()
        }
        return stream
    }
}

/// A value behind a lock, shared by the tasks of one stream.
private final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
