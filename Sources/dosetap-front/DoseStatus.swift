import DoseTapCore
import DoseTapPresenters
import DoseTapStoreFormat
import DoseTapSystemFiles
import Foundation

/// `dose status --json [--data-dir DIR]`: tonight, read from the dose log as the store reads it (the same SQL and
/// row decoding, DoseTapStoreFormat) and shown by the same presenter. Anything the full program would answer
/// otherwise — an unusable data folder, a database it would upgrade or cannot read, an entry it cannot decode —
/// is left to it (nil).
enum FrontDoseStatus {
    static func answer(_ words: [String]) -> String? {
        guard let words = FrontWords(words, flags: ["--json"], options: ["--data-dir"]), words.flags.contains("--json"),
              let data = FrontData(dataDir: words.value("--data-dir")) else { return nil }
        let now = Date()
        let zone = SystemTimeZone.current
        guard let night = tonight(data, now: now, zone: zone) else { return nil }
        return night.json(in: zone).text
    }

    /// Tonight as `DoseHistory.status` reads it: an empty night without a database; nil when the full program
    /// should answer.
    static func tonight(_ data: FrontData, now: Date, zone: TimeZone, reader: SQLiteReader? = nil) -> NightStatus? {
        guard data.exists else { return DoseLog(events: []).status(at: now, in: zone) }
        guard let reader = reader ?? data.open(), let log = recentLog(reader, now: now), log.unreadable.isEmpty else { return nil }
        return log.status(at: now, in: zone)
    }

    /// The recent log as `DoseRepository.recentLog` reads it; nil when SQLite fails.
    static func recentLog(_ reader: SQLiteReader, now: Date) -> DoseLog? {
        var ignored: Set<Int64> = []
        guard reader.query(DoseEventRow.ignoredSQL, row: { columns in
            guard case .integer(let seq) = columns.first else { return false }
            ignored.insert(seq)
            return true
        }) else { return nil }
        var marks: [[StoredValue]] = []
        guard reader.query(DoseEventRow.setAsideSQL, row: { columns in
            marks.append(columns)
            return true
        }) else { return nil }
        let remembered = DoseEventRow.setAsideMarks(marks)
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
        return DoseLog(events: events, unreadable: unreadable, setAside: remembered.setAside,
                       discarded: remembered.discarded, now: now)
    }
}
