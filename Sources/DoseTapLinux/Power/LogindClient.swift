import DoseTapCore
import Foundation
import Logging
import Synchronization

/// systemd-logind on the system bus, for what the sleep guard needs: a delay inhibitor lock
/// (`Manager.Inhibit("sleep", who, why, "delay")`, which returns the lock as a file descriptor) and the
/// `PrepareForSleep(b)` signal. Everything from the bus is untrusted: a signal from anyone but the current
/// owner of `org.freedesktop.login1`, or with another signature, is logged and dropped; an `Inhibit` reply
/// without exactly one descriptor is an error (any descriptor it did carry is closed).
public final class LogindClient: Sendable {
    public static let service = "org.freedesktop.login1"
    public static let path = "/org/freedesktop/login1"
    public static let interface = "org.freedesktop.login1.Manager"

    public let connection: DBusConnection
    private let logger: Logger
    private let knownOwner = Mutex<String?>(nil)

    public init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Takes a delay lock on sleep: logind waits (up to its `InhibitDelayMaxSec`, 5 s by default) for the lock
    /// to be released before suspending. Release it after the wake-up is armed.
    public func inhibitSleep(who: String = "DoseTap", why: String) async throws -> InhibitorLock {
        let reply = try await connection.call(destination: Self.service, path: Self.path, interface: Self.interface, member: "Inhibit",
                                              arguments: [.string("sleep"), .string(who), .string(why), .string("delay")])
        return try InhibitorLock(reply: reply)
    }

    /// What logind says of sleep tonight, for the battery forecast: `HandleLidSwitch`, `IdleAction` and
    /// `IdleActionUSec`, and the programs holding a `sleep` inhibitor in block mode (the machine cannot
    /// suspend while they do). Our own lock is a delay lock and never counts. A property logind does not
    /// have (an old logind, the mock) is nil; a failed `ListInhibitors` is no blocker known.
    public func sleepConditions(ownPID: Int = Int(ProcessInfo.processInfo.processIdentifier)) async -> NightConditions {
        var conditions = NightConditions()
        conditions.lidSwitch = await property("HandleLidSwitch")?.string.map { DisplayText.escaped($0, maxLength: 40) }
        conditions.idleAction = await property("IdleAction")?.string.map { DisplayText.escaped($0, maxLength: 40) }
        if let usec = await property("IdleActionUSec")?.int, usec > 0 { conditions.idleActionSeconds = Double(usec) / 1_000_000 }
        if let reply = try? await connection.call(destination: Self.service, path: Self.path, interface: Self.interface,
                                                  member: "ListInhibitors"),
           let entries = reply.first?.array {
            for entry in entries {
                // (what, who, why, mode, uid, pid)
                guard case .structure(let fields) = entry.unwrapped, fields.count == 6,
                      let what = fields[0].string, let who = fields[1].string, let mode = fields[3].string else { continue }
                let pid = fields[5].int
                guard mode == "block", what.split(separator: ":").contains("sleep"), pid != ownPID else { continue }
                conditions.sleepBlockedBy.append(DisplayText.escaped(who, maxLength: 40))
            }
        }
        return conditions
    }

    /// What the deadline guard (#52 §3) needs of logind: whether every session is idle (`IdleHint`, and since when:
    /// `IdleSinceHint`, 0 is none), whether DoseTap may suspend the machine (`CanSuspend`), and who blocks sleep. A
    /// property or call logind does not answer is the safe side: not idle, `CanSuspend` unknown.
    public func guardFacts(cannotWake: String?, ownPID: Int = Int(ProcessInfo.processInfo.processIdentifier)) async -> GuardFacts {
        let idle = await property("IdleHint")?.bool ?? false
        var since: Date?
        if let usec = await property("IdleSinceHint")?.int, usec > 0 { since = Date(timeIntervalSince1970: Double(usec) / 1_000_000) }
        let canSuspend = try? await connection.call(destination: Self.service, path: Self.path, interface: Self.interface,
                                                    member: "CanSuspend").first?.string
        let blockers = await sleepConditions(ownPID: ownPID).sleepBlockedBy
        return GuardFacts(idle: idle, idleSince: since, blockedBy: blockers, cannotWake: cannotWake, canSuspend: canSuspend)
    }

    /// Asks logind to suspend the machine now (`Suspend(false)`: no polkit password prompt; the active session's user
    /// may, by logind's default policy). Throws what logind answers (a refusal, an inhibitor, no logind).
    public func suspend() async throws {
        _ = try await connection.call(destination: Self.service, path: Self.path, interface: Self.interface, member: "Suspend",
                                      arguments: [.bool(false)])
    }

    private func property(_ name: String) async -> DBusValue? {
        try? await connection.call(destination: Self.service, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                   member: "Get", arguments: [.string(Self.interface), .string(name)]).first
    }

    /// `PrepareForSleep`: true just before the machine suspends (the moment to arm the wake-up and release
    /// the lock), false after it resumed. Only logind's own signals count.
    public func prepareForSleep() async throws -> AsyncStream<Bool> {
        let signals = try await connection.signals(DBusMatchRule(sender: Self.service, path: Self.path, interface: Self.interface,
                                                                 member: "PrepareForSleep"))
        _ = await refreshOwner()
        let (stream, continuation) = AsyncStream<Bool>.makeStream()
        let task = Task { [self] in
            for await message in signals {
                guard let sleeping = await accept(message) else { continue }
                continuation.yield(sleeping)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The value of a PrepareForSleep signal, or nil (logged) when it is not one logind sent as documented.
    func accept(_ message: DBusMessage) async -> Bool? {
        guard message.body.count == 1, case .bool(let sleeping) = message.body[0] else {
            let signature = message.body.map(\.signature).joined()
            logger.warning("malformed PrepareForSleep signal dropped", metadata: [
                "signature": "\(DisplayText.escaped(signature))", "sender": "\(DisplayText.escaped(message.sender ?? "?"))",
            ])
            return nil
        }
        guard await isFromLogind(message.sender) else {
            logger.warning("PrepareForSleep from a sender that is not logind dropped", metadata: [
                "sender": "\(DisplayText.escaped(message.sender ?? "?"))",
            ])
            return nil
        }
        return sleeping
    }

    /// Whether `sender` is the current owner of `org.freedesktop.login1` (asked again when it is not the one
    /// known: logind may have restarted).
    func isFromLogind(_ sender: String?) async -> Bool {
        guard let sender else { return false }
        if knownOwner.withLock({ $0 }) == sender { return true }
        return await refreshOwner() == sender
    }

    /// The unique name of logind, or nil when it is not on the bus.
    @discardableResult
    public func refreshOwner() async -> String? {
        let owner = try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                               arguments: [.string(Self.service)]).first?.string
        knownOwner.withLock { $0 = owner }
        return owner
    }
}

/// A logind inhibitor lock: held while the descriptor is open. `release()` closes it (once); so does the
/// lock going away.
public final class InhibitorLock: Sendable {
    private let descriptor: DBusUnixFD

    /// The lock carried by an `Inhibit` reply: exactly one `h`. Anything else is refused (and any descriptor
    /// in it closed when the reply is dropped).
    public init(reply: [DBusValue]) throws(DBusError) {
        guard reply.count == 1, let fd = reply[0].unixFD, fd.isOpen else {
            let signature = reply.map(\.signature).joined()
            throw DBusError(name: "org.dosetap.Error.Local",
                            message: "logind's Inhibit answered '\(DisplayText.escaped(signature))' instead of a file descriptor")
        }
        descriptor = fd
    }

    public var isHeld: Bool { descriptor.isOpen }

    /// Releases the lock: logind may go on suspending.
    public func release() { descriptor.close() }
}
