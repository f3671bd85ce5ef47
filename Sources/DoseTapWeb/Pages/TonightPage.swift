import DoseTapCore
import Foundation

/// What the page says after an action: the confirmation or the refusal (the use case's own words), and
/// the battery nudge after a Dose 1.
struct Flash: Codable, Equatable {
    var recorded: Bool
    var message: String
    var nudgeSeverity: String?
    var nudgeHeader: String?
    var nudgeHeadline: String?
    var nudgeAction: String?
    var nudgePowerOff: String?
    /// "saved" for settings (alarms): "Saved:" / "Not saved:" instead of "Recorded:" / "Not recorded:".
    var verb: String?
    /// A second line: "Timer is running, changes will apply next time", "Not supported on this device …".
    var note: String?

    init(recorded: Bool, message: String, nudge: Nudge? = nil, verb: String? = nil, note: String? = nil) {
        self.verb = verb
        self.note = note
        self.recorded = recorded
        self.message = message
        nudgeSeverity = nudge?.severity.rawValue
        nudgeHeader = nudge?.header
        nudgeHeadline = nudge?.headline
        nudgeAction = nudge?.action
        nudgePowerOff = nudge?.powerOff
    }
}

enum TonightPage {
    static func phaseText(_ phase: DosePhase) -> String {
        switch phase {
        case .idle: "No Dose 1 yet"
        case .waiting: "Waiting for the Dose 2 window"
        case .open: "Dose 2 window open"
        case .nearClose: "Dose 2 window closing soon"
        case .closed: "Dose 2 window closed"
        case .completed: "Both doses taken"
        case .skipped: "Dose 2 skipped"
        }
    }

    static func render(status: NightStatus, csrf: String, flash: Flash?) -> String {
        HTML.page(title: "Tonight", current: "/", body: """
            <h1>Tonight</h1>
            <div id="announce" role="status" aria-live="polite">\(flash.map(renderFlash) ?? "")</div>
            \(live(fragment(status: status, csrf: csrf)))
            """)
    }

    /// The live part with its version, so the live stream sends only what the page does not show yet.
    static func live(_ fragment: String) -> String {
        "<div id=\"tonight\" data-version=\"\(version(fragment))\">\(fragment)</div>"
    }

    /// A short fingerprint of a fragment (FNV-1a, 64 bits): equal text, equal version.
    static func version(_ fragment: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in fragment.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    static func renderFlash(_ flash: Flash) -> String {
        let word = flash.verb == "saved" ? ("Saved", "Not saved") : ("Recorded", "Not recorded")
        var out = flash.recorded
            ? "<p class=\"confirmation\"><strong>\(word.0):</strong> \(HTML.escape(flash.message))</p>"
            : "<p class=\"refusal\"><strong>\(word.1):</strong> \(HTML.escape(flash.message))</p>"
        if let note = flash.note { out += "<p class=\"note\"><strong>Note:</strong> \(HTML.escape(note))</p>" }
        if let header = flash.nudgeHeader, let headline = flash.nudgeHeadline, let action = flash.nudgeAction {
            let severity = flash.nudgeSeverity == "critical" ? "critical" : "warning"
            out += """
                <div class="nudge \(severity)"><p class="nudge-header"><strong>\(HTML.escape(header))</strong></p>
                <p>\(HTML.escape(headline))</p><p class="nudge-action">\(HTML.escape(action))</p>\(flash.nudgePowerOff.map { "<p>\(HTML.escape($0))</p>" } ?? "")</div>
                """
        }
        return out
    }

    /// The live part: the night's facts and the actions that make sense now (all of them are always
    /// submitted to the use case, which gives the same refusals as the command line).
    static func fragment(status: NightStatus, csrf: String) -> String {
        let clock = ClockText(timeZone: status.timeZone)
        var rows: [(String, String)] = [("Night of", status.nightDate.description), ("Phase", phaseText(status.phase))]
        if let s = status.session {
            rows.append(("Dose 1", clock.time(s.dose1.at)))
            if let d2 = s.dose2 {
                rows.append(("Dose 2", "\(clock.time(d2.at)) (\(s.intervalMinutes ?? 0) min\(s.isLate ? ", late" : ", on time"))"))
            }
            rows.append(("Window opens", clock.time(s.windowOpensAt)))
            rows.append(("Window closes", clock.time(s.windowClosesAt)))
        }
        if let reminder = status.reminderAt { rows.append(("Reminder", clock.time(reminder))) }
        if let left = status.minutesRemaining { rows.append(("Minutes left", "\(left) min")) }
        if status.session != nil, [.waiting, .open, .nearClose].contains(status.phase) {
            rows.append(("Snoozes left", "\(status.snoozesLeft)"))
        }
        if let reason = status.skipReason { rows.append(("Skipped", reason.label)) }
        let facts = "<dl class=\"facts\">" + rows.map { "<dt>\(HTML.escape($0.0))</dt><dd>\(HTML.escape($0.1))</dd>" }.joined() + "</dl>"

        func action(_ path: String, _ label: String, extra: String = "", cls: String = "") -> String {
            "<form method=\"post\" action=\"\(path)\" class=\"action\">\(HTML.hiddenCSRF(csrf))\(extra)<button type=\"submit\"\(cls.isEmpty ? "" : " class=\"\(cls)\"")>\(HTML.escape(label))</button></form>"
        }
        var actions: [String] = []
        switch status.phase {
        case .idle: actions.append(action("/tonight/take", "Take Dose 1", cls: "primary"))
        case .waiting, .open, .nearClose: actions.append(action("/tonight/take", "Take Dose 2", cls: "primary"))
        case .closed:
            actions.append(action("/tonight/take", "Take late Dose 2 (confirm: not on time)",
                                  extra: "<input type=\"hidden\" name=\"late\" value=\"yes\">", cls: "primary"))
        case .completed, .skipped: break
        }
        // Snooze and Undo name the event they act on: a second submit of the same form does nothing.
        func event(_ id: UUID) -> String { "<input type=\"hidden\" name=\"event\" value=\"\(id.uuidString)\">" }
        if [.waiting, .open, .nearClose].contains(status.phase), let setter = status.reminderSetBy {
            actions.append(action("/tonight/snooze", "Snooze 10 min", extra: event(setter.id)))
        }
        if [.waiting, .open, .nearClose, .closed].contains(status.phase) {
            actions.append("""
                <details class="skip-dose"><summary>Skip Dose 2…</summary>
                <form method="post" action="/tonight/skip">\(HTML.hiddenCSRF(csrf))
                <label for="skip-reason">Reason (optional)</label>
                <select id="skip-reason" name="reason"><option value="">No reason</option>\(
                    SkipReason.userChoices.map { "<option value=\"\($0.rawValue)\">\(HTML.escape($0.label))</option>" }.joined())</select>
                <button type="submit">Skip Dose 2 tonight</button>
                </form></details>
                """)
        }
        if let last = status.lastAction {
            actions.append(action("/tonight/undo", "Undo last action (5 s)", extra: event(last.id)))
        }
        // Entries dated in the future (#51): named, with what they are, and a Discard of exactly that one.
        let setAside = status.setAside.map { entry in
            "<div class=\"nudge warning set-aside\"><p>\(HTML.escape(SetAsideNotice.sentence(entry, now: status.now, in: status.timeZone)))</p>"
                + action("/tonight/discard", "Discard this \(entry.label) entry", extra: event(entry.id)) + "</div>"
        }.joined()
        return setAside + facts + "<div class=\"actions\">" + actions.joined() + "</div>"
    }
}

extension SkipReason {
    /// The reasons a person chooses (the agent's own are not offered).
    static let userChoices: [SkipReason] = [.alert, .sideEffects, .other]
}
