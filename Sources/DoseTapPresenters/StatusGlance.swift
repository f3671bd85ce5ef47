import DoseTapCore
import Foundation

/// What a status bar shows at a glance (`dosetap status --format waybar|i3blocks`): tonight's dose window,
/// the next alarm when the battery will not last to it, and the battery nudge at the Dose 2 reminder.
/// Pure: the same inputs give the same glance, and `nextChange` says when the text would change on its
/// own (a minute passing, the window opening), so a follower waits for that instant or an event.
public struct StatusGlance: Sendable, Equatable {
    /// The bar's text: "💊 01:15" before the window (when it opens), "💊 open 42 min" in it.
    public var text: String
    /// A shorter text for narrow bars (i3blocks' `short_text`).
    public var shortText: String
    /// Every line of detail, for a tooltip.
    public var tooltip: String
    /// For styling: the dose phase (`idle`, `waiting`, `open`, `near-close`, `closed`, `completed`,
    /// `skipped`), then `alarm-critical` / `alarm-warning`, `battery-critical` / `battery-warning`, `store-trouble`
    /// (the running agent cannot write its data, #51).
    public var classes: [String]
    /// Something needs the person now: the window closes within 15 minutes, an alarm is at critical risk, or the
    /// agent cannot write its data.
    public var urgent: Bool
    /// When the text changes with no event (the next minute while counting down, the window opening).
    public var nextChange: Date?

    /// - Parameter storeProblem: the running agent's word that it cannot write its data (`AgentRecord.storeProblem`,
    ///   #51): "⚠" before the text, the sentence first in the tooltip, the class `store-trouble`, urgent.
    public static func make(night: NightStatus, nextAlarm: AlarmView?, reminderNudge: Nudge?, storeProblem: String? = nil) -> StatusGlance {
        let clock = ClockText(timeZone: night.timeZone)
        let now = night.now
        var text = "💊"
        var short = "💊"
        var tips: [String] = []
        var classes = [night.phase.rawValue]
        var urgent = false
        var next: Date?
        let session = night.session
        switch night.phase {
        case .idle:
            tips.append("No Dose 1 yet tonight (night of \(night.nightDate)).")
        case .waiting:
            if let s = session {
                text += " " + clock.time(s.windowOpensAt)
                short = text
                next = s.windowOpensAt
            }
        case .open, .nearClose:
            let left = night.minutesRemaining ?? 0
            text += " open \(left) min"
            short = "💊 \(left)m"
            urgent = night.phase == .nearClose
            // minutesRemaining rounds up: the text changes when a whole minute before the close passes.
            if let s = session { next = Self.nextMinuteStep(before: s.windowClosesAt, now: now) }
        case .closed:
            text += " closed"
            short = text
            if let s = session { next = s.windowClosesAt.addingTimeInterval(DoseRules.lateGrace) }
        case .completed:
            text += " done"
            short = "💊 ✓"
        case .skipped:
            text += " skipped"
            short = text
        }
        if let s = session {
            var line = "Dose 1 at \(clock.time(s.dose1.at))"
            if let d2 = s.dose2 { line += " · Dose 2 at \(clock.time(d2.at))" }
            if [.waiting, .open, .nearClose, .closed].contains(night.phase) {
                line += " · window \(clock.time(s.windowOpensAt))–\(clock.time(s.windowClosesAt))"
            }
            tips.append(line)
            if let reminder = night.reminderAt, [.waiting, .open, .nearClose].contains(night.phase) {
                tips.append("Reminder at \(clock.time(reminder)) (snoozes left: \(night.snoozesLeft))")
            }
            if let reason = night.skipReason { tips.append("Skipped: \(reason.label)") }
        }
        if let nudge = reminderNudge, [.waiting, .open, .nearClose].contains(night.phase) {
            text += " 🔋"
            short += " 🔋"
            classes.append("battery-\(nudge.severity.rawValue)")
            tips.append("\(nudge.header): \(nudge.oneLine)")
        }
        if let alarm = nextAlarm, let at = alarm.nextAt {
            let label = DisplayText.escaped(alarm.alarm.label, maxLength: 40)
            let when = clock.time(at)
            if let nudge = alarm.nudge {
                text += " ⏰ \(when) " + (nudge.severity == .critical ? "at risk" : "low battery")
                short += " ⏰!"
                classes.append("alarm-\(nudge.severity.rawValue)")
                urgent = urgent || nudge.severity == .critical
                tips.append("Alarm \(when)\(label.isEmpty ? "" : " (\(label))"): \(nudge.header). \(nudge.oneLine)")
                if let powerOff = nudge.powerOff { tips.append(powerOff) }
            } else if let reason = alarm.cannotPredict {
                tips.append("Alarm \(when)\(label.isEmpty ? "" : " (\(label))"): \(reason)")
            } else {
                tips.append("Alarm \(when)\(label.isEmpty ? "" : " (\(label))"): the battery lasts.")
            }
        }
        if let storeProblem {
            // Doses cannot be recorded: the bar says so before anything else (the alarms still ring).
            text = "⚠ " + text
            short = "⚠ " + short
            tips.insert(DisplayText.escaped(storeProblem, maxLength: 400), at: 0)
            classes.append("store-trouble")
            urgent = true
        }
        return StatusGlance(text: text, shortText: short, tooltip: tips.joined(separator: "\n"), classes: classes,
                            urgent: urgent, nextChange: next)
    }

    /// The next instant `minutesRemaining` (rounded up) steps down: whole minutes before `end`.
    static func nextMinuteStep(before end: Date, now: Date) -> Date? {
        let remaining = end.timeIntervalSince(now)
        guard remaining > 0 else { return nil }
        let steps = (remaining / 60).rounded(.up) - 1
        let at = end.addingTimeInterval(-steps * 60)
        return at > now ? at : end
    }

    /// The next enabled alarm to ring (the earliest `nextAt`).
    public static func nextAlarm(_ alarms: [AlarmView]) -> AlarmView? {
        alarms.filter { $0.alarm.enabled && $0.nextAt != nil }.min { $0.nextAt! < $1.nextAt! }
    }

    /// How `dosetap status --format` prints it.
    public enum Format: String, Sendable, CaseIterable {
        /// The glance and its details, indented.
        case text
        case json
        case waybar
        case i3blocks
    }

    /// The line(s) `dosetap status --format` prints.
    public func rendered(_ format: Format) -> String {
        switch format {
        case .text:
            return ([text] + tooltip.split(separator: "\n").map { "  " + $0 }).joined(separator: "\n")
        case .json:
            return JSON.object([("text", .string(text)), ("shortText", .string(shortText)), ("tooltip", .string(tooltip)),
                                ("classes", .array(classes.map(JSON.string))), ("urgent", .bool(urgent))]).text
        case .waybar: return waybar.text
        case .i3blocks: return i3blocks.text
        }
    }

    /// waybar's custom module with `"return-type": "json"`: one object per line. Its classes are the glance's,
    /// and `urgent` when something needs the person now, so one CSS rule can catch every urgent state.
    public var waybar: JSON {
        .object([("text", .string(text)), ("alt", .string(classes.first ?? "idle")), ("tooltip", .string(tooltip)),
                 ("class", .array((classes + (urgent ? ["urgent"] : [])).map(JSON.string)))])
    }

    /// i3blocks with `format=json` (and `interval=persist` for --follow): one object per line, i3bar's keys
    /// only (a waybar-style line shows nothing there). The colour only adds to the words, which already say the
    /// state (never colour alone). `urgent` is the string "true": i3blocks 1.4's JSON reader keeps strings and
    /// numbers and silently drops the literals `true`/`false`, and exit code 33 (its other way to say urgent)
    /// cannot come from a block that never exits; each line replaces every key, so a calm line clears it.
    public var i3blocks: JSON {
        let color: String? =
            classes.contains("alarm-critical") || classes.contains("near-close") || classes.contains("store-trouble") ? "#FF6B6B"
            : classes.contains("alarm-warning") || classes.contains(where: { $0.hasPrefix("battery-") }) ? "#FFB347"
            : nil
        var fields: [(String, JSON)] = [("full_text", .string(text)), ("short_text", .string(shortText))]
        if let color { fields.append(("color", .string(color))) }
        if urgent { fields.append(("urgent", .string("true"))) }
        return .object(fields)
    }
}
