import DoseTapApp
import DoseTapCore
import Foundation

/// The seed's settings screens for sound and vibration: the global chime sound, haptics and intensity,
/// quiet mode, a preview with stop, and each event's overrides ("Use global default"), with what will
/// happen for it now — "No notification will occur" when nothing would — and "Not supported on this
/// device" for haptics without a vibration motor. The same use cases as `dosetap feedback …`.
enum SoundsPage {
    static func title(_ event: FeedbackEvent) -> String {
        switch event {
        case .doseWindowOpen: "Dose 2 window opens"
        case .doseReminder: "Dose 2 reminder"
        case .doseUrgent: "Dose 2 window closing (urgent)"
        case .doseClosed: "Dose 2 window closed"
        case .doseRecorded: "Dose recorded"
        case .actionRejected: "Action refused"
        case .batteryNudge: "Battery nudge"
        case .alarm: "Alarm"
        case .usageAlert: "Battery usage alert"
        }
    }

    static let notSupported = "Not supported on this device (no vibration motor found)."

    static func soundTitle(_ sound: SoundInfo) -> String {
        sound.name == SoundInfo.builtinBeepName ? "Built-in beep" : "\(sound.name) (\(sound.theme))"
    }

    static func options(_ choices: [(value: String, title: String)], selected: String) -> String {
        choices.map { value, title -> String in
            "<option value=\"\(HTML.escape(value))\"\(value == selected ? " selected" : "")>\(HTML.escape(title, maxLength: 120))</option>"
        }.joined()
    }

    static func select(id: String, name: String, label: String, _ choices: [(value: String, title: String)], selected: String,
                       describedBy: String? = nil) -> String {
        """
        <label for="\(id)">\(HTML.escape(label))</label>
        <select id="\(id)" name="\(name)"\(describedBy.map { " aria-describedby=\"\($0)\"" } ?? "")>\(options(choices, selected: selected))</select>
        """
    }

    static func render(feedback: SettingsUseCases.Feedback, plans: [FeedbackPlan], sounds: [SoundInfo], playing: String?,
                       csrf: String, flash: Flash?) -> String {
        let s = feedback.settings
        let soundChoices = sounds.map { (value: $0.name, title: soundTitle($0)) }
        var globalChoices = soundChoices
        globalChoices.append((value: "none", title: "No sound"))
        let globalSelected: String = switch s.global.sound {
        case .unset: SoundInfo.builtinBeepName
        case .off: "none"
        case .named(let name): name
        }
        if !globalChoices.contains(where: { $0.value == globalSelected }) {
            globalChoices.append((value: globalSelected, title: "\(globalSelected) (not installed)"))
        }
        let intensities = HapticIntensity.allCases.map { (value: $0.rawValue, title: $0.rawValue.capitalized) }
        let hapticsNote = feedback.hapticsSupported ? nil : "haptics-unsupported"
        var body = "<h1>Sounds &amp; vibration</h1>"
        body += "<div id=\"announce\" role=\"status\" aria-live=\"polite\">\(flash.map(TonightPage.renderFlash) ?? "")</div>"
        body += """
            <section aria-labelledby="global-title"><h2 id="global-title">Every event</h2>
            <form method="post" action="/sounds/global" class="settings-form">\(HTML.hiddenCSRF(csrf))
            \(select(id: "global-sound", name: "sound", label: "Sound", globalChoices, selected: globalSelected))
            \(select(id: "global-haptics", name: "haptics", label: "Vibration", [("on", "On"), ("off", "Off")],
                     selected: s.global.hapticsEnabled ? "on" : "off", describedBy: hapticsNote))
            \(feedback.hapticsSupported ? "" : "<p id=\"haptics-unsupported\" class=\"note\">\(HTML.escape(notSupported))</p>")
            \(select(id: "global-intensity", name: "intensity", label: "Vibration strength", intensities, selected: s.global.intensity.rawValue))
            \(select(id: "global-quiet", name: "quiet", label: "Quiet mode", [("off", "Off"), ("on", "On: sounds muted (urgent dose alerts and alarms still sound)")],
                     selected: feedback.quietMode ? "on" : "off"))
            <button type="submit" class="primary">Save</button>
            </form></section>
            """
        body += """
            <section aria-labelledby="preview-title"><h2 id="preview-title">Preview</h2>
            <p id="playing" role="status" aria-live="polite">\(playing.map { "Playing: \(HTML.escape($0, maxLength: 120))" } ?? "Nothing playing.")</p>
            <form method="post" action="/sounds/preview" class="settings-form">\(HTML.hiddenCSRF(csrf))
            \(select(id: "preview-sound", name: "sound", label: "Sound to hear", soundChoices, selected: playing ?? globalSelected))
            <button type="submit">Play</button></form>
            <form method="post" action="/sounds/stop" class="action">\(HTML.hiddenCSRF(csrf))<button type="submit">Stop</button></form>
            </section>
            """
        body += "<section aria-labelledby=\"events-title\"><h2 id=\"events-title\">Each event</h2><ul class=\"events\">"
        for plan in plans {
            body += event(plan, setting: s.event(plan.event), soundChoices: soundChoices, intensities: intensities,
                          hapticsSupported: feedback.hapticsSupported, csrf: csrf)
        }
        body += "</ul></section>"
        return HTML.page(title: "Sounds & vibration", current: "/sounds", body: body)
    }

    /// What will happen for the event now, in words.
    static func summary(_ plan: FeedbackPlan) -> String {
        guard plan.chime else { return "Silent (chime off)." }
        var parts: [String] = []
        if let sound = plan.sound { parts.append("sound \(soundTitle(sound))") } else if plan.muted { parts.append("sound muted by quiet mode") }
        if let haptics = plan.haptics { parts.append("vibration \(haptics.intensity.rawValue)") }
        return parts.isEmpty ? "Nothing." : "Plays: " + parts.joined(separator: ", ") + "."
    }

    static func event(_ plan: FeedbackPlan, setting: EventFeedback, soundChoices: [(value: String, title: String)],
                      intensities: [(value: String, title: String)], hapticsSupported: Bool, csrf: String) -> String {
        let name = plan.event.rawValue
        let id = "event-\(name)"
        var sounds = [(value: "default", title: "Use global default")] + soundChoices
        if let own = setting.sound, !sounds.contains(where: { $0.value == own }) {
            sounds.append((value: own, title: "\(own) (not installed)"))
        }
        var out = "<li class=\"event\" id=\"\(id)\"><h3>\(HTML.escape(title(plan.event)))</h3>"
        out += "<p class=\"summary\">\(HTML.escape(summary(plan), maxLength: 300))</p>"
        for warning in plan.warnings {
            let no = warning == FeedbackPlan.noNotificationWarning
            out += "<p class=\"nudge warning\"><strong>\(no ? "Warning:" : "Note:")</strong> \(HTML.escape(warning, maxLength: 300))</p>"
        }
        out += """
            <details><summary>Change \(HTML.escape(title(plan.event)))</summary>
            <form method="post" action="/sounds/events/\(name)" class="settings-form">\(HTML.hiddenCSRF(csrf))
            \(select(id: "\(id)-chime", name: "chime", label: "Notify", [("on", "On"), ("off", "Off (silent)")], selected: setting.chime ? "on" : "off"))
            \(select(id: "\(id)-sound", name: "sound", label: "Sound", sounds, selected: setting.sound ?? "default"))
            \(select(id: "\(id)-haptics", name: "haptics", label: "Vibration", [("default", "Use global default"), ("on", "On"), ("off", "Off")],
                     selected: setting.haptics.map { $0 ? "on" : "off" } ?? "default", describedBy: hapticsSupported ? nil : "\(id)-unsupported"))
            \(hapticsSupported ? "" : "<p id=\"\(id)-unsupported\" class=\"note\">\(HTML.escape(notSupported))</p>")
            \(select(id: "\(id)-intensity", name: "intensity", label: "Vibration strength", [(value: "default", title: "Use global default")] + intensities,
                     selected: setting.intensity?.rawValue ?? "default"))
            <button type="submit">Save \(HTML.escape(title(plan.event)))</button>
            </form></details></li>
            """
        return out
    }
}
