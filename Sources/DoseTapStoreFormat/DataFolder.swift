import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The data folder the database lives in: whether it holds a database, creating it (0700), and the `flock`
/// that serialises opening and migrating across processes.
public enum DataFolder {
    /// True when `file` exists in `folder`; an error when `folder` is not a folder or cannot be read.
    public static func exists(folder: String, file: String) throws -> Bool {
        var s = stat()
        if stat(folder, &s) != 0 {
            let code = errno
            if code == ENOENT { return false }
            if code == ENOTDIR { throw StoreError("data directory \(folder) is not a folder: part of its path is a file") }
            throw StoreError("cannot read data directory \(folder): \(String(cString: strerror(code)))")
        }
        guard s.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError("data directory \(folder) is not a folder (it is a file); choose another with --data-dir or DOSETAP_DATA_DIR")
        }
        if stat(file, &s) != 0 {
            let code = errno
            if code == ENOENT { return false }
            throw StoreError("cannot read \(file): \(String(cString: strerror(code)))")
        }
        guard s.st_mode & S_IFMT == S_IFREG else {
            throw StoreError("\(file) is not a regular file; move it away to let DoseTap create its database")
        }
        return true
    }

    /// Creates the folder (and its parents, mode 0700) when asked; a file in its place is an error.
    public static func check(_ folder: String, create: Bool) throws {
        var s = stat()
        if stat(folder, &s) == 0 {
            guard s.st_mode & S_IFMT == S_IFDIR else {
                throw StoreError("data directory \(folder) is not a folder (it is a file); choose another with --data-dir or DOSETAP_DATA_DIR")
            }
            return
        }
        guard create, errno == ENOENT else {
            let code = errno
            if code == ENOTDIR { throw StoreError("data directory \(folder) is not a folder: part of its path is a file") }
            throw StoreError("cannot use data directory \(folder): \(String(cString: strerror(code)))")
        }
        var built = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0, errno != EEXIST {
                let code = errno
                let cause = code == ENOSPC ? "the disk is full" : String(cString: strerror(code))
                throw StoreError("cannot create data directory \(folder): \(cause) (at \(built))")
            }
        }
        guard stat(folder, &s) == 0, s.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError("cannot create data directory \(folder): part of its path is a file")
        }
    }

    /// An exclusive `flock` on the data folder itself (no lock file to leave behind), held while the
    /// database is opened and migrated.
    public static func lock(_ folder: String) throws -> Int32 {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StoreError("cannot open data directory \(folder): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(fd)
            throw StoreError("cannot lock data directory \(folder): \(String(cString: strerror(code)))")
        }
        return fd
    }
}
