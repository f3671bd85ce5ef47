import DoseTapCore
@testable import DoseTapLinux
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The wake helper's protocol and server (#28), over a real AF_UNIX socket, with fake wake timers (what the
/// server would arm is recorded) and a fake monotonic clock for its deadlines.
@Suite("The wake helper (dosetap wake-helper)", .serialized)
struct WakeHelperTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Requests

    @Test("CHECK, DISARM and ARM in the future parse; the time bounds on both sides; everything else is refused")
    func parsing() {
        func parse(_ text: String) -> Result<WakeHelper.Request, WakeHelper.RequestError> {
            WakeHelper.parse(Array(text.utf8), now: Self.now)
        }
        #expect(parse("CHECK") == .success(.check))
        #expect(parse("DISARM") == .success(.disarm))
        #expect(parse("ARM 1800000001") == .success(.arm(epochSeconds: 1_800_000_001)))
        #expect(parse("ARM 1800000000") == .failure(.passed), "now itself has passed")
        #expect(parse("ARM 1") == .failure(.passed))
        let furthest = 1_800_000_000 + 35 * 86_400
        #expect(parse("ARM \(furthest)") == .success(.arm(epochSeconds: Int64(furthest))))
        #expect(parse("ARM \(furthest + 1)") == .failure(.tooFar))
        #expect(parse("ARM 9999999999999") == .failure(.badTime), "13 digits")
        for bad in ["ARM ", "ARM -5", "ARM +1800000001", "ARM 1.8e9", "ARM 18000000 01", "ARM 1800000001 ",
                    "ARM \u{0663}800000001", "ARM 1800000001\u{0}", "ARM nan"] {
            #expect(parse(bad) == .failure(.badTime), "\(bad.debugDescription)")
        }
        for bad in ["", "ARM", "check", "CHECK ", " CHECK", "CHECK\r", "DISARM\u{1b}", "ΑRM 1800000001", "ARM\t1800000001", "HELLO"] {
            #expect(parse(bad) == .failure(.unknown), "\(bad.debugDescription)")
        }
    }

    @Test("root and the users logind tracks may use it; a user without a file, or with a directory or a link in its place, may not")
    func who() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(WakeHelper.refusal(uid: 0, usersDirectory: dir.path) == nil)
        #expect(WakeHelper.refusal(uid: 1000, usersDirectory: dir.path)
            == "user 1000 has no session or linger on this machine (logind does not list it in \(dir.path))")
        try Data("NAME=ann\n".utf8).write(to: dir.appendingPathComponent("1000"))
        #expect(WakeHelper.refusal(uid: 1000, usersDirectory: dir.path) == nil)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("1001"), withIntermediateDirectories: false)
        #expect(WakeHelper.refusal(uid: 1001, usersDirectory: dir.path) != nil)
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("1002").path,
                                                   withDestinationPath: dir.appendingPathComponent("1000").path)
        #expect(WakeHelper.refusal(uid: 1002, usersDirectory: dir.path) != nil)
    }

    // MARK: The server

    @Test("a client checks, arms, re-arms in place and disarms; the armed time is the one asked for")
    func armAndDisarm() throws {
        let helper = try Helper()
        defer { helper.stop() }
        let client = try helper.connect()
        #expect(client.ask("CHECK") == "OK")
        #expect(client.ask("ARM 1800003600") == "OK")
        #expect(helper.server.armed == 1)
        #expect(client.ask("ARM 1800007200") == "OK")
        #expect(helper.server.armed == 1, "re-armed in place")
        #expect(helper.timers.armed.map(\.seconds) == [1_800_003_600, 1_800_007_200])
        #expect(Set(helper.timers.armed.map(\.fd)).count == 1)
        #expect(client.ask("DISARM") == "OK")
        #expect(helper.server.armed == 0)
        #expect(client.ask("ARM 5") == "ERR the wake-up time has passed")
        #expect(client.ask("ARM 1800000001x") == "ERR ARM needs the time as whole seconds since 1970 (1 to 12 digits)")
        #expect(helper.server.armed == 0, "a refused request arms nothing")
        #expect(helper.log.contains("user 0: wake-up armed for 2027-01-15T09:00:00Z"), "\(helper.log)")
    }

    @Test("a client that goes away takes its wake-up with it; another client's stays")
    func disconnectClears() throws {
        let helper = try Helper()
        defer { helper.stop() }
        let first = try helper.connect()
        let second = try helper.connect()
        #expect(first.ask("ARM 1800003600") == "OK")
        #expect(second.ask("ARM 1800007200") == "OK")
        #expect(helper.server.armed == 2)
        first.close()
        #expect(helper.until { helper.server.armed == 1 }, "\(helper.log)")
        #expect(second.ask("CHECK") == "OK")
    }

    @Test("a half-open connection is closed after its 10 s; one holding a wake-up may stay quiet; a half-sent line may not")
    func deadlines() throws {
        let helper = try Helper()
        defer { helper.stop() }
        let silent = try helper.connect()
        let holder = try helper.connect()
        #expect(holder.ask("ARM 1800003600") == "OK")
        let partial = try helper.connect()
        #expect(partial.ask("CHECK") == "OK")
        partial.send("ARM 18")
        // 9.9 s: nobody is closed yet.
        helper.advance(.milliseconds(9_900))
        #expect(try helper.connect().ask("CHECK") == "OK")
        #expect(silent.isOpen && partial.isOpen)
        helper.advance(.milliseconds(200))
        // Any event runs the sweep: another client.
        #expect(try helper.connect().ask("CHECK") == "OK")
        #expect(silent.waitClosed(), "\(helper.log)")
        #expect(partial.waitClosed(), "\(helper.log)")
        #expect(holder.isOpen)
        #expect(holder.ask("CHECK") == "OK")
        #expect(helper.server.armed == 1)
        #expect(helper.log.contains("user 0: connection closed (no whole request within 10 s)"), "\(helper.log)")
    }

    @Test("a line longer than 64 bytes is refused and the connection closed; its wake-up with it")
    func tooLong() throws {
        let helper = try Helper()
        defer { helper.stop() }
        let client = try helper.connect()
        #expect(client.ask("ARM 1800003600") == "OK")
        client.send(String(repeating: "A", count: 65))
        #expect(client.readLine() == "ERR the request is longer than 64 bytes")
        #expect(client.waitClosed())
        #expect(helper.until { helper.server.armed == 0 })
    }

    @Test("four connections per user: the fifth is refused with the reason, and the first four still work")
    func perUser() throws {
        let helper = try Helper(maxPerUser: 4)
        defer { helper.stop() }
        let clients = try (0..<4).map { _ in try helper.connect() }
        for client in clients { #expect(client.ask("CHECK") == "OK") }
        let fifth = try helper.connect()
        #expect(fifth.readLine() == "ERR user 0 already has 4 connections")
        #expect(fifth.waitClosed())
        #expect(clients[3].ask("CHECK") == "OK")
    }

    @Test("a user logind does not list is refused at once, through the real kernel's SO_PEERCRED; listed, it may arm",
          .enabled(if: getuid() == 0, "needs root to connect as another user (setpriv)"))
    func otherUser() throws {
        let helper = try Helper()
        defer { helper.stop() }
        let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"ARM 1800003600\\n")
        print(s.recv(200).decode().strip())
        """
        func asNobody() throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, helper.socket]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            process.waitUntilExit()
            return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        let refused = try asNobody()
        #expect(refused == "ERR user 65534 has no session or linger on this machine (logind does not list it in \(helper.users.path))\n")
        #expect(helper.server.armed == 0)
        #expect(helper.log.contains { $0.hasPrefix("refused user 65534: user 65534 has no session or linger") }, "\(helper.log)")
        try Data().write(to: helper.users.appendingPathComponent("65534"))
        let allowed = try asNobody()
        #expect(allowed == "OK\n")
    }

    @Test("idle: with no connection for its idle time the server exits by itself; a connection keeps it")
    func idleExit() throws {
        let helper = try Helper(idleExit: .seconds(60))
        defer { helper.stop() }
        let client = try helper.connect()
        #expect(client.ask("ARM 1800003600") == "OK")
        // Two minutes on: a connection holding a wake-up keeps the server (and is not a half-open one).
        helper.advance(.seconds(120))
        helper.server.wakeUp()
        #expect(client.ask("CHECK") == "OK", "a connection keeps it")
        client.close()
        #expect(helper.until { helper.server.armed == 0 && helper.server.open == 0 })
        helper.advance(.seconds(59))
        helper.server.wakeUp()
        #expect(!helper.finished(within: .milliseconds(300)), "59 s: still serving")
        #expect(try helper.connect().ask("CHECK") == "OK")
        #expect(helper.until { helper.server.open == 0 })
        helper.advance(.seconds(61))
        helper.server.wakeUp()
        #expect(helper.finished(within: .seconds(10)), "\(helper.log)")
        #expect(helper.log.last == "no connection for 60 s: exiting (the socket starts the helper again)")
    }

    // MARK: The agent's side

    @Test("LinuxWakeAlarm without the capability uses the helper: capability, arm, disarm; a refused time is an arming error")
    func agentSide() throws {
        let helper = try Helper(now: nil)
        defer { helper.stop() }
        let wake = LinuxWakeAlarm(rtcPath: nil, makeTimer: { -EPERM }, helperSocket: helper.socket)
        #expect(wake.capability() == .success(.helper(socket: helper.socket)))
        let when = Date().addingTimeInterval(3600)
        #expect(try wake.arm(at: when) == .helper(socket: helper.socket))
        #expect(helper.server.armed == 1)
        #expect(helper.timers.armed.last?.seconds == Int64(when.timeIntervalSince1970.rounded(.down)))
        wake.disarm()
        #expect(helper.until { helper.server.armed == 0 })
        #expect(throws: WakeArmError.self) { try wake.arm(at: Date().addingTimeInterval(-60)) }
    }

    @Test("the helper refusing this user (here: a limit) at a sleep is no way to wake — the line, not an arming error")
    func refusedAtArm() throws {
        let helper = try Helper(maxPerUser: 0, now: nil)
        defer { helper.stop() }
        let wake = LinuxWakeAlarm(rtcPath: nil, makeTimer: { -EPERM }, helperSocket: helper.socket)
        #expect(throws: WakeUnavailable.self) { try wake.arm(at: Date().addingTimeInterval(3600)) }
        #expect(helper.server.armed == 0)
    }

    @Test("the helper restarted between two sleeps: the agent connects again and arms; none at all: the reason and the fix")
    func helperGone() throws {
        let socket: String
        do {
            let helper = try Helper(now: nil)
            socket = helper.socket
            let wake = LinuxWakeAlarm(rtcPath: nil, makeTimer: { -EPERM }, helperSocket: socket)
            #expect(try wake.arm(at: Date().addingTimeInterval(3600)) == .helper(socket: socket))
            helper.stop()
            let again = try Helper(socket: socket, now: nil)
            defer { again.stop() }
            #expect(try wake.arm(at: Date().addingTimeInterval(7200)) == .helper(socket: socket))
            #expect(again.server.armed == 1)
        }
        let wake = LinuxWakeAlarm(rtcPath: nil, makeTimer: { -EPERM }, helperSocket: socket)
        // A process another test forks at this moment holds a copy of the closed listener until it execs (the
        // descriptor is close-on-exec): a connection then is reset, not refused. That lasts milliseconds.
        var capability = wake.capability()
        for _ in 0..<500 {
            guard case .failure(let problem) = capability, problem.message.contains("(Connection reset by peer)") else { break }
            usleep(10_000)
            capability = wake.capability()
        }
        guard case .failure(let problem) = capability else {
            Issue.record("no helper: no way to wake")
            return
        }
        #expect(problem.message == "This machine may sleep through the alarm: this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer "
            + "(Operation not permitted), and no wake helper listens at \(socket) (Connection refused). Fix: start the wake helper that "
            + "the package installs: sudo systemctl enable --now dosetap-wake.socket (from source: sudo make install-wake; see docs/alarms.md)")
        #expect(throws: WakeUnavailable.self) { try wake.arm(at: Date().addingTimeInterval(3600)) }
    }
}

// MARK: - Test fixtures

private func temporaryDirectory() throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-wake-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    // Another user (the setpriv test) must reach the socket inside.
    chmod(dir.path, 0o755)
    return dir
}

/// What the server armed and closed, instead of real CLOCK_REALTIME_ALARM timers.
final class FakeWakeTimers: Sendable {
    struct Armed: Equatable { var fd: Int32, seconds: Int64 }
    private let state = Mutex<(armed: [Armed], made: Set<Int32>)>(([], []))

    var armed: [Armed] { state.withLock { $0.armed } }
    func make() -> Int32 {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        state.withLock { _ = $0.made.insert(fd) }
        return fd
    }

    func arm(_ fd: Int32, _ seconds: Int64) -> Int32 {
        state.withLock { $0.armed.append(Armed(fd: fd, seconds: seconds)) }
        return 0
    }
}

/// A server on its own thread in a temporary directory.
final class Helper: Sendable {
    let server: WakeHelperServer
    let timers = FakeWakeTimers()
    let socket: String
    let users: URL
    /// The fake monotonic clock and the server's log lines, shared with the server's closures.
    final class Shared: Sendable {
        let clock = Mutex<Duration>(.seconds(1000))
        let lines = Mutex<[String]>([])
    }
    private let shared = Shared()
    private let done = DispatchSemaphore(value: 0)
    private let ended = Mutex(false)

    var log: [String] { shared.lines.withLock { $0 } }

    /// - now: the wall clock the server bounds ARM times with (nil: the real one).
    init(idleExit: Duration? = nil, socket: String? = nil, maxPerUser: Int = 8, now: Date? = WakeHelperTests.now) throws {
        let dir = try temporaryDirectory()
        users = dir.appendingPathComponent("users")
        try FileManager.default.createDirectory(at: users, withIntermediateDirectories: true)
        self.socket = socket ?? dir.appendingPathComponent("wake.sock").path
        let listener = WakeHelper.listen(at: self.socket)
        guard listener >= 0 else { throw WakeArmError(code: errno, description: "cannot listen: \(errno)") }
        var options = WakeHelperServer.Options(listener: listener)
        options.usersDirectory = users.path
        let timers = self.timers
        options.makeTimer = { timers.make() }
        options.armTimer = { timers.arm($0, $1) }
        options.idleExit = idleExit
        options.maxPerUser = maxPerUser
        options.now = { now ?? Date() }
        let shared = self.shared
        options.monotonic = { shared.clock.withLock { $0 } }
        options.log = { line in shared.lines.withLock { $0.append(line) } }
        let server = WakeHelperServer(options)
        self.server = server
        let done = self.done
        Thread {
            server.run()
            close(listener)
            done.signal()
        }.start()
    }

    func advance(_ by: Duration) { shared.clock.withLock { $0 += by } }

    func connect() throws -> Client {
        let fd = dosetapTestConnect(socket)
        guard fd >= 0 else { throw WakeArmError(code: errno, description: "cannot connect to \(socket)") }
        return Client(fd: fd)
    }

    /// Waits (at most 10 s) for a condition the server's thread makes true.
    func until(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// Whether `run()` returned by itself within `within` (it signals once; a later `stop()` does not wait again).
    func finished(within: Duration) -> Bool {
        let milliseconds = Int(within.components.seconds) * 1000 + Int(within.components.attoseconds / 1_000_000_000_000_000)
        guard done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return false }
        ended.withLock { $0 = true }
        return true
    }

    func stop() {
        server.stop()
        if !ended.withLock({ $0 }) { _ = done.wait(timeout: .now() + 10) }
        ended.withLock { $0 = true }
    }
}

/// A client connection (blocking reads with a 10 s limit).
final class Client: @unchecked Sendable {
    let fd: Int32
    private var closedHere = false
    private var pending: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { if !closedHere { Glibc.close(fd) } }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func readLine() -> String? {
        while !pending.contains(0x0A) {
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
        let newline = pending.firstIndex(of: 0x0A)!
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        return line
    }

    func ask(_ request: String) -> String? {
        send(request + "\n")
        return readLine()
    }

    /// Whether the server closed it (end of file within 10 s).
    func waitClosed() -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    var isOpen: Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    func close() {
        closedHere = true
        Glibc.close(fd)
    }
}

/// connect(2) to an AF_UNIX path (blocking).
func dosetapTestConnect(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return -1 }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return -1 }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
    }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard result == 0 else {
        let saved = errno
        Glibc.close(fd)
        errno = saved
        return -1
    }
    return fd
}
