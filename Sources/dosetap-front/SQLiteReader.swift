import CSQLite
import DoseTapStoreFormat

/// A read-only look at the database through SQLite's C API: what the one-shot front needs, without GRDB. Every
/// failure is nil — the front then hands the command to the full program, whose error message it is to give.
final class SQLiteReader {
    private var db: OpaquePointer?
    /// A read transaction is open (`FrontData.open`): committed before the connection closes.
    var inTransaction = false

    /// Opens `path` read-only, waiting up to 5 s for a lock as the store does; nil when SQLite cannot.
    init?(path: String) {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, db != nil else {
            sqlite3_close(db)
            return nil
        }
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        if inTransaction { _ = execute("COMMIT") }
        sqlite3_close(db)
    }

    /// Runs `sql` with `arguments` (numbers), calling `row` with each row's columns; false on any error.
    func query(_ sql: String, _ arguments: [Double] = [], row: ([StoredValue]) -> Bool) -> Bool {
        run(sql, bind: { statement in
            for (i, value) in arguments.enumerated() where sqlite3_bind_double(statement, Int32(i + 1), value) != SQLITE_OK { return false }
            return true
        }, row: row)
    }

    /// Runs `sql` with `texts` as its arguments, calling `row` with each row's columns; false on any error.
    func query(_ sql: String, texts: [String], row: ([StoredValue]) -> Bool) -> Bool {
        run(sql, bind: { statement in
            for (i, text) in texts.enumerated() {
                // SQLITE_TRANSIENT: SQLite copies the text before the Swift string's storage goes.
                let bound = text.withCString { sqlite3_bind_text(statement, Int32(i + 1), $0, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
                guard bound == SQLITE_OK else { return false }
            }
            return true
        }, row: row)
    }

    private func run(_ sql: String, bind: (OpaquePointer) -> Bool, row: ([StoredValue]) -> Bool) -> Bool {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return false }
        defer { sqlite3_finalize(statement) }
        guard bind(statement) else { return false }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_DONE: return true
            case SQLITE_ROW:
                let count = sqlite3_column_count(statement)
                var columns: [StoredValue] = []
                columns.reserveCapacity(Int(count))
                for c in 0..<count { columns.append(value(statement, c)) }
                guard row(columns) else { return false }
            default: return false
            }
        }
    }

    /// Runs a statement that returns nothing (BEGIN, COMMIT); false on an error.
    func execute(_ sql: String) -> Bool {
        sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK
    }

    /// A column as GRDB reads it: text up to its first NUL, as UTF-8 with invalid bytes replaced.
    private func value(_ statement: OpaquePointer, _ column: Int32) -> StoredValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, column) else { return .null }
            var length = 0
            while text[length] != 0 { length += 1 }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }
}
