import DoseTapAgent
import DoseTapCore
import Foundation

/// The alarm screen of the seed: each alarm with its next occurrence and, when the battery will not last
/// to it, the nudge card (critical red "Alarm at Risk", warning orange "Low Battery Warning"; nothing when
/// safe — the header's words say it, not only the colour); add, edit, turn on or off, delete with a
/// confirmation; the wake-from-suspend warning.
enum AlarmsPage {
    /// Values as the use case spells them back (its own order of days), so the current one is selected.
    static let repeatChoices: [(String, String)] = [
        ("once", "Once"), ("daily", "Every day"),
        (canonical("mon,tue,wed,thu,fri"), "Weekdays"), (canonical("sat,sun"), "Weekends"),
    ]

    static func canonical(_ text: String) -> String { (try? AlarmRepeat(parsing: text))?.description ?? text }

    static func render(alarms: [AlarmView], unusable: [String], wakeProblem: String?, timeZone: TimeZone, csrf: String,
                       flash: Flash?) -> String {
        var body = "<h1>Alarms</h1>"
        body += "<div id=\"announce\" role=\"status\" aria-live=\"polite\">\(flash.map(TonightPage.renderFlash) ?? "")</div>"
        if let wakeProblem, alarms.contains(where: \.alarm.enabled) {
            body += "<div class=\"nudge warning\" role=\"note\"><p class=\"nudge-header\"><strong>Warning</strong></p><p>\(HTML.escape(wakeProblem, maxLength: 1000))</p></div>"
        }
        if alarms.isEmpty {
            body += "<p>No alarms yet.</p>"
        } else {
            body += "<ul class=\"alarms\">" + alarms.map { row($0, timeZone: timeZone, csrf: csrf) }.joined() + "</ul>"
        }
        for line in unusable {
            body += "<p class=\"refusal\">\(HTML.escape(line, maxLength: 300))</p>"
        }
        body += """
            <h2>Add an alarm</h2>
            <form method="post" action="/alarms/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            \(fields(prefix: "new", time: "", label: "Alarm", repetition: "once"))
            <button type="submit" class="primary">Add alarm</button>
            </form>
            """
        return HTML.page(title: "Alarms", current: "/alarms", body: body)
    }

    static func fields(prefix: String, time: String, label: String, repetition: String) -> String {
        var choices = repeatChoices
        if !choices.contains(where: { $0.0 == repetition }) { choices.append((repetition, repetition)) }
        let options = choices.map { value, title in
            "<option value=\"\(HTML.escape(value))\"\(value == repetition ? " selected" : "")>\(HTML.escape(title))</option>"
        }.joined()
        return """
            <label for="\(prefix)-time">Time</label>
            <input id="\(prefix)-time" name="time" type="time" required value="\(HTML.escape(time))">
            <label for="\(prefix)-label">Label</label>
            <input id="\(prefix)-label" name="label" type="text" maxlength="64" value="\(HTML.escape(label))">
            <label for="\(prefix)-repeat">Repeat</label>
            <select id="\(prefix)-repeat" name="repeat">\(options)</select>
            """
    }

    static func row(_ view: AlarmView, timeZone: TimeZone, csrf: String) -> String {
        let alarm = view.alarm
        let id = alarm.id
        let label = HTML.escape(alarm.label)
        var next = "Off"
        if let nextAt = view.nextAt {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = timeZone
            f.dateFormat = "EEE d MMM, HH:mm"
            next = "Next: " + f.string(from: nextAt)
        }
        var out = "<li class=\"alarm\" id=\"alarm-\(id)\"><h2>\(HTML.escape(alarm.time.description)) <span class=\"label\">\(label)</span></h2>"
        out += "<p>\(HTML.escape(repeatTitle(alarm.repetition.description))) · \(alarm.enabled ? "On" : "Off") · \(HTML.escape(next))</p>"
        if let nudge = view.nudge {
            out += """
                <div class="nudge \(nudge.severity == .critical ? "critical" : "warning")"><p class="nudge-header"><strong>\(HTML.escape(nudge.header))</strong></p>
                <p>\(HTML.escape(nudge.headline))</p><p class="nudge-action">\(HTML.escape(nudge.action))</p>\(nudge.powerOff.map { "<p>\(HTML.escape($0))</p>" } ?? "")</div>
                """
        } else if let reason = view.cannotPredict {
            out += "<p>Cannot predict the battery at this alarm yet: \(HTML.escape(reason, maxLength: 200))</p>"
        }
        if let missed = view.missedAt {
            out += "<p>Missed alarm \(HTML.escape(ClockText(timeZone: timeZone).time(missed)))</p>"
        }
        let toggle = alarm.enabled ? "disable" : "enable"
        out += """
            <div class="actions">
            <form method="post" action="/alarms/\(id)/\(toggle)">\(HTML.hiddenCSRF(csrf))<button type="submit">Turn \(alarm.enabled ? "off" : "on") \(label)</button></form>
            <details><summary>Edit \(label)</summary>
            <form method="post" action="/alarms/\(id)/edit" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            \(fields(prefix: "alarm-\(id)", time: alarm.time.description, label: alarm.label, repetition: alarm.repetition.description))
            <button type="submit">Save</button></form></details>
            <details><summary>Delete \(label)…</summary>
            <form method="post" action="/alarms/\(id)/delete">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="confirm" value="yes">
            <button type="submit">Yes, delete the \(HTML.escape(alarm.time.description)) alarm</button></form></details>
            </div></li>
            """
        return out
    }

    static func repeatTitle(_ value: String) -> String {
        repeatChoices.first { $0.0 == value }?.1 ?? value
    }
}
