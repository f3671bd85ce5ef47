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

    /// The first moment strictly after `now` at which local clocks in `timeZone` show this time.
    /// On a spring-forward night a time that does not exist rings at the first moment after the gap.
    public func nextOccurrence(after now: Date, in timeZone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components = DateComponents(hour: hour, minute: minute, second: 0)
        if let next = calendar.nextDate(after: now, matching: components, matchingPolicy: .nextTime,
                                        repeatedTimePolicy: .first, direction: .forward) {
            return next
        }
        // Foundation finds nothing in a zone whose offset has seconds (a POSIX TZ such as `XXX-0:00:17`):
        // the arithmetic on the zone's offset, which is what such a zone is.
        return byOffset(after: now, in: timeZone)
    }

    /// The next instant strictly after `now` whose wall-clock time in `timeZone` is this one, from the zone's
    /// offset at that instant (the offset is re-read at the candidate, so a change of offset is followed).
    func byOffset(after now: Date, in timeZone: TimeZone) -> Date {
        let target = Double(hour * 3600 + minute * 60)
        var candidate = now
        for _ in 0..<3 {
            let offset = Double(timeZone.secondsFromGMT(for: candidate))
            let local = now.timeIntervalSince1970 + offset
            let midnight = (local / 86_400).rounded(.down) * 86_400
            var next = midnight + target - offset
            if next <= now.timeIntervalSince1970 { next += 86_400 }
            let found = Date(timeIntervalSince1970: next)
            if found == candidate { break }
            candidate = found
        }
        return candidate
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
