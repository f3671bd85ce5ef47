import DoseTapAgent
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import Logging
import ServiceLifecycle
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP client: connect from `source` (any 127.0.0.0/8 address: a second "client" on loopback), write,
/// and tell whether the server closed the connection.
final class RawConnection: @unchecked Sendable {
    let fd: Int32

    init(port: Int, source: String = "127.0.0.1", send text: String = "") throws {
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
        guard bound == 0, connected == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(fd)
            throw error
        }
        if !text.isEmpty { _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    }

    deinit { close(fd) }

    /// True once the server has closed (EOF or reset), waiting at most `timeout` seconds; data is read and dropped.
    func closedByServer(within timeout: Double) -> Bool {
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

    /// Everything the server sent until it closed (at most `timeout` seconds).
    func readAll(timeout: Double) -> String {
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
}

@Suite("The dashboard's connections: caps and the header timeout (#25)", .serialized)
struct ConnectionLimitTests {
    /// Runs the dashboard's real TCP listener on a free loopback port with `limits` while `body` runs, then stops
    /// it as the agent does (a graceful shutdown): cancelling the server while it still held accepted connections
    /// crashed the test process under load (NIO: "Deinited NIOAsyncWriter without calling finish()").
    func withListener(_ limits: WebLimits, _ body: @Sendable (Int) async throws -> Void) async throws {
        let f = try WebFixture()
        let (ready, signal) = AsyncStream<Int>.makeStream()
        let services = try WebFace.services(dashboard: f.dashboard, listen: [WebListenAddress(host: "127.0.0.1", port: 0)],
                                            socketPath: nil, logger: Logger(label: "test"), limits: limits,
                                            onListening: { address in signal.yield(Int(address.split(separator: ":").last!)!) })
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [], cancellationSignals: [], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        var port = 0
        for await p in ready { port = p; break }
        do {
            try await body(port)
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await running.value
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    static let partialHead = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"

    @Test("beyond the cap per client, and beyond the cap overall, a new connection is closed at once; the admitted ones stay")
    func caps() async throws {
        try await withListener(WebLimits(tcpConnections: 3, tcpPerClient: 2, unixConnections: 1, headerTimeout: 600)) { port in
            // Three half-open connections from 127.0.0.1: two fit its share, one is closed.
            let first = try (0..<3).map { _ in try RawConnection(port: port, send: Self.partialHead) }
            // Blocking waits on threads of their own (onOwnThread): on the cooperative pool they stall the listener's
            // own handlers and every other test of the process.
            #expect(await onOwnThread { Self.closedCount(first, expected: 1) } == 1)
            // Two from 127.0.0.2: one fits the overall cap of 3, the other is closed.
            let second = try (0..<2).map { _ in try RawConnection(port: port, source: "127.0.0.2", send: Self.partialHead) }
            #expect(await onOwnThread { Self.closedCount(second, expected: 1) } == 1)
            // A connection that ends gives its place back: a whole request is then answered.
            let all = first + second
            let open = await onOwnThread { all.filter { !$0.closedByServer(within: 0) } }
            #expect(open.count == 3)
            _ = open.first.map { shutdown($0.fd, Int32(SHUT_RDWR)) }
            var answer = ""
            for _ in 0..<100 where !answer.hasPrefix("HTTP/1.1 ") {
                let request = try RawConnection(port: port, source: "127.0.0.2",
                                                send: "GET /api/tonight HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                answer = await onOwnThread { request.readAll(timeout: 10) }
                if !answer.hasPrefix("HTTP/1.1 ") { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(answer.hasPrefix("HTTP/1.1 401"), "\(answer)")
        }
    }

    @Test("a connection that never finishes its request head is closed after the header timeout; so is an idle one")
    func headerTimeout() async throws {
        try await withListener(WebLimits(tcpConnections: 8, tcpPerClient: 8, unixConnections: 1, headerTimeout: 1)) { port in
            let silent = try RawConnection(port: port)
            let partial = try RawConnection(port: port, send: Self.partialHead)
            // Generous: a loaded machine; the point is that they are closed at all (they never were).
            #expect(await onOwnThread { silent.closedByServer(within: 60) })
            #expect(await onOwnThread { partial.closedByServer(within: 60) })
        }
    }

    /// How many of `connections` the server closes: waits (generously) for `expected`, then a moment for more.
    static func closedCount(_ connections: [RawConnection], expected: Int) -> Int {
        var closed = Set<Int>()
        let end = Date().addingTimeInterval(30)
        while closed.count < expected, Date() < end {
            for (i, c) in connections.enumerated() where !closed.contains(i) && c.closedByServer(within: 0.05) { closed.insert(i) }
        }
        for (i, c) in connections.enumerated() where !closed.contains(i) && c.closedByServer(within: 0.5) { closed.insert(i) }
        return closed.count
    }
}
