import DoseTapCore
import Foundation
import Subprocess
#if canImport(Glibc)
import Glibc
#endif

/// A log source that could not be read: one line naming it and the cause.
public struct LogSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The agent's log in the journal: what its unit wrote on standard error (swift-log lines, see
/// `AgentLogLine`) and systemd's own lines about the unit ("Started …", "Main process exited …").
/// Read with `journalctl -o json` through swift-subprocess (found on `PATH`, never through a shell).
public struct JournalLogSource: LogSource {
    public var unit: String
    /// true: the user's journal (`--user`, the shipped user unit); false: the system's (a system unit).
    public var user: Bool
    /// Arguments put before the others (tests: `--directory DIR`).
    public var extraArguments: [String]
    /// The most bytes read from journalctl.
    public static let outputLimit = 256 << 20

    public init(unit: String = "dosetap.service", user: Bool = true, extraArguments: [String] = []) {
        self.unit = unit
        self.user = user
        self.extraArguments = extraArguments
    }

    /// `journalctl [--user] -u UNIT -o json --since @EPOCH --no-pager -q`.
    public func arguments(since: Date) -> [String] {
        extraArguments + (user ? ["--user"] : []) + ["-u", unit, "-o", "json", "--since", "@\(Int64(since.timeIntervalSince1970.rounded(.down)))",
                                                     "--no-pager", "-q"]
    }

    public func records(since: Date) async throws -> [LogRecord] {
        let result: (terminationStatus: TerminationStatus, standardOutput: [UInt8], standardError: String)
        do {
            let r = try await Subprocess.run(.name("journalctl"), arguments: Arguments(arguments(since: since)), environment: .inherit,
                                              input: .none, output: .bytes(limit: Self.outputLimit), error: .string(limit: 64 * 1024))
            result = (r.terminationStatus, r.standardOutput, r.standardError)
        } catch let error as SubprocessError {
            if error.code == .outputLimitExceeded {
                throw LogSourceError("the journal holds more than \(Self.outputLimit >> 20) MiB of the agent's log in that time: export a shorter time (--since)")
            }
            throw LogSourceError("journalctl could not run (\(error)): the agent's log is in the journal only when it runs under systemd; for an agent started by hand, capture its standard error (dosetap agent 2>>agent.log) and name the file with --file")
        } catch {
            throw LogSourceError("journalctl could not run: \(error)")
        }
        guard result.terminationStatus.isSuccess else {
            let reason = result.standardError.split(whereSeparator: \.isNewline).first.map(String.init) ?? "no reason given"
            throw LogSourceError("journalctl failed (\(result.terminationStatus)): \(reason)")
        }
        return Self.parse(result.standardOutput)
    }

    /// journalctl's JSON lines as records. A line that is not a JSON object is left out; `MESSAGE` may be
    /// text or (for bytes that are not UTF-8) an array of byte values.
    public static func parse(_ bytes: [UInt8]) -> [LogRecord] {
        var records: [LogRecord] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { continue }
            let message: String
            switch object["MESSAGE"] {
            case let text as String: message = text
            case let values as [Any]: message = String(decoding: values.compactMap { ($0 as? NSNumber).map { UInt8(truncatingIfNeeded: $0.intValue) } }, as: UTF8.self)
            default: continue
            }
            let time = (object["__REALTIME_TIMESTAMP"] as? String).flatMap(Int64.init).map { Date(timeIntervalSince1970: TimeInterval($0) / 1_000_000) }
            for part in message.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
                if var record = AgentLogLine.parse(part) {
                    // The journal's time is the one it received the line at: kept even when the line has its own.
                    record.time = time ?? record.time
                    records.append(record)
                } else {
                    records.append(LogRecord(time: time, level: level(priority: object["PRIORITY"] as? String), message: String(part)))
                }
            }
        }
        return records
    }

    /// syslog priorities as swift-log's level names.
    static func level(priority: String?) -> String {
        switch priority.flatMap(Int.init) {
        case 0, 1, 2: "critical"
        case 3: "error"
        case 4: "warning"
        case 5: "notice"
        case 7: "debug"
        default: "info"
        }
    }
}

/// The agent's log in a file: its standard error captured by hand (`dosetap agent 2>>agent.log`) when it
/// runs outside systemd. Lines in swift-log's format carry their own time; any other line (a crash
/// report, text from another program) becomes a record without a time, which the export leaves out and
/// counts.
public struct LogFileSource: LogSource {
    public var path: String
    /// The most bytes read from the file (its end: the newest lines).
    public static let readLimit = 256 << 20

    public init(path: String) { self.path = path }

    public func records(since: Date) async throws -> [LogRecord] {
        try read()
    }

    public func read() throws -> [LogRecord] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw LogSourceError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw LogSourceError("cannot read \(path): it is not a regular file")
        }
        let size = Int(info.st_size)
        if size > Self.readLimit { _ = lseek(fd, off_t(size - Self.readLimit), SEEK_SET) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(size, Self.readLimit))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < Self.readLimit {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw LogSourceError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes.append(contentsOf: buffer[0..<min(n, Self.readLimit - bytes.count)])
        }
        var records: [LogRecord] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            var text = String(decoding: line, as: UTF8.self)
            if text.hasSuffix("\r") { text.removeLast() }
            if let record = AgentLogLine.parse(text) {
                records.append(record)
            } else if !text.trimmingCharacters(in: .whitespaces).isEmpty {
                records.append(LogRecord(time: nil, level: "info", message: text))
            }
        }
        return records
    }
}
