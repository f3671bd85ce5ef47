import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Talks to systemd's service manager over `$NOTIFY_SOCKET` (the sd_notify protocol: one datagram
/// of `KEY=VALUE` lines). Does nothing when the variable is not set.
public struct SystemdNotifier: Sendable {
    public let socketPath: String?
    /// Half of `WATCHDOG_USEC`, when systemd expects pings from this process.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if path != nil, let usecText = environment["WATCHDOG_USEC"], let usec = UInt64(usecText), usec > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == getpid() }) ?? true {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    public var isEnabled: Bool { socketPath != nil }

    /// Sends a state such as "READY=1", "RELOADING=1", "STOPPING=1" or "WATCHDOG=1"; false when it could not be
    /// sent (no socket, or its queue is full: the datagram is dropped, never waited for).
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = MemoryLayout<sa_family_t>.size + pathBytes.count + (abstract ? 0 : 1)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { bytes in
                    // Never blocks: a receiver that stopped reading (a full queue) loses this datagram instead of
                    // stopping the agent's event loop in sendto — seen in a test whose notify socket filled with
                    // watchdog pings: the loop never got to the SIGTERM, and an alarm due then would not ring.
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), sa, socklen_t(length))
                }
            }
        }
        return sent == message.count
    }
}
