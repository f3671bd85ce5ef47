internal import CLinuxTime
import DoseTapCore
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The wake helper (#28): the one privileged piece of an install, so that a user's agent — which runs in a
/// user unit without any capability — can have the machine woken from suspend for an alarm or a dose reminder.
///
/// `dosetap wake-helper` runs as a system service (`packaging/systemd/dosetap-wake.service`, socket-activated
/// by `dosetap-wake.socket`) holding `CAP_WAKE_ALARM` and nothing else, as a dynamic user with no files. It
/// listens on `/run/dosetap-wake.sock` and speaks one line at a time:
///
///     CHECK            → OK                       (the caller may use the helper, and a wake timer can be made)
///     ARM <seconds>    → OK                       (one CLOCK_REALTIME_ALARM timer for that epoch second)
///     DISARM           → OK
///     anything else    → ERR <one line>
///
/// Each connection owns at most one wake-up; closing the connection clears it (an agent that dies leaves no
/// wake-up behind; its restart arms again). Who may connect: root, and every user logind tracks — one with a
/// session or lingering (`/run/systemd/users/UID` exists), as the kernel reports the peer (`SO_PEERCRED`).
/// Limits: 4 connections per user, 64 in all; a request line is at most 64 bytes and must arrive whole within
/// 10 s of the connection or of the last answer (unless the connection holds an armed wake-up); a time must lie
/// in the future and at most 35 days ahead. docs/alarms.md, "Waking from suspend", has the threat model.
public enum WakeHelper {
    public static let socketPath = WakeHelperClient.socketPath
    public static let usersDirectory = "/run/systemd/users"
    /// Longest request line, newline excluded ("ARM " and 12 digits fit with room to spare).
    public static let maxLine = 64
    /// The furthest a wake-up may be armed ahead (an alarm a week away is armed at the next sleep anyway).
    public static let maxAhead: TimeInterval = 35 * 86_400

    public enum Request: Sendable, Equatable {
        case check
        case arm(epochSeconds: Int64)
        case disarm
    }

    /// Parses one request line (its newline removed). `now` bounds an `ARM` time.
    public static func parse(_ line: some Collection<UInt8>, now: Date) -> Result<Request, RequestError> {
        let bytes = Array(line)
        if bytes == Array("CHECK".utf8) { return .success(.check) }
        if bytes == Array("DISARM".utf8) { return .success(.disarm) }
        let prefix = Array("ARM ".utf8)
        guard bytes.starts(with: prefix) else { return .failure(.unknown) }
        let digits = bytes.dropFirst(prefix.count)
        guard (1...12).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
              let seconds = Int64(String(decoding: digits, as: UTF8.self)) else { return .failure(.badTime) }
        let time = TimeInterval(seconds)
        guard time > now.timeIntervalSince1970 else { return .failure(.passed) }
        guard time <= now.timeIntervalSince1970 + maxAhead else { return .failure(.tooFar) }
        return .success(.arm(epochSeconds: seconds))
    }

    public enum RequestError: Error, Sendable, Equatable, CustomStringConvertible {
        case unknown, badTime, passed, tooFar, tooLong

        public var description: String {
            switch self {
            case .unknown: "not a request (CHECK, ARM <epoch seconds>, DISARM)"
            case .badTime: "ARM needs the time as whole seconds since 1970 (1 to 12 digits)"
            case .passed: "the wake-up time has passed"
            case .tooFar: "the wake-up time is more than 35 days ahead"
            case .tooLong: "the request is longer than \(WakeHelper.maxLine) bytes"
            }
        }

        /// Whether a refusal the helper sent (`ERR <reason>`) is about the time asked for — an arming error for
        /// the client — rather than about who asks or a limit (then the helper is no way to wake for it).
        public static func isAboutTime(_ reason: String) -> Bool {
            [RequestError.badTime, .passed, .tooFar].contains { $0.description == reason }
        }
    }

    /// Whether the user `uid` may use the helper: nil when it may, else why not (one line).
    public static func refusal(uid: UInt32, usersDirectory: String) -> String? {
        if uid == 0 { return nil }
        var info = stat()
        let path = usersDirectory + "/" + String(uid)
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { return nil }
        return "user \(uid) has no session or linger on this machine (logind does not list it in \(usersDirectory))"
    }

    /// A listening socket of its own at `path` (mode 0666, an old socket file replaced): the descriptor, or
    /// -1 with errno set.
    public static func listen(at path: String) -> Int32 { dosetap_unix_listen(path, 64) }

    // The client's side is WakeHelperClient (DoseTapSystemFiles): the command line's one-shot front asks CHECK too.

    static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// The helper's server: one thread, `poll(2)` over the listening socket and its connections.
public final class WakeHelperServer: @unchecked Sendable {
    public struct Options: Sendable {
        /// The listening socket (systemd's, by socket activation, or one bound by `dosetap wake-helper --socket`).
        public var listener: Int32
        public var usersDirectory = WakeHelper.usersDirectory
        /// Makes the wake timer: the descriptor, or -errno (the machine's: a CLOCK_REALTIME_ALARM timerfd).
        public var makeTimer: LinuxWakeAlarm.TimerFactory = LinuxWakeAlarm.alarmTimerFD
        /// Arms it for an absolute epoch second: 0, or an errno.
        public var armTimer: @Sendable (Int32, Int64) -> Int32 = { fd, seconds in
            dosetap_timerfd_arm_absolute(fd, seconds) == 0 ? 0 : errno
        }
        public var lineDeadline: Duration = .seconds(10)
        /// Exit after this long without a connection (socket activation starts it again); nil: never.
        public var idleExit: Duration? = .seconds(60)
        public var maxPerUser = 4
        public var maxConnections = 64
        public var now: @Sendable () -> Date = { Date() }
        /// A monotonic clock for the deadlines (tests move a fake one).
        public var monotonic: @Sendable () -> Duration = { WakeHelperServer.uptime() }
        public var log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        public init(listener: Int32) { self.listener = listener }
    }

    private struct Connection {
        let fd: Int32
        let uid: UInt32
        /// Why this user may not use the helper: the answer to its first line, then the connection is closed.
        var refusal: String?
        var buffer: [UInt8] = []
        var timer: Int32 = -1
        var armedAt: Int64?
        /// When the connection must have sent a whole line (nil: it may stay quiet, its wake-up armed).
        var deadline: Duration?
    }

    private let options: Options
    private let stopSignal: Int32
    private var connections: [Connection] = []
    private let armedCount = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let openCount = Atomic<Int>(0)

    public init(_ options: Options) {
        self.options = options
        stopSignal = dosetap_eventfd_create()
    }

    deinit {
        _ = Glibc.close(stopSignal)
    }

    /// How many connections hold an armed wake-up (for tests and the log).
    public var armed: Int { armedCount.load(ordering: .relaxed) }
    /// How many connections are open.
    public var open: Int { openCount.load(ordering: .relaxed) }

    /// Ends `run()` from another thread.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        dosetap_eventfd_signal(stopSignal)
    }

    /// Makes `run()` look at its clock again now (tests move a fake one).
    public func wakeUp() { dosetap_eventfd_signal(stopSignal) }

    static func uptime() -> Duration {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
    }

    /// Serves until `stop()` or, with no connection, `idleExit`. Every connection is closed on the way out
    /// (which clears its wake-up).
    public func run() {
        var idleSince = options.monotonic()
        defer {
            for connection in connections { close(connection, why: nil) }
            connections = []
        }
        while true {
            let now = options.monotonic()
            sweep(now: now)
            openCount.store(connections.count, ordering: .relaxed)
            if connections.isEmpty, let idleExit = options.idleExit, now - idleSince >= idleExit {
                options.log("no connection for \(idleExit.components.seconds) s: exiting (the socket starts the helper again)")
                return
            }
            var entries = [pollfd(fd: options.listener, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: stopSignal, events: Int16(POLLIN), revents: 0)]
            entries += connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            var wait: Duration? = connections.compactMap(\.deadline).min().map { $0 - now }
            if connections.isEmpty, let idleExit = options.idleExit { wait = idleSince + idleExit - now }
            let timeout: Int32 = wait.map { max(0, Int32(clamping: $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000 + 1)) } ?? -1
            let ready = poll(&entries, nfds_t(entries.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                options.log("poll failed: \(WakeHelper.text(errno)); exiting")
                return
            }
            if entries[1].revents != 0 {
                dosetap_eventfd_drain(stopSignal)
                if stopping.load(ordering: .sequentiallyConsistent) { return }
            }
            // Connections first (their indexes are stable until this pass ends), then new ones.
            var closed: Set<Int32> = []
            for entry in entries.dropFirst(2) where entry.revents != 0 {
                if !serve(entry.fd) { closed.insert(entry.fd) }
            }
            connections.removeAll { closed.contains($0.fd) }
            if entries[0].revents != 0 { accept() }
            openCount.store(connections.count, ordering: .relaxed)
            if !connections.isEmpty { idleSince = options.monotonic() }
            if connections.isEmpty, !closed.isEmpty { idleSince = options.monotonic() }
        }
    }

    /// Closes connections whose line is overdue.
    private func sweep(now: Duration) {
        connections.removeAll { connection in
            guard let deadline = connection.deadline, deadline <= now else { return false }
            close(connection, why: "no whole request within \(options.lineDeadline.components.seconds) s")
            return true
        }
    }

    private func accept() {
        while true {
            let fd = dosetap_unix_accept(options.listener)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            var uid: UInt32 = 0
            guard dosetap_peer_uid(fd, &uid) == 0 else {
                options.log("refused a connection: cannot tell who it is (\(WakeHelper.text(errno)))")
                _ = Glibc.close(fd)
                continue
            }
            var limit: String?
            if connections.filter({ $0.uid == uid }).count >= options.maxPerUser {
                limit = "user \(uid) already has \(options.maxPerUser) connections"
            } else if connections.count >= options.maxConnections {
                limit = "the helper is serving \(options.maxConnections) connections; try again later"
            }
            if let limit {
                options.log("refused user \(uid): \(limit)")
                reply(fd, "ERR " + limit)
                discardInput(fd)
                _ = Glibc.close(fd)
                continue
            }
            // A user who may not use the helper is told so in answer to its first line (closing a socket with
            // the request unread would reset it, and the client would never see why).
            let refusal = WakeHelper.refusal(uid: uid, usersDirectory: options.usersDirectory)
            if let refusal { options.log("refused user \(uid): \(refusal)") }
            connections.append(Connection(fd: fd, uid: uid, refusal: refusal, deadline: options.monotonic() + options.lineDeadline))
        }
    }

    /// Reads what a connection sent and answers its whole lines; false when it is closed.
    private func serve(_ fd: Int32) -> Bool {
        guard let index = connections.firstIndex(where: { $0.fd == fd }) else { return false }
        // Deadlines count from when the bytes came in (not from after the answer went out).
        let now = options.monotonic()
        var chunk = [UInt8](repeating: 0, count: 256)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0, errno == EINTR || errno == EAGAIN { return true }
        guard count > 0 else {
            close(connections[index], why: connections[index].timer >= 0 ? "the client went away" : nil)
            return false
        }
        connections[index].buffer += chunk[..<count]
        var answered = false
        while let newline = connections[index].buffer.firstIndex(of: 0x0A) {
            let line = connections[index].buffer[..<newline]
            connections[index].buffer.removeSubrange(...newline)
            guard handle(Array(line), at: index) else {
                close(connections[index], why: nil)
                return false
            }
            answered = true
        }
        if connections[index].buffer.count > WakeHelper.maxLine {
            reply(fd, "ERR \(WakeHelper.RequestError.tooLong)")
            close(connections[index], why: "\(WakeHelper.RequestError.tooLong)")
            return false
        }
        if answered {
            // Quiet is allowed only with an armed wake-up and nothing half sent.
            connections[index].deadline = connections[index].timer >= 0 && connections[index].buffer.isEmpty
                ? nil : now + options.lineDeadline
        } else if connections[index].deadline == nil {
            // A line begun by a quiet holder: it has the usual time to finish it. Bytes that trickle in never
            // move a deadline (one byte every 9 s must not hold a connection for ever).
            connections[index].deadline = now + options.lineDeadline
        }
        return true
    }

    /// Answers one request; false when the answer could not be sent.
    private func handle(_ line: [UInt8], at index: Int) -> Bool {
        let fd = connections[index].fd
        let uid = connections[index].uid
        if let refusal = connections[index].refusal {
            reply(fd, "ERR " + refusal)
            return false
        }
        switch WakeHelper.parse(line, now: options.now()) {
        case .failure(let error):
            options.log("refused a request from user \(uid): \(error)")
            return reply(fd, "ERR \(error)")
        case .success(.check):
            let timer = options.makeTimer()
            guard timer >= 0 else { return reply(fd, "ERR the helper cannot make a wake timer: \(WakeHelper.text(-timer))") }
            _ = Glibc.close(timer)
            return reply(fd, "OK")
        case .success(.disarm):
            if connections[index].timer >= 0 {
                _ = Glibc.close(connections[index].timer)
                connections[index].timer = -1
                connections[index].armedAt = nil
                armedCount.subtract(1, ordering: .relaxed)
                options.log("user \(uid): wake-up cleared")
            }
            return reply(fd, "OK")
        case .success(.arm(let seconds)):
            if connections[index].timer < 0 {
                let timer = options.makeTimer()
                guard timer >= 0 else { return reply(fd, "ERR the helper cannot make a wake timer: \(WakeHelper.text(-timer))") }
                connections[index].timer = timer
                armedCount.add(1, ordering: .relaxed)
            }
            let code = options.armTimer(connections[index].timer, seconds)
            guard code == 0 else { return reply(fd, "ERR the helper cannot arm the wake timer: \(WakeHelper.text(code))") }
            connections[index].armedAt = seconds
            let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            options.log("user \(uid): wake-up armed for \(when)")
            return reply(fd, "OK")
        }
    }

    /// Reads and drops what has arrived, so that closing does not reset the connection before the answer is read.
    private func discardInput(_ fd: Int32) {
        var chunk = [UInt8](repeating: 0, count: 256)
        while chunk.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
    }

    @discardableResult
    private func reply(_ fd: Int32, _ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        return sent == bytes.count
    }

    private func close(_ connection: Connection, why: String?) {
        if connection.timer >= 0 {
            _ = Glibc.close(connection.timer)
            armedCount.subtract(1, ordering: .relaxed)
            options.log("user \(connection.uid): wake-up cleared (\(why ?? "connection closed"))")
        } else if let why {
            options.log("user \(connection.uid): connection closed (\(why))")
        }
        discardInput(connection.fd)
        _ = Glibc.close(connection.fd)
    }
}
