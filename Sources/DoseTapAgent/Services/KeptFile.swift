import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a service keeps in memory while the store refuses writes (#51), copied to a file in the user's runtime
/// directory — `$XDG_RUNTIME_DIR/dosetap/kept-NAME-HASH.json`, mode 0600, on a tmpfs, not the data's disk — so an
/// agent restarted before the store takes it picks it up again: a ring kept is not lost and not rung twice. `HASH`
/// names the data folder (two agents of one user on two folders keep apart). The file is removed once all is
/// written; it does not outlive a reboot (neither does anything ringing).
public final class KeptFile<Value: Codable & Sendable & Equatable>: Sendable {
    /// nil: nothing is copied (no runtime directory, or a test).
    public let url: URL?
    private let last = Mutex<Value?>(nil)
    /// The last problem said: the same one is said once, not at every pass (a full runtime folder would storm the log).
    private let lastProblem = Mutex<String?>(nil)

    /// - Parameters:
    ///   - name: the service (`alarms`, `reminders`, `household`).
    ///   - database: the database's path, which names the file.
    public init(name: String, database: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            url = nil
            return
        }
        // FNV-1a of the path: stable across runs (Swift's hashValue is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in database.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        url = URL(fileURLWithPath: runtime).appendingPathComponent("dosetap")
            .appendingPathComponent("kept-\(name)-\(String(hash, radix: 16)).json")
    }

    /// A file at `url` (tests).
    public init(url: URL?) {
        self.url = url
    }

    /// What an earlier run kept and did not write; nil when nothing (or a file that cannot be read: it is removed,
    /// the error returned for the log).
    public func load() -> (value: Value?, error: String?) {
        guard let url, let data = try? Data(contentsOf: url) else { return (nil, nil) }
        do {
            let value = try JSONDecoder().decode(Value.self, from: data)
            last.withLock { $0 = value }
            return (value, nil)
        } catch {
            try? FileManager.default.removeItem(at: url)
            return (nil, "\(url.path) cannot be read (\(error)); removed")
        }
    }

    /// Copies `value` (nil or empty: removes the file) when it changed since the last copy. Returns a problem to log —
    /// once: the same problem again returns nil — or nil. Never throws: the copy is a second line of defence, not a
    /// reason to stop ringing.
    @discardableResult
    public func save(_ value: Value?) -> String? {
        let problem = copy(value)
        return lastProblem.withLock { last -> String? in
            defer { last = problem }
            return problem == last ? nil : problem
        }
    }

    private func copy(_ value: Value?) -> String? {
        guard let url else { return nil }
        let changed = last.withLock { last -> Bool in
            guard last != value else { return false }
            last = value
            return true
        }
        guard changed else { return nil }
        guard let value else {
            if unlink(url.path) != 0, errno != ENOENT { return "cannot remove \(url.path): \(String(cString: strerror(errno)))" }
            return nil
        }
        do {
            let folder = url.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(value)
            // Written beside and renamed over (a reader never sees half a file), 0600 from the start.
            let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid())")
            let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard written == data.count, rename(temporary.path, url.path) == 0 else {
                let code = errno
                unlink(temporary.path)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
            return nil
        } catch {
            last.withLock { $0 = nil }
            return "cannot keep a copy in \(url.path): \(error)"
        }
    }
}
