import Foundation

/// The anonymised log as CSV: `time,level,message,metadata`, oldest first; the time in UTC (RFC 3339);
/// RFC 4180 quoting; control characters as visible escapes; a cell that a spreadsheet would run as a
/// formula (`=`, `+`, `-`, `@`, a tab or a carriage return first, or their full-width forms) starts with `'`.
public enum LogCSV {
    public static let header = "time,level,message,metadata"

    public static func document(_ records: [LogRecord]) -> String {
        ([header] + records.map(row)).map { $0 + "\r\n" }.joined()
    }

    public static func row(_ record: LogRecord) -> String {
        let metadata = record.metadata.map { $0.key.isEmpty ? $0.value : "\($0.key)=\($0.value)" }.joined(separator: " ")
        return [record.time.map(time) ?? "", record.level, record.message, metadata].map(cell).joined(separator: ",")
    }

    public static func time(_ date: Date) -> String {
        // By arithmetic: a formatter per row costs more than the rest of the row.
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (y, m, d) = CivilTime.date(days: days)
        let t = seconds - days * 86_400
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, t / 3600, t % 3600 / 60, t % 60)
    }

    /// One cell: visible escapes, the formula guard, then RFC 4180 quoting.
    public static func cell(_ value: String) -> String {
        var text = DisplayText.escaped(value, maxLength: 4000, doublingBackslashes: false)
        if let first = text.unicodeScalars.first, "=+-@\t\r＝＋－＠".unicodeScalars.contains(first) {
            text = "'" + text
        }
        return CSVExport.field(text)
    }
}
