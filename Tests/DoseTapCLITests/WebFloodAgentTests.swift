import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue #25, finding 3: about 1,100 half-open connections to the dashboard once took every descriptor of
/// the agent, and an alarm then "rang" without a sound. Here the agent runs under `prlimit --nofile=512:512`
/// (a hard limit it cannot raise), a flood of 700 half-open connections — kept up, reopened as the agent
/// closes them — hits its TCP listener while an alarm comes due, and the alarm's player must still run. The
/// player is a fake `pw-play` first on `PATH` that writes a line to a file each time it is started.
@Suite("dosetap agent: a flood of connections never silences an alarm", .serialized)
struct WebFloodAgentTests {
    static let limit = 512
    static let flood = 700

    @Test("700 half-open connections at a 512-descriptor limit: the connections beyond the cap are closed, the Unix socket answers, the alarm's sound plays")
    func floodDuringAlarm() async throws {
        // The flood needs its own descriptors: raise this process's soft limit (never lowered).
        var own = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &own)
        if own.rlim_cur < own.rlim_max { own.rlim_cur = own.rlim_max; setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &own) }
        try #require(own.rlim_cur >= rlim_t(Self.flood + 200), "this process may open only \(own.rlim_cur) files")

        let cli = try CLI()
        let bin = cli.home.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let played = cli.home.appendingPathComponent("played")
        try "#!/bin/sh\necho played >> '\(played.path)'\nsleep 0.2\n".write(to: bin.appendingPathComponent("pw-play"), atomically: true, encoding: .utf8)
        chmod(bin.appendingPathComponent("pw-play").path, 0o755)
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socket = runtime.appendingPathComponent("dosetap/web.sock").path
        let port = try RawSocket.freePort()
        try cli.writeConfig("[web]\nlisten = [\"127.0.0.1:\(port)\"]\n")
        _ = try DoseTapDatabase(directory: cli.dataDirectory)

        let (tz, zone, firstMinute) = AlarmAgentTests.zone(lead: 50)
        let (_, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let log = LineBuffer()
        let result = try await Subprocess.run(
            .path("/usr/bin/prlimit"), arguments: Arguments(["--nofile=\(Self.limit):\(Self.limit)", "--", CLI.binary] + argv),
            environment: cli.environment(tz: tz, extra: ["PATH": "\(bin.path):/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime.path]),
            input: .none, output: .discarded, error: .sequence
        ) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
            #expect(await log.wait(for: "web dashboard listening", count: 2, timeout: 120) != nil, "\(log.all.joined(separator: "\n"))")
            // The flood: 700 half-open connections (silent after the handshake).
            let flood = Flood(port: port, count: Self.flood)
            let closed = await onOwnThread { flood.waitForClosed(atLeast: Self.flood - 200, timeout: 60) }
            #expect(closed >= Self.flood - 200, "only \(closed) of \(Self.flood) connections were closed: \(log.all.suffix(20).joined(separator: "\n"))")
            // The agent's log reaches this process later than its closes do (a loaded machine): wait for the line.
            #expect(await log.wait(for: "too many connections", timeout: 60) != nil, "\(log.all.suffix(20).joined(separator: "\n"))")
            // The Unix socket has its own budget: it answers during the flood.
            flood.refill()
            let answer = try RawSocket.exchange(unixPath: socket, "GET /api/tonight HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
            // The alarm, due once the flood is in place (a loaded machine may take long to get there): the next
            // minute of the test's zone at least 40 s ahead.
            var next = firstMinute
            while next.timeIntervalSinceNow < 40 { next = next.addingTimeInterval(60) }
            let minute = next
            let hhmm = AlarmAgentTests.hourMinute(minute, zone)
            let added = try await cli.run(["alarm", "add", hhmm, "--label", "Wake"], tz: tz)
            #expect(added.exitCode == 0, "\(added.err)")
            try #require(Date() < minute, "the machine was too slow to add the alarm before it was due: the test proves nothing")
            #expect(!FileManager.default.fileExists(atPath: played.path), "the player ran before the alarm: the test proves nothing")

            // The flood is kept up (closed connections reopened) until the alarm has played its sound.
            // On a thread of its own: a blocking loop on the cooperative pool stalls every other test of the process.
            let keeper = Task { await onOwnThread { flood.keepUp(until: Date().addingTimeInterval(minute.timeIntervalSinceNow + 90)) { FileManager.default.fileExists(atPath: played.path) } } }
            #expect(await log.wait(for: "Alarm \(hhmm): ringing", timeout: minute.timeIntervalSinceNow + 60) != nil,
                    "\(log.all.suffix(30).joined(separator: "\n"))")
            let heard = await keeper.value
            #expect(heard, "the alarm rang without its sound: \(log.all.suffix(30).joined(separator: "\n"))")
            #expect(log.count("Too many open files") == 0, "\(log.all.filter { $0.contains("Too many open files") }.prefix(3))")
            flood.closeAll()
            #expect(try await cli.run(["alarm", "stop"], tz: tz).exitCode == 0)
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0))
    }
}

/// Half-open connections to a loopback port: each connects and never sends a byte. Counts those the server
/// closes.
final class Flood: @unchecked Sendable {
    private let lock = NSLock()
    private var fds: [Int32]
    private(set) var closedTotal = 0
    let port: Int

    init(port: Int, count: Int) {
        self.port = port
        fds = Array(repeating: -1, count: count)
        refill()
    }

    deinit { closeAll() }

    /// A non-blocking connect: a server that has stopped accepting leaves it pending, never blocks the flood.
    private func open() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
        guard connected == 0 || errno == EINPROGRESS else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Opens a connection in every free place.
    func refill() {
        lock.lock(); defer { lock.unlock() }
        for i in fds.indices where fds[i] < 0 { fds[i] = open() }
    }

    /// Closes (and frees the place of) every connection the server has closed; answers how many.
    func reap() -> Int {
        lock.lock(); defer { lock.unlock() }
        var polls = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        guard poll(&polls, nfds_t(polls.count), 0) > 0 else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 512)
        var reaped = 0
        for (i, p) in polls.enumerated() where p.fd >= 0 && p.revents != 0 {
            let n = buffer.withUnsafeMutableBytes { recv(p.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 || (n < 0 && errno != EAGAIN) || p.revents & Int16(POLLHUP | POLLERR) != 0 {
                close(p.fd)
                fds[i] = -1
                reaped += 1
            }
        }
        closedTotal += reaped
        return reaped
    }

    /// Waits until the server has closed at least `wanted` of the first connections (no reopening meanwhile).
    func waitForClosed(atLeast wanted: Int, timeout: Double) -> Int {
        let end = Date().addingTimeInterval(timeout)
        while closedTotal < wanted, Date() < end {
            _ = reap()
            usleep(20_000)
        }
        return closedTotal
    }

    /// Reopens what the server closes until `done()` or `deadline`; answers `done()`.
    func keepUp(until deadline: Date, done: () -> Bool) -> Bool {
        while Date() < deadline {
            if done() { return true }
            _ = reap()
            refill()
            usleep(100_000)
        }
        return done()
    }

    func closeAll() {
        lock.lock(); defer { lock.unlock() }
        for i in fds.indices where fds[i] >= 0 { close(fds[i]); fds[i] = -1 }
    }
}
