import Foundation

/// Another process holding a SQLite database's write lock (`BEGIN IMMEDIATE` in the `sqlite3` shell), as a backup
/// tool or a person's `sqlite3` session would (#51): held from `init` until `release()` (or the end of this object).
/// Reads go on beside it (WAL); every other writer waits for its busy timeout, then fails.
public final class HeldWriteLock: @unchecked Sendable {
    private let process: Process
    private let input: FileHandle
    private let lock = NSLock()
    private var released = false

    /// Starts `sqlite3` on `path` and returns once it holds the write lock; throws when it could not take it.
    public init(database path: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = ["-batch", path]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        input = stdin.fileHandleForWriting
        try input.write(contentsOf: Data(".timeout 5000\nBEGIN IMMEDIATE;\nSELECT 'held-' || 'lock';\n".utf8))
        var said = Data()
        while !String(decoding: said, as: UTF8.self).contains("held-lock") {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            said += chunk
        }
        let text = String(decoding: said, as: UTF8.self)
        guard text.contains("held-lock"), !text.contains("Error") else {
            process.terminate()
            throw HeldWriteLockError(description: "sqlite3 could not take the write lock of \(path): \(text)")
        }
    }

    /// Commits (nothing was changed) and ends the shell: the lock is free when this returns.
    public func release() {
        lock.lock()
        defer { lock.unlock() }
        guard !released else { return }
        released = true
        try? input.write(contentsOf: Data("COMMIT;\n.quit\n".utf8))
        try? input.close()
        process.waitUntilExit()
    }

    deinit { release() }
}

public struct HeldWriteLockError: Error, CustomStringConvertible {
    public var description: String
}
