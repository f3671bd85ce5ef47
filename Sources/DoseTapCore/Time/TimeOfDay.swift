import Foundation

/// A local wall-clock time of day, "HH:MM", such as an alarm at 05:30.
public struct TimeOfDay: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var text: String
        public init(text: String) { self.text = text }
        public var description: String {
            "invalid time '\(text)': expected HH:MM with hours 00–23 and minutes 00–59"
        }
    }

    public init(hour: Int, minute: Int) throws(ParseError) {
        guard (0...23).contains(hour), (0...59).contains(minute) else {
            throw ParseError(text: "\(hour):\(minute)")
        }
        self.hour = hour
        self.minute = minute
    }

    /// Accepts "H:MM" or "HH:MM", nothing else.
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
              (1...2).contains(parts[0].count), parts[1].count == 2,
              parts[0].allSatisfy(\.isASCIIDigit), parts[1].allSatisfy(\.isASCIIDigit),
              let h = Int(parts[0]), let m = Int(parts[1]),
              (0...23).contains(h), (0...59).contains(m)
        else { throw ParseError(text: text) }
        hour = h
        minute = m
    }

    public var description: String {
        (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }

    /// The first moment strictly after `now` at which local clocks in `timeZone` first show this time on their
    /// day. On a spring-forward night a time that does not exist rings at the first moment after the gap (02:30 →
    /// 03:00); a time a fall-back night shows twice counts at its first showing only: once that is past, the next
    /// occurrence is the next day's. Offsets with seconds (a POSIX TZ such as `XXX-0:00:17`) are followed as they
    /// are. Day arithmetic on the zone's offsets (`LocalInstants.swift`), no `Calendar` (#29).
    public func nextOccurrence(after now: Date, in timeZone: TimeZone) -> Date {
        let today = CivilTime.localDays(of: now, in: timeZone)
        // Yesterday too: a zone that sets its clock back over midnight shows yesterday's date after `now`.
        for day in (today - 1)...(today + 3) {
            let at = firstInstant(onLocalDay: day, in: timeZone)
            if at > now { return at }
        }
        // Beyond any zone's jump (a day skipped, as Samoa did): a day after tomorrow's is ahead.
        return firstInstant(onLocalDay: today + 4, in: timeZone)
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
