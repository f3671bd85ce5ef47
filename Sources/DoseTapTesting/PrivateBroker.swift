import Foundation
import Subprocess
#if canImport(Glibc)
import Glibc
#endif

/// A real `mosquitto` (Debian's) on a free loopback port for one test, anonymous, no persistence; killed
/// afterwards. `restart` kills it and starts it again on the same port (the broker restarting).
public enum PrivateBroker {
    public struct Broker: Sendable {
        public var port: Int
        let config: String
    }

    public static func run<R: Sendable>(_ body: @Sendable (Broker) async throws -> R) async throws -> R {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-broker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try freePort()
        let config = dir.appendingPathComponent("mosquitto.conf")
        try """
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence false
            log_dest none
            """.write(to: config, atomically: true, encoding: .utf8)
        let broker = Broker(port: port, config: config.path)
        let task = start(broker)
        defer { task.cancel() }
        try await waitForPort(port)
        let result = try await body(broker)
        stop(broker)
        return result
    }

    /// Starts mosquitto in the background (the task ends when it exits or is cancelled).
    static func start(_ broker: Broker) -> Task<Void, any Error> {
        Task {
            _ = try await Subprocess.run(.path("/usr/sbin/mosquitto"), arguments: ["-c", broker.config], input: .none,
                                         output: .discarded, error: .discarded)
        }
    }

    /// Kills the broker and starts it again on the same port; returns once it listens.
    public static func restart(_ broker: Broker) async throws -> Task<Void, any Error> {
        stop(broker)
        try await Task.sleep(for: .milliseconds(200))
        let task = start(broker)
        try await waitForPort(broker.port)
        return task
    }

    /// SIGKILL to the mosquitto of this config.
    public static func stop(_ broker: Broker) {
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
            guard let cmdline = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8),
                  cmdline.contains("mosquitto"), cmdline.contains(broker.config), let pid = Int32(entry) else { continue }
            kill(pid, SIGKILL)
        }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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

    static func waitForPort(_ port: Int) async throws {
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let ok = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            close(fd)
            if ok { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw FixtureError("mosquitto did not listen on port \(port)")
    }
}
