import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw client socket for tests that speak HTTP by hand: over TCP from any loopback source address (a second
/// "client" on 127.0.0.0/8), or over a Unix socket (the agent's own, where SO_PEERCRED decides). Its reads
/// block: call them through `onOwnThread` (or `exchange`), never on the cooperative pool.
public final class RawSocket: @unchecked Sendable {
    public let fd: Int32

    /// Connects to `port` on 127.0.0.1 from `source`, and writes `text` if any.
    public init(port: Int, source: String = "127.0.0.1", send text: String = "") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
        guard bound == 0, connected == 0 else { throw failure() }
        write(text)
    }

    /// Connects to the Unix socket at `path`, and writes `text` if any.
    public init(unixPath path: String, send text: String = "") throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw failure(ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw failure() }
        write(text)
    }

    deinit { close(fd) }

    /// The error of a failed set-up. The descriptor is closed by `deinit`, which runs for a throwing init of a
    /// fully initialised class: closing it here too would close whatever descriptor another thread opened
    /// meanwhile under the same number.
    private func failure(_ code: Int32 = errno) -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
    }

    public func write(_ text: String) {
        guard !text.isEmpty else { return }
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// True once the server has closed (EOF or reset), waiting at most `timeout` seconds; data is read and dropped.
    public func closedByServer(within timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        repeat {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(0, min(200, end.timeIntervalSinceNow * 1000))))
            if ready > 0 {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n == 0 || (n < 0 && errno != EAGAIN) { return true }
            }
        } while Date() < end
        return false
    }

    /// Everything the server sent until it closed (each read waiting at most `timeout` seconds).
    public func readAll(timeout: Double) -> String {
        var timeoutValue = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeoutValue, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// One request over the Unix socket at `path` and the whole answer (the request says `Connection: close`).
    public static func exchange(unixPath path: String, _ request: String, timeout: Double = 30) throws -> String {
        try RawSocket(unixPath: path, send: request).readAll(timeout: timeout)
    }

    /// A free TCP port on loopback (bound, read, released: another process may still take it first).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("no socket for a free port") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw FixtureError("cannot bind a free port") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
