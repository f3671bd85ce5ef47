import DoseTapApp
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

    /// An alarm's backups (#12) as the page shows them: the list and the timing preview (or why there is none).
    struct Backups {
        var view: AlarmUseCases.BackupsView
        var preview: [(at: Date, target: BackupTarget)]
        var previewProblem: String?
    }

    static func render(alarms: [AlarmView], unusable: [String], warnings: [String], timeZone: TimeZone, csrf: String,
                       flash: Flash?, backups: [Int: Backups] = [:], ringing: Set<Int> = [], backupsRinging: [String] = []) -> String {
        var body = "<h1>Alarms</h1>"
        body += "<div id=\"announce\" role=\"status\" aria-live=\"polite\">\(flash.map(TonightPage.renderFlash) ?? "")</div>"
        body += HTML.live("alarms", fragment(alarms: alarms, unusable: unusable, warnings: warnings, timeZone: timeZone, csrf: csrf,
                                             backups: backups, ringing: ringing, backupsRinging: backupsRinging))
        body += """
            <h2>Add an alarm</h2>
            <form method="post" action="/alarms/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            \(fields(prefix: "new", time: "", label: "Alarm", repetition: "once"))
            <button type="submit" class="primary">Add alarm</button>
            </form>
            """
        return HTML.page(title: "Alarms", current: "/alarms", body: body)
    }

    /// The live part: a household member's alarm ringing here as its backup, the wake and sound warnings, the
    /// alarms (ringing, next occurrence, the battery card), the unreadable rows.
    static func fragment(alarms: [AlarmView], unusable: [String], warnings: [String], timeZone: TimeZone, csrf: String,
                         backups: [Int: Backups], ringing: Set<Int>, backupsRinging: [String] = []) -> String {
        var body = ""
        for line in backupsRinging {
            body += "<p class=\"ringing\"><strong>\(HTML.escape(line, maxLength: 300))</strong> Stop it with a button, the notification or dosetap alarm stop.</p>"
        }
        if !warnings.isEmpty, alarms.contains(where: \.alarm.enabled) {
            body += "<div class=\"nudge warning\" role=\"note\"><p class=\"nudge-header\"><strong>Warning</strong></p>"
                + warnings.map { "<p>\(HTML.escape($0, maxLength: 1000))</p>" }.joined() + "</div>"
        }
        if alarms.isEmpty {
            body += "<p>No alarms yet.</p>"
        } else {
            body += "<ul class=\"alarms\">" + alarms.map {
                row($0, timeZone: timeZone, csrf: csrf, backups: backups[$0.alarm.id], ringing: ringing.contains($0.alarm.id))
            }.joined() + "</ul>"
        }
        for line in unusable {
            body += "<p class=\"refusal\">\(HTML.escape(line, maxLength: 300))</p>"
        }
        return body
    }

    /// `edit`: the form of an alarm that exists. Its label field shows control characters escaped (`\x1b`); what
    /// it showed goes along (`label-shown`), so a label sent back unchanged is kept exact, never rewritten into
    /// its escaped text (#25).
    static func fields(prefix: String, time: String, label: String, repetition: String, edit: Bool = false) -> String {
        let shown = "<input type=\"hidden\" name=\"label-shown\" value=\"\(HTML.escape(label))\">"
        var choices = repeatChoices
        if !choices.contains(where: { $0.0 == repetition }) { choices.append((repetition, repetition)) }
        let options = choices.map { value, title in
            "<option value=\"\(HTML.escape(value))\"\(value == repetition ? " selected" : "")>\(HTML.escape(title))</option>"
        }.joined()
        return """
            <label for="\(prefix)-time">Time</label>
            <input id="\(prefix)-time" name="time" type="time" required value="\(HTML.escape(time))">
            <label for="\(prefix)-label">Label</label>
            <input id="\(prefix)-label" name="label" type="text" maxlength="64" value="\(HTML.escape(label))">\(edit ? shown : "")
            <label for="\(prefix)-repeat">Repeat</label>
            <select id="\(prefix)-repeat" name="repeat">\(options)</select>
            """
    }

    static func row(_ view: AlarmView, timeZone: TimeZone, csrf: String, backups: Backups? = nil, ringing: Bool = false) -> String {
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
        if ringing {
            out += "<p class=\"ringing\"><strong>Ringing now.</strong> Stop it with a button, the notification or dosetap alarm stop.</p>"
        }
        out += "<p>\(HTML.escape(repeatTitle(alarm.repetition.description))) · \(alarm.enabled ? "On" : "Off") · \(HTML.escape(next))</p>"
        if let nudge = view.nudge {
            out += """
                <div class="nudge \(nudge.severity == .critical ? "critical" : "warning")"><p class="nudge-header"><strong>\(HTML.escape(nudge.header))</strong></p>
                <p>\(HTML.escape(nudge.headline))</p><p class="nudge-action">\(HTML.escape(nudge.action))</p>\(nudge.powerOff.map { "<p>\(HTML.escape($0))</p>" } ?? "")\(nudge.assumption.map { "<p class=\"nudge-assumption\">Assuming: \(HTML.escape($0, maxLength: 300))</p>" } ?? "")\(nudge.deadlineText.map { "<p class=\"nudge-deadline\">\(HTML.escape($0))</p>" } ?? "")</div>
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
            \(fields(prefix: "alarm-\(id)", time: alarm.time.description, label: alarm.label, repetition: alarm.repetition.description,
                   edit: true))
            <button type="submit">Save</button></form></details>
            <details><summary>Delete \(label)…</summary>
            <form method="post" action="/alarms/\(id)/delete">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="confirm" value="yes">
            <button type="submit">Yes, delete the \(HTML.escape(alarm.time.description)) alarm</button></form></details>
            </div>\(backups.map { backupSection($0, label: label, timeZone: timeZone, csrf: csrf) } ?? "")</li>
            """
        return out
    }

    static func repeatTitle(_ value: String) -> String {
        repeatChoices.first { $0.0 == value }?.1 ?? value
    }

    /// The Backup section of an alarm: on/off, the targets in order (move up, move down, delete), phone
    /// numbers formatted with "Calls with automated backup message", adding one, and the timing preview.
    static func backupSection(_ b: Backups, label: String, timeZone: TimeZone, csrf: String) -> String {
        let id = b.view.alarm.id
        let base = "/alarms/\(id)/backup"
        func form(_ verb: String, _ fields: String, _ button: String) -> String {
            "<form method=\"post\" action=\"\(base)/\(verb)\" class=\"action\">\(HTML.hiddenCSRF(csrf))\(fields)<button type=\"submit\">\(button)</button></form>"
        }
        func hidden(_ target: BackupTarget) -> String {
            "<input type=\"hidden\" name=\"target\" value=\"\(HTML.escape(target.description, maxLength: 300))\">"
        }
        var out = "<section class=\"backup\" aria-labelledby=\"backup-\(id)\"><h3 id=\"backup-\(id)\">Backup of \(label): \(b.view.enabled ? "On" : "Off")</h3>"
        out += "<p class=\"note\">When this machine cannot ring (off, asleep, out of battery), the backups ring in turn.</p>"
        out += form(b.view.enabled ? "off" : "on", "", "Turn backup \(b.view.enabled ? "off" : "on") for \(label)")
        if b.view.targets.isEmpty {
            out += "<p>No backups yet.</p>"
        } else {
            out += "<ol class=\"targets\">"
            for (n, target) in b.view.targets.enumerated() {
                let name = HTML.escape(target.displayName, maxLength: 120)
                out += "<li class=\"target\"><p><strong>\(name)</strong> <span class=\"note\">(\(HTML.escape(target.kind)))</span></p>"
                if let sub = target.sublabel { out += "<p class=\"sublabel\">\(HTML.escape(sub))</p>" }
                out += "<div class=\"target-actions\">"
                if n > 0 { out += form("move", hidden(target) + "<input type=\"hidden\" name=\"to\" value=\"\(n)\">", "Move \(name) up") }
                if n < b.view.targets.count - 1 {
                    out += form("move", hidden(target) + "<input type=\"hidden\" name=\"to\" value=\"\(n + 2)\">", "Move \(name) down")
                }
                out += "<details><summary>Delete \(name)…</summary>"
                    + form("remove", hidden(target) + "<input type=\"hidden\" name=\"confirm\" value=\"yes\">", "Yes, delete backup \(name)")
                    + "</details></div></li>"
            }
            out += "</ol>"
        }
        out += """
            <details><summary>Add a backup to \(label)</summary>
            <form method="post" action="\(base)/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            <label for="backup-\(id)-kind">Kind</label>
            <select id="backup-\(id)-kind" name="kind"><option value="device">Another DoseTap device (its name)</option><option value="push">A phone notification (ntfy URL)</option><option value="phone">A phone call (number)</option></select>
            <label for="backup-\(id)-value">Device name, ntfy URL or phone number</label>
            <input id="backup-\(id)-value" name="value" type="text" required maxlength="300" autocomplete="off">
            <button type="submit">Add backup</button></form></details>
            """
        out += "<h4>Timing</h4>"
        if let problem = b.previewProblem {
            out += "<p>\(HTML.escape(problem, maxLength: 300))</p>"
        } else if b.preview.isEmpty {
            out += "<p>No backups: nothing would ring elsewhere.</p>"
        } else {
            let clock = ClockText(timeZone: timeZone)
            out += "<ul class=\"timing\">" + b.preview.map { "<li>\(HTML.escape(clock.time($0.at))) — \(HTML.escape($0.target.action, maxLength: 200))</li>" }.joined() + "</ul>"
            if !b.view.enabled { out += "<p class=\"note\">Backup is off: none of these will ring until it is turned on.</p>" }
        }
        return out + "</section>"
    }
}
