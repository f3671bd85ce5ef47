import Foundation
import Glibc

/// One name in a directory, with what it resolves to (symbolic links followed).
public struct SoundDirectoryEntry: Sendable, Equatable, Hashable {
    public enum Kind: Sendable, Equatable, Hashable {
        case file, directory
        /// Anything else, including a dangling link (a missing file).
        case other
    }

    public var name: String
    public var kind: Kind

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// A failed directory read, with its errno.
public struct SoundFileSystemError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var errno: Int32

    public init(path: String, errno: Int32) {
        self.path = path
        self.errno = errno
    }

    /// The directory is simply not there: not an error for a sound root.
    public var isMissing: Bool { errno == ENOENT || errno == ENOTDIR }
    /// The directory exists but may not be read: skipped.
    public var isUnreadable: Bool { errno == EACCES || errno == EPERM }

    public var description: String { "\(path): \(String(cString: strerror(errno)))" }
}

/// What `ThemeSoundCatalog` reads. Injectable so tests can make a directory fail the way a disk does.
public protocol SoundFileSystem: Sendable {
    /// The entries of a directory (without "." and ".."), in no particular order.
    func entries(of directory: String) throws(SoundFileSystemError) -> [SoundDirectoryEntry]
    /// A small text file (index.theme), or nil when it is missing or unreadable.
    func text(of file: String) -> String?
}

/// The real file system, through opendir/readdir/stat.
public struct LocalSoundFileSystem: SoundFileSystem {
    public init() {}

    public func entries(of directory: String) throws(SoundFileSystemError) -> [SoundDirectoryEntry] {
        guard let dir = opendir(directory) else {
            throw SoundFileSystemError(path: directory, errno: Glibc.errno)
        }
        defer { closedir(dir) }
        var result: [SoundDirectoryEntry] = []
        while true {
            Glibc.errno = 0
            guard let entry = readdir(dir) else {
                // NULL with errno set is a read error (EIO), not the end of the directory.
                if Glibc.errno != 0 { throw SoundFileSystemError(path: directory, errno: Glibc.errno) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var info = stat()
            let kind: SoundDirectoryEntry.Kind
            if stat(directory + "/" + name, &info) != 0 {
                kind = .other
            } else {
                switch info.st_mode & S_IFMT {
                case S_IFREG: kind = .file
                case S_IFDIR: kind = .directory
                default: kind = .other
                }
            }
            result.append(SoundDirectoryEntry(name: name, kind: kind))
        }
        return result
    }

    public func text(of file: String) -> String? {
        guard let data = FileManager.default.contents(atPath: file), data.count <= 1 << 20 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
