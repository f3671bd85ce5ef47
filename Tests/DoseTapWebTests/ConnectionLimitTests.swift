import DoseTapAgent
import DoseTapApp
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import Logging
import ServiceLifecycle
import Testing
#if canImport(Glibc)
import Glibc
#endif

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
            let first = try (0..<3).map { _ in try RawSocket(port: port, send: Self.partialHead) }
            // Blocking waits on threads of their own (onOwnThread): on the cooperative pool they stall the listener's
            // own handlers and every other test of the process.
            #expect(await onOwnThread { Self.closedCount(first, expected: 1) } == 1)
            // Two from 127.0.0.2: one fits the overall cap of 3, the other is closed.
            let second = try (0..<2).map { _ in try RawSocket(port: port, source: "127.0.0.2", send: Self.partialHead) }
            #expect(await onOwnThread { Self.closedCount(second, expected: 1) } == 1)
            // A connection that ends gives its place back: a whole request is then answered.
            let all = first + second
            let open = await onOwnThread { all.filter { !$0.closedByServer(within: 0) } }
            #expect(open.count == 3)
            _ = open.first.map { shutdown($0.fd, Int32(SHUT_RDWR)) }
            var answer = ""
            for _ in 0..<100 where !answer.hasPrefix("HTTP/1.1 ") {
                let request = try RawSocket(port: port, source: "127.0.0.2",
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
            let silent = try RawSocket(port: port)
            let partial = try RawSocket(port: port, send: Self.partialHead)
            // Generous: a loaded machine; the point is that they are closed at all (they never were).
            #expect(await onOwnThread { silent.closedByServer(within: 60) })
            #expect(await onOwnThread { partial.closedByServer(within: 60) })
        }
    }

    @Test("a request body trickled a byte at a time is cut off at the header timeout (#51: POST /pair stayed open a minute)")
    func bodyTimeout() async throws {
        try await withListener(WebLimits(tcpConnections: 8, tcpPerClient: 8, unixConnections: 1, headerTimeout: 1)) { port in
            let head = "POST /pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n\r\ncode="
            let trickler = try RawSocket(port: port, send: head)
            // A byte every 0.3 s (well inside the 1 s idle timeout) for up to 60 s: closed long before.
            let closedAfter = await onOwnThread { () -> Double? in
                let start = Date()
                for _ in 0..<200 {
                    if trickler.closedByServer(within: 0.3) { return Date().timeIntervalSince(start) }
                    _ = send(trickler.fd, "1", 1, Int32(MSG_NOSIGNAL))
                }
                return nil
            }
            let seconds = try #require(closedAfter, "the trickled body kept its connection open for a minute")
            #expect(seconds < 30)
            // A whole body in time is still answered.
            let whole = try RawSocket(port: port, send: "POST /pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\nConnection: close\r\n\r\ncode=1234")
            let answer = await onOwnThread { whole.readAll(timeout: 20) }
            #expect(answer.hasPrefix("HTTP/1.1 "), "\(answer)")
        }
    }

    /// How many of `connections` the server closes: waits (generously) for `expected`, then a moment for more.
    static func closedCount(_ connections: [RawSocket], expected: Int) -> Int {
        var closed = Set<Int>()
        let end = Date().addingTimeInterval(30)
        while closed.count < expected, Date() < end {
            for (i, c) in connections.enumerated() where !closed.contains(i) && c.closedByServer(within: 0.05) { closed.insert(i) }
        }
        for (i, c) in connections.enumerated() where !closed.contains(i) && c.closedByServer(within: 0.5) { closed.insert(i) }
        return closed.count
    }
}
