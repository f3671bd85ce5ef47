import DoseTapCore
import Foundation

extension AlarmView {
    /// `{id, time, label, repeat, enabled, nextAt, nudge}`; `nudge` is `{severity, header, headline, action}`
    /// (plus `powerOff` when the prediction is at or below the machine's power-off level) or null. An
    /// enabled alarm that cannot be predicted yet adds `"forecast": {"risk": "unknown", "reason": …}`
    /// (its `nudge` stays null: unknown is not safe, and not a nudge either); a predicted one adds the
    /// forecast with the night it assumes (`BatteryForecast.json`: `assumption`, the drains used). An alarm with its own sound or
    /// vibration adds `sound`/`haptics`; one whose latest occurrence was missed adds `missedAt`. Every alarm has
    /// `deadline`, `deadlineWhy` and `nudgeWhy` (#52, `NudgeDecision.deadlineFields`: the deadline null when none
    /// applies, `nudgeWhy` null when no decision was made — an alarm that is off).
    public func json(in timeZone: TimeZone) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .int(alarm.id)),
            ("time", .string(alarm.time.description)),
            ("label", .string(alarm.label)),
            ("repeat", .string(alarm.repetition.description)),
            ("enabled", .bool(alarm.enabled)),
            ("nextAt", nextAt.map { .string($0.rfc3339(in: timeZone)) } ?? .null),
            ("nudge", nudge?.json ?? .null),
        ]
        if let cannotPredict {
            fields.append(("forecast", .object([("risk", .string("unknown")), ("reason", .string(cannotPredict))])))
        } else if let made = forecast?.forecastJSON(in: timeZone) {
            fields.append(("forecast", made))
        }
        // Its own sound and vibration, only when set (else the `alarm` event's).
        if let sound = alarm.sound { fields.append(("sound", .string(sound))) }
        if let haptics = alarm.haptics { fields.append(("haptics", .string(haptics.rawValue))) }
        if let missedAt { fields.append(("missedAt", .string(missedAt.rfc3339(in: timeZone)))) }
        // Last, so the keys before keep their order.
        fields += decision?.deadlineFields(in: timeZone) ?? NudgeDecision.noDeadlineFields(because: undecided ?? "no forecast")
        return .object(fields)
    }

    /// The lines under the alarm's line: its nudge (and the power-off fact), or that it cannot be
    /// predicted yet; nothing for a safe or disabled alarm.
    public var detailLines: [String] {
        if let nudge {
            return ["\(nudge.header): \(nudge.oneLine)"] + (nudge.powerOff.map { [$0] } ?? [])
                + (nudge.assumption.map { ["Assuming: \($0)"] } ?? []) + (nudge.deadlineText.map { [$0] } ?? [])
        }
        if let cannotPredict {
            return ["Cannot predict the battery at this alarm yet: \(DisplayText.escaped(cannotPredict, maxLength: 200))"]
        }
        return []
    }

    /// One line of the alarm screen: `1  06:30  daily  "Work"  next Tue 06:30` (off: `off`). Text from the
    /// person is shown escaped.
    public func line(in timeZone: TimeZone) -> String {
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
        if let sound = alarm.sound { text += "  sound \(DisplayText.escaped(sound))" }
        if let haptics = alarm.haptics { text += "  vibration \(haptics.rawValue)" }
        return text
    }
}
