import Foundation

/// The history as CSV: `Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped`, one row per night, oldest
/// first; missing values empty; RFC 4180 quoting. Times are local clock times in the zone each dose was
/// taken in, as the person saw them.
///
/// A dose dated in the future and set aside (#51) is never folded into a night; it gets a row of its own, flagged
/// in a seventh column, `Flag` ("set aside: dated in the future" or "discarded: dated in the future"), which the
/// header names only when such a row is there: every other export keeps the seed's six columns exactly.
public enum CSVExport {
    public static let header = "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped"
    public static let flaggedHeader = header + ",Flag"

    /// A set-aside dose's row: its night, its time in its column, the flag.
    public static func flaggedRow(_ event: DoseEvent, discarded: Bool) -> String? {
        let time = ClockText(timeZone: event.zone).timeWithSeconds(event.at)
        let (dose1, dose2): (String, String)
        switch event.kind {
        case .dose1: (dose1, dose2) = (time, "")
        case .dose2: (dose1, dose2) = ("", time)
        default: return nil
        }
        let flag = discarded ? "discarded: dated in the future" : "set aside: dated in the future"
        return [LocalDate.night(of: event.at, in: event.zone).description, dose1, dose2, "", "", "", flag]
            .map(field).joined(separator: ",")
    }

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

    /// The log's nights, and its doses set aside as flagged rows (in the range, or after it when the range reaches
    /// `today`: an entry dated tomorrow or in 2199 is news of today, never left out of "the last 30 days").
    public static func document(_ log: DoseLog, from: LocalDate?, to: LocalDate?, today: LocalDate, now: Date) -> String {
        let inRange = { (night: LocalDate) in
            (from.map { night >= $0 } ?? true) && (to.map { night <= $0 || $0 >= today } ?? true)
        }
        let flagged = (log.setAside.map { ($0, false) } + log.discarded.map { ($0, true) })
            .filter { inRange(LocalDate.night(of: $0.0.at, in: $0.0.zone)) }
            .sorted { $0.0.at < $1.0.at }
            .compactMap { flaggedRow($0.0, discarded: $0.1) }
        guard !flagged.isEmpty else { return document(log.sessions, from: from, to: to, now: now) }
        let nights = rows(log.sessions, from: from, to: to, now: now).map { $0 + "," }
        return ([flaggedHeader] + nights + flagged).map { $0 + "\r\n" }.joined()
    }
}
