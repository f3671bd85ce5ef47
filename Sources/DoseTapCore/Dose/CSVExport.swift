import Foundation

/// The history as CSV: `Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped`, one row per night, oldest
/// first; missing values empty; RFC 4180 quoting. Times are local clock times in the zone each dose was
/// taken in, as the person saw them.
public enum CSVExport {
    public static let header = "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped"

    public static func rows(_ sessions: [NightSession], from: LocalDate?, to: LocalDate?, now: Date) -> [String] {
        sessions
            .filter { s in (from.map { s.nightDate >= $0 } ?? true) && (to.map { s.nightDate <= $0 } ?? true) }
            .sorted { ($0.nightDate, $0.dose1.at) < ($1.nightDate, $1.dose1.at) }
            .map { row($0, now: now) }
    }

    public static func row(_ s: NightSession, now: Date) -> String {
        let onTime = s.onTime(at: now)
        let skipped = s.dose2 == nil && s.phase(at: now) == .skipped
        return [
            s.nightDate.description,
            ClockText(timeZone: s.dose1.zone).timeWithSeconds(s.dose1.at),
            s.dose2.map { ClockText(timeZone: $0.zone).timeWithSeconds($0.at) } ?? "",
            s.intervalMinutes.map(String.init) ?? "",
            onTime.map { $0 ? "true" : "false" } ?? "",
            skipped ? "true" : "false",
        ].map(field).joined(separator: ",")
    }

    /// RFC 4180: a field with a comma, a quote or a line break is quoted, quotes doubled.
    public static func field(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func document(_ sessions: [NightSession], from: LocalDate?, to: LocalDate?, now: Date) -> String {
        ([header] + rows(sessions, from: from, to: to, now: now)).map { $0 + "\r\n" }.joined()
    }
}
