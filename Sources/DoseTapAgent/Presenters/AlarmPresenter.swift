import DoseTapCore
import DoseTapLinux
import Foundation

extension AlarmView {
    /// `{id, time, label, repeat, enabled, nextAt, nudge}`; `nudge` is `{severity, header, headline, action}` or null.
    public func json(in timeZone: TimeZone = SystemTimeZone.current) -> JSON {
        .object([
            ("id", .int(alarm.id)),
            ("time", .string(alarm.time.description)),
            ("label", .string(alarm.label)),
            ("repeat", .string(alarm.repetition.description)),
            ("enabled", .bool(alarm.enabled)),
            ("nextAt", nextAt.map { .string($0.rfc3339(in: timeZone)) } ?? .null),
            ("nudge", nudge?.json ?? .null),
        ])
    }

    /// One line of the alarm screen: `1  06:30  daily  "Work"  next Tue 06:30` (off: `off`). Text from the
    /// person is shown escaped.
    public func line(in timeZone: TimeZone = SystemTimeZone.current) -> String {
        var text = "\(alarm.id)  \(alarm.time)  \(alarm.repetition)  \"\(DisplayText.escaped(alarm.label))\""
        if let nextAt {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = timeZone
            f.dateFormat = "EEE yyyy-MM-dd HH:mm"
            text += "  next \(f.string(from: nextAt))"
        } else {
            text += "  off"
        }
        return text
    }
}
