import DoseTapCore
import DoseTapPresenters
import DoseTapStoreFormat
import DoseTapSystemZone
import Foundation

/// `dose status --json [--data-dir DIR]`: tonight, read from the dose log as the store reads it (the same SQL and
/// row decoding, DoseTapStoreFormat) and shown by the same presenter. Anything the full program would answer
/// otherwise — an unusable data folder, a database it would upgrade or cannot read, an entry it cannot decode —
/// is left to it (nil).
enum FrontDoseStatus {
    static func answer(_ words: [String]) -> String? {
        var json = false
        var dataDir: String?
        var i = 0
        while i < words.count {
            let word = words[i]
            i += 1
            if word == "--json" {
                guard !json else { return nil }
                json = true
            } else if word == "--data-dir" || word.hasPrefix("--data-dir=") {
                guard dataDir == nil else { return nil }
                let value: String
                if word == "--data-dir" {
                    guard i < words.count else { return nil }
                    value = words[i]
                    i += 1
                } else {
                    value = String(word.dropFirst("--data-dir=".count))
                }
                // An empty value or one that looks like an option: the parser's to judge.
                guard !value.isEmpty, !value.hasPrefix("-") else { return nil }
                dataDir = value
            } else {
                return nil
            }
        }
        guard json, DataPaths.problem(dataDirectory: dataDir) == nil else { return nil }
        // Without HOME, DataPaths asks the password database for the home folder: through NSS modules, which a
        // static program (the front is one) should not load. The full program, linked dynamically, answers.
        guard let home = getenv("HOME"), home.pointee != 0 else { return nil }
        let folder = DataPaths.resolve(dataDirectory: dataDir, configFile: nil).dataDirectory
        let file = folder.appendingPathComponent("dosetap.sqlite").path
        let now = Date()
        let zone = SystemTimeZone.current
        guard let exists = try? DataFolder.exists(folder: folder.path, file: file) else { return nil }
        guard exists else { return DoseLog(events: []).status(at: now, in: zone).json(in: zone).text }
        guard let log = recentLog(file: file, now: now), log.unreadable.isEmpty else { return nil }
        return log.status(at: now, in: zone).json(in: zone).text
    }

    /// The recent log as `DoseRepository.recentLog` reads it, in one read transaction; nil when the file is not a
    /// current DoseTap database in WAL mode or SQLite fails.
    static func recentLog(file: String, now: Date) -> DoseLog? {
        guard let reader = SQLiteReader(path: file), reader.execute("BEGIN") else { return nil }
        defer { _ = reader.execute("COMMIT") }
        var walMode = false
        guard reader.query("PRAGMA journal_mode", row: { walMode = $0.first == .text("wal"); return true }), walMode else { return nil }
        var current = false
        guard let last = StoreSchema.migrationIdentifiers.last,
              reader.query("SELECT identifier FROM grdb_migrations", row: { if $0.first == .text(last) { current = true }; return true }),
              current else { return nil }
        var ignored: Set<Int64> = []
        guard reader.query(DoseEventRow.ignoredSQL, row: { columns in
            guard case .integer(let seq) = columns.first else { return false }
            ignored.insert(seq)
            return true
        }) else { return nil }
        var events: [DoseEvent] = []
        var unreadable: [Int64] = []
        let since = now.addingTimeInterval(-DoseEventRow.recentHorizon).timeIntervalSince1970
        guard reader.query(DoseEventRow.recentSQL, [since], row: { columns in
            guard columns.count == DoseEventRow.columnCount else { return false }
            let seq: Int64
            if case .integer(let s) = columns[6] { seq = s } else { seq = -1 }
            if let event = DoseEventRow.decode(columns) {
                events.append(event)
            } else if !ignored.contains(seq) {
                unreadable.append(seq)
            }
            return true
        }) else { return nil }
        return DoseLog(events: events, unreadable: unreadable)
    }
}
