import Foundation

/// An RFC 5545 calendar (`dosetap export ics`): events with display alarms, their times local to one
/// time zone described by a VTIMEZONE built from that zone's real transitions over the span covered.
///
/// The text rules: CRLF line endings; lines folded at 75 octets (a continuation starts with one space,
/// never inside a UTF-8 sequence); TEXT values escape `\`, `;`, `,` and line breaks, and user text
/// (an alarm's label) has its control and invisible format characters shown as visible escapes
/// (`DisplayText`), so no raw control character reaches a calendar.
public enum ICalendar {
    /// A display alarm of an event: `offset` seconds from the event's start (negative: before it).
    public struct Reminder: Sendable, Equatable {
        public var offset: TimeInterval
        public var text: String
        public init(offset: TimeInterval, text: String) {
            self.offset = offset
            self.text = text
        }
    }

    public struct Event: Sendable, Equatable {
        /// Stable across exports (a calendar that imports the file again updates the event, never duplicates it).
        public var uid: String
        public var start: Date
        public var end: Date
        public var summary: String
        public var description: String?
        public var reminders: [Reminder]

        public init(uid: String, start: Date, end: Date, summary: String, description: String? = nil, reminders: [Reminder]) {
            self.uid = uid
            self.start = start
            self.end = end
            self.summary = summary
            self.description = description
            self.reminders = reminders
        }
    }

    public static let productID = "-//DoseTap//dosetap export ics//EN"

    /// The whole calendar: VCALENDAR, one VTIMEZONE for `timeZone`, the events in the order given.
    public static func document(_ events: [Event], timeZone: TimeZone, stamp: Date, name: String = "DoseTap") -> String {
        let tzid = identifier(timeZone)
        var lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:\(productID)", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
                     "X-WR-CALNAME:\(text(name))"]
        let instants = events.flatMap { [$0.start, $0.end] }
        let from = instants.min() ?? stamp
        let to = instants.max() ?? stamp
        lines += timeZoneLines(timeZone, tzid: tzid, from: min(from, stamp), to: max(to, stamp))
        for event in events {
            lines += ["BEGIN:VEVENT", "UID:\(text(event.uid))", "DTSTAMP:\(utc(stamp))",
                      "DTSTART\(dateTime(event.start, timeZone, tzid))", "DTEND\(dateTime(event.end, timeZone, tzid))",
                      "SUMMARY:\(userText(event.summary))"]
            if let description = event.description { lines.append("DESCRIPTION:\(userText(description))") }
            lines.append("TRANSP:TRANSPARENT")
            for reminder in event.reminders {
                lines += ["BEGIN:VALARM", "ACTION:DISPLAY", "DESCRIPTION:\(userText(reminder.text))",
                          "TRIGGER:\(duration(reminder.offset))", "END:VALARM"]
            }
            lines.append("END:VEVENT")
        }
        lines.append("END:VCALENDAR")
        return lines.map { fold($0) + "\r\n" }.joined()
    }

    // MARK: Values

    /// TEXT escaping (RFC 5545 §3.3.11): `\` `;` `,` escaped, a line break as `\n`.
    public static func text(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\n": out += "\\n"
            case "\r": continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// User text (labels): line breaks kept as `\n`, every other control or invisible format character
    /// as a visible escape, then TEXT escaping.
    public static func userText(_ value: String) -> String {
        let lines = value.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        return text(lines.map { DisplayText.escaped($0, maxLength: 1000, doublingBackslashes: false) }.joined(separator: "\n"))
    }

    /// A content line folded at 75 octets: continuation lines start with a space (which counts), and a
    /// UTF-8 sequence is never cut.
    public static func fold(_ line: String) -> String {
        var out = ""
        var octets = 0
        for scalar in line.unicodeScalars {
            let size = String(scalar).utf8.count
            if octets + size > 75 {
                out += "\r\n "
                octets = 1
            }
            out.unicodeScalars.append(scalar)
            octets += size
        }
        return out
    }

    /// A duration (RFC 5545 §3.3.6): `PT0S`, `PT15M`, `-PT2H30M`; whole seconds.
    public static func duration(_ seconds: TimeInterval) -> String {
        let total = Int(seconds.rounded())
        let magnitude = abs(total)
        let (h, m, s) = (magnitude / 3600, magnitude % 3600 / 60, magnitude % 60)
        var out = total < 0 ? "-PT" : "PT"
        if h > 0 { out += "\(h)H" }
        if m > 0 { out += "\(m)M" }
        if s > 0 || magnitude == 0 { out += "\(s)S" }
        return out
    }

    /// A UTC date-time: `20261124T063000Z`.
    public static func utc(_ date: Date) -> String {
        basic(date) + "Z"
    }

    /// `;TZID=…:YYYYMMDDTHHMMSS` (local time), or `:…Z` (UTC) for an instant in the second showing of a
    /// repeated hour: a TZID-relative time that occurs twice means the first (§3.3.5), which would be an
    /// hour early.
    public static func dateTime(_ date: Date, _ timeZone: TimeZone, _ tzid: String) -> String {
        if isSecondShowing(date, timeZone) { return ":" + utc(date) }
        return ";TZID=\(parameter(tzid)):" + basic(date.addingTimeInterval(TimeInterval(timeZone.secondsFromGMT(for: date))))
    }

    /// Whether an earlier instant shows the same local wall-clock time (a fall-back night's second 01:30).
    public static func isSecondShowing(_ date: Date, _ timeZone: TimeZone) -> Bool {
        let offset = timeZone.secondsFromGMT(for: date)
        for back in [1800.0, 3600, 7200, 10800] {
            let other = timeZone.secondsFromGMT(for: date.addingTimeInterval(-back))
            guard other > offset else { continue }
            let earlier = date.addingTimeInterval(-TimeInterval(other - offset))
            if timeZone.secondsFromGMT(for: earlier) == other { return true }
        }
        return false
    }

    /// The wall-clock digits of `date` read as UTC: `YYYYMMDDTHHMMSS`.
    public static func basic(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// The zone's identifier as a TZID: its name when it is plain (`Europe/Paris`, `GMT+0330`), other
    /// characters replaced by `_`.
    public static func identifier(_ timeZone: TimeZone) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-.".unicodeScalars)
        let id = String(String.UnicodeScalarView(timeZone.identifier.unicodeScalars.map { allowed.contains($0) ? $0 : "_" }))
        return id.isEmpty ? "DoseTap-Local" : id
    }

    /// A parameter value: quoted when it holds `:`, `;` or `,` (an identifier never holds `"`).
    static func parameter(_ value: String) -> String {
        value.contains(where: { ":;,".contains($0) }) ? "\"\(value)\"" : value
    }

    /// `+0100`, `-0430`, `+053328` (seconds only when there are some).
    static func offset(_ seconds: Int) -> String {
        let sign = seconds < 0 ? "-" : "+"
        let magnitude = abs(seconds)
        var out = sign + String(format: "%02d%02d", magnitude / 3600, magnitude % 3600 / 60)
        if magnitude % 60 != 0 { out += String(format: "%02d", magnitude % 60) }
        return out
    }

    // MARK: VTIMEZONE

    /// One observance: the offset from `onset` on, until the next.
    public struct Observance: Sendable, Equatable {
        public var onset: Date?
        public var from: Int
        public var to: Int
        public var daylight: Bool
        public var name: String?
    }

    /// The observances in force from `from` to `to`: the one in force at `from` (with its real onset when
    /// a transition happened in the 400 days before; else a fixed onset in 1970), then every transition
    /// up to `to`, each as its own STANDARD or DAYLIGHT with one DTSTART (no RRULE: exact for the span,
    /// whatever the zone's rules did in other years).
    public static func observances(_ timeZone: TimeZone, from: Date, to: Date) -> [Observance] {
        func observance(at transition: Date?, instant: Date) -> Observance {
            let after = timeZone.secondsFromGMT(for: instant)
            let before = transition.map { timeZone.secondsFromGMT(for: $0.addingTimeInterval(-1)) } ?? after
            return Observance(onset: transition, from: before, to: after, daylight: timeZone.isDaylightSavingTime(for: instant),
                              name: timeZone.abbreviation(for: instant))
        }
        var lastBefore: Date?
        var cursor = from.addingTimeInterval(-400 * 86_400)
        var guardCount = 0
        while let next = timeZone.nextDaylightSavingTimeTransition(after: cursor), next <= from, guardCount < 100 {
            lastBefore = next
            cursor = next
            guardCount += 1
        }
        var result = [observance(at: lastBefore, instant: from)]
        cursor = from
        guardCount = 0
        while let next = timeZone.nextDaylightSavingTimeTransition(after: cursor), next <= to, guardCount < 100 {
            if timeZone.secondsFromGMT(for: next) != timeZone.secondsFromGMT(for: next.addingTimeInterval(-1)) {
                result.append(observance(at: next, instant: next))
            }
            cursor = next
            guardCount += 1
        }
        return result
    }

    public static func timeZoneLines(_ timeZone: TimeZone, tzid: String, from: Date, to: Date) -> [String] {
        var lines = ["BEGIN:VTIMEZONE", "TZID:\(text(tzid))"]
        for o in observances(timeZone, from: from, to: to) {
            let kind = o.daylight ? "DAYLIGHT" : "STANDARD"
            // The onset is a local time in the offset that was in force before it (TZOFFSETFROM).
            let onset = o.onset.map { basic($0.addingTimeInterval(TimeInterval(o.from))) } ?? "19700101T000000"
            lines += ["BEGIN:\(kind)", "DTSTART:\(onset)", "TZOFFSETFROM:\(offset(o.from))", "TZOFFSETTO:\(offset(o.to))"]
            if let name = o.name, !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }) {
                lines.append("TZNAME:\(text(name))")
            }
            lines.append("END:\(kind)")
        }
        lines.append("END:VTIMEZONE")
        return lines
    }
}
