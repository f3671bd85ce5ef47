import Foundation
import Logging

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

    public init(connection: DBusConnection) {
        self.connection = connection
    }

    /// The session bus's notification service, or nil when there is no session bus (a headless Pi):
    /// then notifications are logged only, which is not an error.
    public static func sessionIfAvailable(logger: Logger) -> DesktopNotifications? {
        guard ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"].map({ !$0.isEmpty }) ?? false else {
            logger.info("no session bus: desktop notifications are logged only")
            return nil
        }
        do {
            return DesktopNotifications(connection: try DBusConnection(bus: .session, logger: logger))
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
        let reply = try await connection.call(
            destination: Self.name, path: Self.path, interface: Self.name, member: "Notify",
            arguments: [.string("DoseTap"), .uint32(0), .string("appointment-soon"), .string(title), .string(body),
                        .strings(actions.flatMap { [$0.key, $0.label] }), .vardict(hints),
                        .int32(urgency == .critical ? 0 : -1)],
            timeout: timeout)
        guard let id = reply.first?.int, id >= 0, id <= Int(UInt32.max) else {
            throw DBusError(name: "org.dosetap.Error.BadReply", message: "Notify returned \(reply)")
        }
        return UInt32(id)
    }

    public func close(id: UInt32) async throws {
        _ = try await connection.call(destination: Self.name, path: Self.path, interface: Self.name,
                                      member: "CloseNotification", arguments: [.uint32(id)])
    }

    /// Buttons pressed on notifications. Signals with unexpected arguments are dropped.
    public func invocations() async throws -> AsyncStream<Invocation> {
        let signals = try await connection.signals(DBusMatchRule(path: Self.path, interface: Self.name, member: "ActionInvoked"))
        let (stream, continuation) = AsyncStream<Invocation>.makeStream()
        let task = Task {
            for await message in signals {
                guard message.body.count == 2, case .uint32(let id) = message.body[0], case .string(let action) = message.body[1] else {
                    continue
                }
                continuation.yield(Invocation(id: id, action: action))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
