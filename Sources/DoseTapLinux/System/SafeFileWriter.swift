import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A refused or failed write of an exported file: one sentence naming the path and the cause.
public struct FileWriteError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Writes an export (CSV for a doctor, a log) without ever destroying what is already there:
///
/// - never over the database or its `-wal`/`-shm`/`-journal` files (by name and by inode, so a hard
///   link or `./data/../data/dosetap.sqlite` is caught too);
/// - never over anything that is not a regular file: a symbolic link, a device node, a FIFO, a
///   directory, a socket;
/// - never over an existing file unless `replace` is true (`--force`);
/// - atomically: the text goes to a temporary file in the same directory, is flushed to disk, then
///   takes the name (a crash leaves the old file or the new one, never half of it);
/// - a replaced file keeps its mode (and owner, when run as root); a new file is 0600, because the
///   history is health data.
public enum SafeFileWriter {
    public static func write(_ bytes: [UInt8], to path: String, replace: Bool, protected: [String]) throws(FileWriteError) {
        guard !path.isEmpty else { throw FileWriteError("no output file named") }
        guard !path.utf8.contains(0) else { throw FileWriteError("invalid output file name (it contains a NUL byte)") }
        let (parentText, name) = splitPath(path)
        guard !name.isEmpty, name != ".", name != "..", !path.hasSuffix("/") else {
            throw FileWriteError("cannot write \(path): it names a folder, not a file")
        }
        let parent = parentText.isEmpty ? "." : parentText
        guard let realParent = realPath(parent) else {
            let code = errno
            throw FileWriteError("cannot write \(path): " + (code == ENOENT ? "the folder \(parent) does not exist" : "\(parent): \(errnoSentence(code))"))
        }
        var parentInfo = stat()
        guard stat(realParent, &parentInfo) == 0, parentInfo.st_mode & S_IFMT == S_IFDIR else {
            throw FileWriteError("cannot write \(path): \(parent) is not a folder")
        }
        let target = realParent == "/" ? "/" + name : realParent + "/" + name

        // The database, by name (it may not exist yet) and by inode (hard links, other spellings).
        let guarded = protectedFiles(protected)
        if guarded.names.contains(target) {
            throw FileWriteError("refusing to write \(path): it is DoseTap's database (\(name)); choose another file")
        }

        var existing = stat()
        var mode: mode_t = 0o600
        var owner: (uid_t, gid_t)?
        if lstat(target, &existing) == 0 {
            let type = existing.st_mode & S_IFMT
            if type == S_IFLNK {
                throw FileWriteError("refusing to write \(path): it is a symbolic link; name the file itself")
            }
            guard type == S_IFREG else {
                throw FileWriteError("refusing to write \(path): it is \(describe(type)), not a regular file")
            }
            if guarded.inodes.contains(FileID(existing)) {
                throw FileWriteError("refusing to write \(path): it is DoseTap's database; choose another file")
            }
            guard replace else {
                throw FileWriteError("\(path) already exists: add --force to replace it")
            }
            mode = existing.st_mode & 0o7777
            owner = (existing.st_uid, existing.st_gid)
        } else if errno != ENOENT {
            throw FileWriteError("cannot write \(path): \(errnoSentence(errno))")
        }

        // The temporary file: O_EXCL in the same directory, 0600 until it is complete.
        var template = Array("\(realParent == "/" ? "" : realParent)/.\(name.prefix(100)).dosetap-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw FileWriteError("cannot write \(path): \(errnoSentence(errno))") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var keep = false
        defer {
            if !keep { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw FileWriteError("cannot write \(path): \(errnoSentence(n < 0 ? errno : EIO))") }
                offset += n
            }
            if let owner, getuid() == 0 { _ = fchown(fd, owner.0, owner.1) }
            guard fchmod(fd, mode) == 0 else { throw FileWriteError("cannot write \(path): \(errnoSentence(errno))") }
            guard fsync(fd) == 0 else { throw FileWriteError("cannot write \(path): \(errnoSentence(errno))") }
        }

        if replace && owner != nil {
            guard rename(temporary, target) == 0 else { throw FileWriteError("cannot write \(path): \(errnoSentence(errno))") }
        } else {
            // A new name: link() fails if something took the name meanwhile, so nothing is replaced.
            if link(temporary, target) != 0 {
                let code = errno
                if code == EEXIST {
                    throw FileWriteError("\(path) appeared while writing: nothing replaced (add --force to replace it)")
                }
                // File systems without hard links (vfat): rename, after checking the name is still free.
                var again = stat()
                guard code == EPERM || code == ENOTSUP || code == EOPNOTSUPP, lstat(target, &again) != 0, errno == ENOENT,
                      rename(temporary, target) == 0 else {
                    throw FileWriteError("cannot write \(path): \(errnoSentence(code))")
                }
                keep = true
            }
        }
        let directory = open(realParent, O_RDONLY | O_DIRECTORY)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    struct FileID: Hashable {
        var device: UInt64
        var inode: UInt64
        init(_ s: stat) {
            device = UInt64(s.st_dev)
            inode = UInt64(s.st_ino)
        }
    }

    static func protectedFiles(_ paths: [String]) -> (names: Set<String>, inodes: Set<FileID>) {
        var names = Set<String>()
        var inodes = Set<FileID>()
        for path in paths {
            let (directory, base) = splitPath(path)
            let resolvedDirectory = realPath(directory.isEmpty ? "." : directory) ?? directory
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let candidates = [path + suffix, resolvedDirectory + "/" + base + suffix]
                for candidate in candidates {
                    names.insert(candidate)
                    var s = stat()
                    if stat(candidate, &s) == 0 { inodes.insert(FileID(s)) }
                }
            }
        }
        return (names, inodes)
    }

    /// "/a/b/c.csv" → ("/a/b", "c.csv"); "c.csv" → ("", "c.csv"); "/c" → ("/", "c"). By bytes: Foundation's
    /// `NSString` path methods trap on some non-ASCII names (a lone "２").
    public static func splitPath(_ path: String) -> (folder: String, name: String) {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        let folder = slash == 0 ? "/" : String(decoding: bytes[..<slash], as: UTF8.self)
        return (folder, String(decoding: bytes[(slash + 1)...], as: UTF8.self))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func describe(_ type: mode_t) -> String {
        switch type {
        case S_IFDIR: "a folder"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    static func errnoSentence(_ code: Int32) -> String {
        if code == ENOSPC { return "the disk is full (No space left on device)" }
        return String(cString: strerror(code))
    }
}
