import Foundation

/// The constants of the two-dose night (design.md §3.2). All durations are real elapsed time since
/// dose 1, so DST and time-zone changes move the displayed clock times, never the window.
public enum DoseRules {
    /// The window opens at 150 minutes (inclusive)…
    public static let windowOpens: TimeInterval = 150 * 60
    /// …and closes at 240 minutes (exclusive).
    public static let windowCloses: TimeInterval = 240 * 60
    /// Near close: 15 minutes or less remain (elapsed ≥ 225 min).
    public static let nearClose: TimeInterval = 225 * 60
    /// After close, a late dose 2 may be recorded for 30 minutes, only with explicit confirmation.
    public static let lateGrace: TimeInterval = 30 * 60
    /// The dose 2 reminder options, in minutes after dose 1.
    public static let targetOptions = [165, 180, 195, 210, 225]
    public static let defaultTarget = 165
    /// Each snooze moves the reminder 10 minutes; at most 3 a night; never past 225 minutes.
    public static let snoozeStep: TimeInterval = 10 * 60
    public static let maximumSnoozes = 3
    public static let latestReminder: TimeInterval = 225 * 60
    /// An action can be undone for 5 seconds.
    public static let undoWindow: TimeInterval = 5
    /// An input older than this when it is decided (a press queued while a button was away) is not a dose.
    public static let maximumInputAge: TimeInterval = 3
    /// A night starts at 18:00 local time: a dose 1 at 00:30 belongs to the previous evening.
    public static let nightStartHour = 18
    /// An event dated more than this after now was recorded by a clock that was ahead (or copied in from
    /// one): it is set aside and never decides a night (#51). Small enough that a dose dated tomorrow, or
    /// in 2199, never blocks tonight; large enough for two processes' clocks a little apart.
    public static let futureTolerance: TimeInterval = 5 * 60
    /// A Dose 1 set aside and dated less than this after now could be tonight's, taken while the clock was ahead
    /// by up to a time zone's offset: no new Dose 1 is recorded until a person has discarded it (never two Dose 1s
    /// because a clock was wrong). One dated further ahead (tomorrow, 2199) blocks nothing.
    public static let nearFutureDose1: TimeInterval = 12 * 3600
}

/// A calendar date, "YYYY-MM-DD", as a night is named.
public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var text: String
        public var description: String { "invalid date '\(text)': expected YYYY-MM-DD" }
    }

    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (1...12).contains(m), (1...31).contains(d)
        else { throw ParseError(text: text) }
        guard d <= CivilTime.daysInMonth(year: y, month: m) else { throw ParseError(text: text) }
        year = y
        month = m
        day = d
    }

    public var description: String {
        "\(year.zeroPadded(4))-\(month.zeroPadded(2))-\(day.zeroPadded(2))"
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }

    /// The date `days` later (or earlier, when negative).
    public func adding(days: Int) -> LocalDate {
        let moved = CivilTime.date(days: CivilTime.days(year: year, month: month, day: day) + days)
        return LocalDate(year: moved.year, month: moved.month, day: moved.day)
    }

    /// The night an instant belongs to: its local date, or the day before when before 18:00.
    public static func night(of instant: Date, in timeZone: TimeZone) -> LocalDate {
        let c = CivilTime(instant, in: timeZone)
        let date = LocalDate(year: c.year, month: c.month, day: c.day)
        return c.hour < DoseRules.nightStartHour ? date.adding(days: -1) : date
    }
}
