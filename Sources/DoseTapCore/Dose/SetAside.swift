import Foundation

/// What every face says of an event set aside because it is dated in the future (#51): when it is dated,
/// that it does not count, and the command that discards exactly that event.
public enum SetAsideNotice {
    /// The first 8 hexadecimal digits of an event's id, lower case: what `dosetap dose discard` takes (the
    /// whole id works too).
    public static func shortID(_ id: UUID) -> String {
        String(id.uuidString.prefix(8)).lowercased()
    }

    /// "2026-12-08 23:10" in `zone`.
    public static func dated(_ at: Date, in zone: TimeZone) -> String {
        let c = CivilTime(at, in: zone)
        return "\(c.year.zeroPadded(4))-\(c.month.zeroPadded(2))-\(c.day.zeroPadded(2)) \(ClockText(timeZone: zone).time(at))"
    }

    /// How far after now, in words: "38 min", "23 h", "62 days", "172 years".
    public static func ahead(_ at: Date, of now: Date) -> String {
        let seconds = max(0, at.timeIntervalSince(now))
        let minutes = Int((seconds / 60).rounded(.down))
        if minutes < 120 { return "\(minutes) min" }
        let hours = minutes / 60
        if hours < 48 { return "\(hours) h" }
        let days = hours / 24
        if days < 731 { return "\(days) days" }
        return "\(days / 365) years"
    }

    /// "Set aside: Dose 1 dated 2026-12-08 23:10 (23 h after now) — recorded while a clock was ahead; it does not
    /// count. Discard it: dosetap dose discard 1a2b3c4d". When the date has come since it was set aside, it says
    /// so instead of "after now".
    public static func sentence(_ event: DoseEvent, now: Date, in zone: TimeZone) -> String {
        let when = event.at > now ? "\(ahead(event.at, of: now)) after now" : "set aside when that was still in the future"
        return "Set aside: \(event.label) dated \(dated(event.at, in: zone)) (\(when)) — recorded while a clock was ahead; it does not count. Discard it: dosetap dose discard \(shortID(event.id))"
    }

    /// The one line `dose status` and the dashboard show above the night when several are set aside.
    public static func summary(_ events: [DoseEvent]) -> String {
        events.count == 1 ? "1 entry of the dose log is set aside" : "\(events.count) entries of the dose log are set aside"
    }
}
