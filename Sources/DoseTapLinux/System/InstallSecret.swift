import DoseTapCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The per-install secret of the exports: 32 random bytes as hex in `install-secret` beside the database
/// (mode 0600), made on first use. It keys the stable short hashes of an anonymised log (the same button is
/// the same hash in every export of this install, and no one without the file can tell which button it is)
/// and the install's part of a calendar's UIDs. Deleting it gives every button new hashes.
public enum InstallSecret {
    public static let fileName = "install-secret"

    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The secret of the data folder, created (with the folder, 0700) when missing. A file others may read,
    /// or one that is not 64 hex digits, is refused in one line, never replaced silently.
    ///
    /// The other parameters make it the loader of any such 32-byte secret file (the dashboard's
    /// `web-secret` keeps the same rules): its name, what it is called in an error, and what deleting it does.
    public static func loadOrCreate(dataDirectory: URL, fileName: String = InstallSecret.fileName, kind: String = "DoseTap install secret",
                                    deleting: String = "give every button new hashes") throws(LoadError) -> [UInt8] {
        let path = dataDirectory.appendingPathComponent(fileName).path
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw LoadError(description: "cannot create \(dataDirectory.path): \(error.localizedDescription)")
        }
        for _ in 0..<2 {
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd >= 0 {
                defer { close(fd) }
                var info = stat()
                guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                    throw LoadError(description: "\(path) is not a regular file")
                }
                guard info.st_mode & 0o077 == 0 else {
                    throw LoadError(description: "\(path) is readable by others: chmod 600 \(path) (or delete it to \(deleting))")
                }
                var buffer = [UInt8](repeating: 0, count: 256)
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                let text = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
                guard let bytes = try? HexBytes.parse(text, count: 32) else {
                    throw LoadError(description: "\(path) is not a \(kind) (64 hex digits): delete it to make a new one")
                }
                return bytes
            }
            guard errno == ENOENT else {
                throw LoadError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            // O_EXCL on a temporary name, then link(): two processes creating it at once agree on the first.
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let temporary = path + ".new-\(getpid())"
            let created = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard created >= 0 else {
                throw LoadError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            let text = Array((HexBytes.string(bytes, uppercase: false) + "\n").utf8)
            let written = text.withUnsafeBytes { write(created, $0.baseAddress, $0.count) }
            fsync(created)
            close(created)
            defer { unlink(temporary) }
            guard written == text.count else { throw LoadError(description: "cannot write \(path)") }
            if link(temporary, path) == 0 { return bytes }
            guard errno == EEXIST else {
                throw LoadError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        throw LoadError(description: "cannot read \(path)")
    }

    /// Replaces the secret with a new one at once (a new file renamed over the old: a reader sees the old or
    /// the new, never a half-written one). What it signed no longer verifies.
    public static func replace(dataDirectory: URL, fileName: String = InstallSecret.fileName) throws(LoadError) {
        let path = dataDirectory.appendingPathComponent(fileName).path
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw LoadError(description: "cannot create \(dataDirectory.path): \(error.localizedDescription)")
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        let created = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard created >= 0 else { throw LoadError(description: "cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let text = Array((HexBytes.string(bytes, uppercase: false) + "\n").utf8)
        let written = text.withUnsafeBytes { write(created, $0.baseAddress, $0.count) }
        let synced = fsync(created) == 0
        close(created)
        guard written == text.count, synced, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw LoadError(description: "cannot replace \(path): \(reason)")
        }
        // The rename is durable once the folder is synced.
        let folder = open(dataDirectory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }
}
