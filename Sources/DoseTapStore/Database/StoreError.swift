import Foundation
internal import GRDB
#if canImport(Glibc)
import Glibc
#endif


extension DoseTapDatabase {
    /// SQLite's terse codes ("disk I/O error", "database or disk is full") as one plain sentence.
    static func explain(_ error: DatabaseError, path: String, action: String, reading: Bool = false,
                        waited: String? = "5 s") -> StoreError {
        let folder = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        let nothing = reading ? "" : " (nothing was recorded)"
        switch error.resultCode {
        case .SQLITE_FULL:
            return StoreError("cannot \(action) \(path): the disk is full; free some space and try again\(nothing)", cause: .full)
        case .SQLITE_IOERR:
            if freeBytes(folder).map({ $0 < 1 << 20 }) ?? false {
                return StoreError("cannot \(action) \(path): the disk is full; free some space and try again\(nothing)", cause: .full)
            }
            return StoreError("cannot \(action) \(path): the disk reported an input/output error (see `dmesg`)\(nothing)", cause: .ioError)
        case .SQLITE_READONLY:
            return StoreError("cannot \(action) \(path): the database is read-only (check the permissions of the file and of \(folder))",
                              cause: .readOnly)
        case .SQLITE_CANTOPEN:
            return StoreError("cannot open \(path): \(Self.accessProblem(folder: folder, file: path))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreError("cannot \(action) \(path): another process kept the database locked\(waited.map { " for \($0)" } ?? ""); try again",
                              cause: .locked)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreError("cannot \(action) \(path): the file is damaged or is not a DoseTap database", cause: .damaged)
        case .SQLITE_PERM, .SQLITE_AUTH:
            return StoreError("cannot \(action) \(path): permission denied", cause: .readOnly)
        default:
            let message = error.message ?? error.description
            return StoreError("cannot \(action) \(path): \(message)")
        }
    }

    static func accessProblem(folder: String, file: String) -> String {
        var s = stat()
        if stat(file, &s) != 0 { return String(cString: strerror(errno)) }
        if access(file, R_OK) != 0 { return "permission denied" }
        if access(folder, W_OK) != 0 { return "the folder \(folder) is read-only and the database's -wal/-shm files are missing" }
        return "the file cannot be opened"
    }

    static func freeBytes(_ folder: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(folder, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
