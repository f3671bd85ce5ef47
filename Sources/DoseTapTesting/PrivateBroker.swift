import Foundation
import Subprocess
#if canImport(Glibc)
import Glibc
#endif

/// A real `mosquitto` (Debian's) on a free loopback port for one test, no persistence; killed afterwards.
/// Anonymous by default; with `users`, one password per user (`password(for:)`), no anonymous clients, and
/// `acl` as its ACL file (`householdACL`: the ACL of docs/household.md). `restart` kills it and starts it
/// again on the same port (the broker restarting).
public enum PrivateBroker {
    public struct Broker: Sendable {
        public var port: Int
        let config: String
    }

    /// The ACL of docs/household.md for the household topic level `household` (a test checks the docs say
    /// the same).
    public static func householdACL(_ household: String) -> String {
        """
        pattern read  dosetap/\(household)/#
        pattern write dosetap/\(household)/peer/%u
        pattern write dosetap/\(household)/plan/%u/#
        pattern write dosetap/\(household)/answer/%u/#
        pattern write dosetap/\(household)/claim/#
        """
    }

    /// The password of `user` on a broker started with `users`.
    public static func password(for user: String) -> String { "pw-\(user)-7f3a" }

    /// - Parameter bindClientIDs: with `users`, the broker takes each client's user name as its client id
    ///   (`use_username_as_clientid`, as docs/household.md sets it up): one user cannot take over another's session.
    public static func run<R: Sendable>(users: [String] = [], acl: String? = nil, bindClientIDs: Bool = true,
                                        _ body: @Sendable (Broker) async throws -> R) async throws -> R {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-broker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // The port is free when `freePort` looks, but anything of the test run that binds port 0 (an HTTP
        // server, another broker) can take it before mosquitto does; mosquitto then exits and the port
        // answers something that is not MQTT. So the broker is proved by an MQTT handshake, and another port
        // is tried when the answer is not a CONNACK.
        var access = "allow_anonymous true\n"
        if !users.isEmpty {
            let passwords = dir.appendingPathComponent("passwd")
            try users.map { "\($0):\(password(for: $0))" }.joined(separator: "\n").appending("\n").write(to: passwords, atomically: true, encoding: .utf8)
            // Readable by all (a throwaway test file): mosquitto started as root reads it after dropping to its own user.
            chmod(passwords.path, 0o644)
            // mosquitto_passwd -U hashes a file of user:password lines in place.
            let hashed = try await Subprocess.run(.path("/usr/bin/mosquitto_passwd"), arguments: ["-U", passwords.path], input: .none,
                                                  output: .discarded, error: .discarded)
            guard hashed.terminationStatus.isSuccess else { throw FixtureError("mosquitto_passwd -U failed") }
            access = "allow_anonymous false\npassword_file \(passwords.path)\n"
            if bindClientIDs { access += "use_username_as_clientid true\n" }
        }
        if let acl {
            let file = dir.appendingPathComponent("acl")
            try (acl + "\n").write(to: file, atomically: true, encoding: .utf8)
            access += "acl_file \(file.path)\n"
        }
        var started: (broker: Broker, task: Task<Void, any Error>)?
        for attempt in 1...5 {
            let port = try RawSocket.freePort()
            let config = dir.appendingPathComponent("mosquitto-\(attempt).conf")
            try """
                listener \(port) 127.0.0.1
                \(access)persistence false
                log_dest none
                """.write(to: config, atomically: true, encoding: .utf8)
            let broker = Broker(port: port, config: config.path)
            let task = start(broker)
            if try await waitForMQTT(port) {
                started = (broker, task)
                break
            }
            stop(broker)
            task.cancel()
        }
        guard let (broker, task) = started else { throw FixtureError("mosquitto did not start on any of five free ports") }
        defer { task.cancel() }
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
        guard try await waitForMQTT(broker.port) else { throw FixtureError("port \(broker.port) was taken while mosquitto restarted") }
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

    /// Waits until the port answers an MQTT CONNECT with a CONNACK (true), or answers something else (false:
    /// another program has the port). Throws when nothing listens there after 5 s.
    static func waitForMQTT(_ port: Int) async throws -> Bool {
        for _ in 0..<200 {
            switch handshake(port) {
            case .some(true): return true
            case .some(false): return false
            case nil: try await Task.sleep(for: .milliseconds(25))
            }
        }
        throw FixtureError("mosquitto did not listen on port \(port)")
    }

    /// One MQTT 3.1.1 CONNECT (clean session, empty client id, anonymous): true for a CONNACK (one that accepts,
    /// or refuses an anonymous client: mosquitto answered), false for any other answer or none within 2 s, nil
    /// when the connection is refused.
    static func handshake(_ port: Int) -> Bool? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard connected else { return nil }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connectPacket: [UInt8] = [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C, 0x00, 0x00]
        guard connectPacket.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == connectPacket.count else { return false }
        var answer = [UInt8](repeating: 0, count: 4)
        var got = 0
        while got < 4 {
            let n = answer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, 4 - got, 0) }
            guard n > 0 else { return false }
            got += n
        }
        return answer[0] == 0x20 && answer[1] == 0x02 && (answer[3] == 0x00 || answer[3] == 0x05)
    }
}
