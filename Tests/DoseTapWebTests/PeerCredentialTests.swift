import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import Hummingbird
import Logging
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("The Unix socket: SO_PEERCRED decides", .serialized)
struct PeerCredentialTests {
    /// Runs the dashboard on a Unix socket in a fresh folder while `body` runs.
    func withSocket(_ f: WebFixture, _ body: @Sendable (String) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-sock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        chmod(dir.path, 0o755)
        let path = dir.appendingPathComponent("web.sock").path
        let (ready, signal) = AsyncStream<Void>.makeStream()
        let app = Application(responder: f.dashboard.responder, configuration: .init(address: .unixDomainSocket(path: path)),
                              onServerRunning: { _ in
                                  chmod(path, 0o666)
                                  signal.yield()
                              }, logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.run() }
            for await _ in ready { break }
            defer { group.cancelAll() }
            try await body(path)
        }
    }

    @Test("a peer of our own uid gets in without pairing or CSRF token, and its dose is recorded from the web")
    func sameUID() async throws {
        let f = try WebFixture()
        try await withSocket(f) { path in
            let tonight = try RawSocket.exchange(unixPath: path, "GET /api/tonight HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            #expect(tonight.hasPrefix("HTTP/1.1 200"), "\(tonight.prefix(200))")
            let take = try RawSocket.exchange(unixPath: path, "POST /api/dose/take HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            #expect(take.hasPrefix("HTTP/1.1 200"), "\(take.prefix(200))")
            #expect(take.contains("\"source\":\"web\""))
        }
        #expect(try f.doses.status().phase == .waiting)
    }

    @Test("a peer of another uid on the same socket must pair (run as nobody through setpriv; the test runs as root)")
    func otherUID() async throws {
        // make test runs as root (it installs packages): a second uid is always available there.
        try #require(getuid() == 0, "this test needs root to act as another user")
        let f = try WebFixture()
        try await withSocket(f) { path in
            let script = """
                import socket,sys
                s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                s.sendall(b"GET /api/tonight HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
                print(s.recv(200).decode().split("\\r\\n")[0])
                """
            let result = try await Subprocess.run(
                .path("/usr/bin/setpriv"),
                arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, path],
                output: .string(limit: 4096), error: .string(limit: 4096))
            #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "HTTP/1.1 401 Unauthorized",
                    "\(String(describing: result.standardError))")
        }
        #expect(try f.doses.status().phase == .idle)
    }
}
