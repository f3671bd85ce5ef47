import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the running agent found it can use to wake the machine, for the command line.
///
/// The CLI is not the agent: the agent may hold `CAP_WAKE_ALARM` (`AmbientCapabilities=` in its unit) while
/// a shell does not, or the other way round. So the agent records its own finding in `wake-status.json` in
/// the data directory and holds an exclusive `flock` on that file for as long as it runs. The CLI trusts
/// the record only while the file is locked (an agent is running: a file left by a dead agent is unlocked),
/// and otherwise checks for itself — what an agent started the same way as the CLI would find.
public struct WakeStatusFile: Sendable {
    public static let name = AgentRecord.wakeName
    public let file: AgentStatusFile
    public var url: URL { file.url }

    public init(dataDirectory: URL) {
        file = AgentStatusFile(dataDirectory: dataDirectory, name: Self.name)
    }

    /// The agent's side: the file, locked for this process's lifetime (until the recorder goes away).
    /// Throws when it cannot be opened or another agent holds it.
    public func hold() throws -> Recorder { Recorder(file: try file.hold()) }

    /// `hold()`, or nil with the reason logged (the command line then checks for itself).
    public func hold(logger: Logger) -> Recorder? {
        do {
            return try hold()
        } catch {
            logger.notice("cannot record how the machine is woken for the command line; it will check for itself",
                          metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Writes the agent's finding into the file it holds locked.
    public final class Recorder: Sendable {
        private let file: AgentStatusFile.Holder

        init(file: AgentStatusFile.Holder) { self.file = file }

        public func record(_ capability: Result<WakeMethod, WakeUnavailable>, now: Date = Date()) {
            file.write(Array(WakeStatusFile.encode(capability, pid: getpid(), now: now).utf8))
        }
    }

    static func encode(_ capability: Result<WakeMethod, WakeUnavailable>, pid: Int32, now: Date) -> String {
        var fields: [(String, JSON)] = [("pid", .int(Int(pid))), ("checkedAt", .string(now.rfc3339(in: TimeZone(identifier: "UTC")!)))]
        switch capability {
        case .success(.alarmTimer): fields += [("method", .string("alarmTimer"))]
        case .success(.rtc(let path)): fields += [("method", .string("rtc")), ("rtcPath", .string(path))]
        case .success(.helper(let socket)): fields += [("method", .string("helper")), ("helperSocket", .string(socket))]
        case .failure(let u): fields += [("method", .null), ("reason", .string(u.reason)), ("fix", .string(u.fix))]
        }
        return JSON.object(fields).text + "\n"
    }

    /// The command line's side: the running agent's finding, or nil when no agent holds the file (none
    /// running, or the file is missing or unreadable).
    public func readFromRunningAgent() -> Result<WakeMethod, WakeUnavailable>? {
        file.readFromRunningAgent().flatMap(Self.decode)
    }

    static func decode(_ data: Data) -> Result<WakeMethod, WakeUnavailable>? { AgentRecord.wake(Array(data)) }
}

/// The status file could not be taken.
public struct WakeStatusError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// A file in the data directory where the running agent records something for the command line, holding an
/// exclusive `flock` on it for as long as it runs: the CLI trusts it only while it is locked (a file left by
/// a dead agent is unlocked). `wake-status.json`, `household-status.json`.
public struct AgentStatusFile: Sendable {
    public let url: URL

    public init(dataDirectory: URL, name: String) {
        url = dataDirectory.appendingPathComponent(name)
    }

    /// Opens and locks the file; throws when it cannot, or another agent holds it.
    public func hold() throws -> Holder {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw WakeStatusError(description: "cannot open \(url.path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another agent holds it" : String(cString: strerror(errno))
            close(fd)
            throw WakeStatusError(description: "cannot lock \(url.path): \(reason)")
        }
        return Holder(fd: fd)
    }

    /// The locked file, until this goes away.
    public final class Holder: Sendable {
        private let fd: Mutex<Int32>

        init(fd: Int32) { self.fd = Mutex(fd) }
        deinit { fd.withLock { if $0 >= 0 { close($0) } } }

        /// Replaces the content.
        public func write(_ bytes: [UInt8]) {
            fd.withLock { fd in
                guard fd >= 0, ftruncate(fd, 0) == 0 else { return }
                _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            }
        }

        /// Replaces the content in place, padded with blanks to `size` bytes (JSON allows them after the value): a file
        /// written once at this size is rewritten into the blocks it has, so the record can still change on a full
        /// disk (#51). Content longer than `size` is written whole.
        public func write(_ bytes: [UInt8], reserving size: Int) {
            let padded = bytes.count < size ? bytes + [UInt8](repeating: UInt8(ascii: " "), count: size - bytes.count) : bytes
            fd.withLock { fd in
                guard fd >= 0 else { return }
                let written = padded.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                if written == padded.count { _ = ftruncate(fd, off_t(padded.count)) }
            }
        }
    }

    /// The command line's side: the content while an agent holds the file, nil otherwise (none running, or
    /// the file is missing or unreadable).
    public func readFromRunningAgent() -> Data? {
        AgentRecord.readFromRunningAgent(path: url.path).map { Data($0) }
    }
}

/// Whether the machine can be woken for the alarms, as the command line tells it.
public enum WakeCheck {
    /// The running agent's finding (see `WakeStatusFile`), else this process's own check; nil when waking works.
    /// The agent found the wake helper: it may have stopped since (an admin's `systemctl stop`), so it is asked
    /// again, and when it does not answer this process's own check decides (the RTC may still do).
    public static func problem(dataDirectory: URL, own: @autoclosure () -> any WakeAlarm = LinuxWakeAlarm(),
                               helper: (String) -> any WakeAlarm = { LinuxWakeAlarm(rtcPath: nil, makeTimer: nil, helperSocket: $0) })
        -> WakeUnavailable? {
        var capability = WakeStatusFile(dataDirectory: dataDirectory).readFromRunningAgent() ?? own().capability()
        if case .success(.helper(let socket)) = capability, case .failure = helper(socket).capability() {
            capability = own().capability()
        }
        if case .failure(let problem) = capability { return problem }
        return nil
    }
}
