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
            if code == ENOENT {
                if let problem = lostHistory(folder: folder, file: file) { throw problem }
                return false
            }
            throw StoreError("cannot read \(file): \(String(cString: strerror(code)))")
        }
        guard s.st_mode & S_IFMT == S_IFREG else {
            throw StoreError("\(file) is not a regular file; move it away to let DoseTap create its database")
        }
        return true
    }

    /// The file beside the database that says a history is kept there (#51): written once the database exists, so
    /// that a database later missing is a history lost (deleted, moved, a failed copy), never a new one.
    public static let historyFileName = "dosetap.history"

    /// What the history file says, for a person who opens it.
    static let historyText = """
        DoseTap keeps its history (doses, alarms, settings) in dosetap.sqlite beside this file.
        While this file is here, DoseTap refuses to start a new, empty history if dosetap.sqlite is missing:
        restore dosetap.sqlite from a backup, or delete this file to start a new history on purpose.

        """

    /// The error for a database missing (or of 0 bytes) in a folder whose history file says it held one; nil when
    /// the folder never held one.
    public static func lostHistory(folder: String, file: String, empty: Bool = false) -> StoreError? {
        let marker = (folder.hasSuffix("/") ? folder : folder + "/") + historyFileName
        var s = stat()
        guard stat(marker, &s) == 0 else { return nil }
        // The day (UTC) the history file was written, by the C library (the one-shot front links this file).
        var seconds = s.st_mtim.tv_sec
        var day = tm()
        gmtime_r(&seconds, &day)
        let when = "\(day.tm_year + 1900)-" + (day.tm_mon + 1 < 10 ? "0" : "") + "\(day.tm_mon + 1)-" + (day.tm_mday < 10 ? "0" : "") + "\(day.tm_mday)"
        let what = empty ? "is empty (0 bytes)" : "is missing"
        return StoreError("\(file) \(what), but this folder has held a DoseTap history since \(when) (\(marker)): not starting "
                          + "a new, empty one in its place; restore dosetap.sqlite from a backup, or remove \(marker) to start a new history",
                          cause: .damaged)
    }

    /// Writes the history file in `folder` if it is not there (a database exists there now). Best effort: a folder
    /// that cannot be written now gets it at a later open.
    public static func markHistory(folder: String) {
        let marker = (folder.hasSuffix("/") ? folder : folder + "/") + historyFileName
        guard access(marker, F_OK) != 0 else { return }
        let temporary = marker + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(historyText.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, marker) == 0 else {
            unlink(temporary)
            return
        }
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
