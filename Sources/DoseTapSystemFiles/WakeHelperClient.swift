internal import CLinuxTime
import DoseTapCore
#if canImport(Glibc)
import Glibc
#endif

/// The client's side of the wake helper (`dosetap wake-helper`, DoseTapLinux's `WakeHelper`, #28): one request
/// line, one answer line, on the helper's Unix socket. The agent arms its wake-ups through it
/// (`LinuxWakeAlarm`); the command line asks `CHECK` when the running agent says it wakes the machine through
/// the helper (the helper may have been stopped since) — the full program and the one-shot front alike (#29).
public enum WakeHelperClient {
    /// Where the system's helper listens (`packaging/systemd/dosetap-wake.socket`).
    public static let socketPath = "/run/dosetap-wake.sock"
    /// How long the helper may take to answer (socket activation starts it first). logind waits 5 s for a
    /// delay inhibitor by default.
    public static let timeout: Duration = .seconds(3)

    /// The helper's socket: `$DOSETAP_WAKE_SOCKET` when set and not empty (tests, a helper elsewhere), else
    /// `socketPath`.
    public static var defaultSocket: String {
        if let value = getenv("DOSETAP_WAKE_SOCKET"), value.pointee != 0 { return String(cString: value) }
        return socketPath
    }

    public enum ExchangeFailure: Error, Sendable, Equatable {
        /// The helper said no (ERR …).
        case refused(String)
        /// The connection broke, or the helper did not answer.
        case lost(String)
    }

    /// Asks the helper once on a new connection (closed afterwards): nil when it answered OK.
    public static func ask(_ socket: String, _ request: String) -> ExchangeFailure? {
        let fd = dosetap_unix_connect(socket)
        guard fd >= 0 else { return .lost(connectError(socket, errno)) }
        defer { _ = close(fd) }
        return exchange(fd, request, timeout: timeout)
    }

    /// One request on a connection: nil when the helper answered OK, else the reason (its ERR text, or what
    /// went wrong on the socket). Waits at most `timeout` for the answer.
    public static func exchange(_ fd: Int32, _ request: String, timeout: Duration) -> ExchangeFailure? {
        let bytes = Array((request + "\n").utf8)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { return .lost(sent < 0 ? text(errno) : "a short write") }
        var reply: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while !reply.contains(0x0A) {
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = max(0, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            let ready = dosetap_wait_readable(fd, milliseconds)
            guard ready > 0 else { return .lost(ready == 0 ? "no answer within \(timeout.components.seconds) s" : text(errno)) }
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { return .lost(count == 0 ? "it closed the connection" : text(errno)) }
            reply += chunk[..<count]
            guard reply.count <= 512 else { return .lost("an answer too long") }
        }
        let line = String(decoding: reply.prefix(while: { $0 != 0x0A }), as: UTF8.self)
        if line == "OK" { return nil }
        if line.hasPrefix("ERR ") { return .refused(DisplayText.escaped(String(line.dropFirst(4)), maxLength: 300)) }
        return .lost("an answer that is not OK or ERR")
    }

    /// Why a connection to the helper failed, as a reason clause.
    public static func connectError(_ socket: String, _ code: Int32) -> String {
        switch code {
        case ENOENT, ECONNREFUSED: "no wake helper listens at \(socket) (\(text(code)))"
        default: "the wake helper at \(socket) cannot be reached (\(text(code)))"
        }
    }

    /// Why the helper cannot be used, as a reason clause.
    public static func reason(_ failure: ExchangeFailure, socket: String) -> String {
        switch failure {
        case .refused(let why): "the wake helper refused (\(why))"
        case .lost(let why) where why.hasPrefix("no wake helper") || why.hasPrefix("the wake helper"): why
        case .lost(let why): "the wake helper at \(socket) did not answer (\(why))"
        }
    }

    static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}
