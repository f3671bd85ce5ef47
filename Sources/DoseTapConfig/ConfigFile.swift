import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reading config.toml from disk: what counts as "no file" (the defaults) and what is an error.
extension AgentConfiguration {
    /// The largest config.toml read (a few lines are expected).
    public static let maxFileSize = 1 << 20

    /// Reads `file`. Only "there is no such file" (the path and every directory above it exist up to a
    /// missing name, and no symlink on the way dangles) means the defaults; anything else (a dangling
    /// symlink, a symlink loop, no permission, a directory, a device, a FIFO) is an error naming the path
    /// and the cause.
    public static func load(from file: URL) throws(ConfigurationError) -> AgentConfiguration {
        let path = file.path
        var info = stat()
        if lstat(path, &info) != 0 {
            let error = errno
            guard error == ENOENT else { throw ConfigurationError("\(path): cannot read: \(describe(error))") }
            if let dangling = danglingAncestor(of: path) {
                throw ConfigurationError("\(path): cannot read: \(dangling) is a symlink to nothing")
            }
            return AgentConfiguration()
        }
        if info.st_mode & S_IFMT == S_IFLNK, stat(path, &info) != 0 {
            let error = errno
            throw ConfigurationError("\(path): cannot read: " + (error == ENOENT ? "it is a symlink to nothing" : describe(error)))
        }
        guard info.st_mode & S_IFMT != S_IFDIR else { throw ConfigurationError("\(path): cannot read: it is a directory") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigurationError("\(path): cannot read: not a regular file") }

        // O_NONBLOCK: a FIFO swapped in after the check must not hang the agent; fstat checks what was opened.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ConfigurationError("\(path): cannot read: \(describe(errno))") }
        defer { close(fd) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw ConfigurationError("\(path): cannot read: not a regular file")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError("\(path): cannot read: \(describe(errno))")
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= maxFileSize else {
                throw ConfigurationError("\(path): cannot read: larger than \(maxFileSize / 1024) KiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError("\(path): not UTF-8 text")
        }
        return try parse(text, source: path)
    }

    /// The nearest existing ancestor of a missing path, when it is a symlink whose target is missing.
    private static func danglingAncestor(of path: String) -> String? {
        var current = (path as NSString).deletingLastPathComponent
        while !current.isEmpty {
            var info = stat()
            if lstat(current, &info) == 0 {
                var target = stat()
                return info.st_mode & S_IFMT == S_IFLNK && stat(current, &target) != 0 ? current : nil
            }
            let parent = (current as NSString).deletingLastPathComponent
            if parent == current { return nil }
            current = parent
        }
        return nil
    }

    private static func describe(_ error: Int32) -> String {
        switch error {
        case ELOOP: "a symlink loop"
        case EACCES: "permission denied"
        case ENOTDIR: "a directory in its path is not a directory"
        default: String(cString: strerror(error))
        }
    }
}
