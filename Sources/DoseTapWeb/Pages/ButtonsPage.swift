import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation

/// The added buttons with their kind, battery, last press and gestures; a scan with "Add" per find. Names
/// come from the radio (untrusted): escaped, control characters shown as escapes.
enum ButtonsPage {
    struct Row {
        var button: ButtonConfig
        var battery: (level: Double, at: Date)?
        var lastPress: WebButtons.Press?
    }

    struct Scan {
        var seconds: Int
        var found: [ButtonUseCases.Candidate]
    }

    static let actions: [(value: String, title: String)] = ButtonAction.allCases.map { ($0.rawValue, $0 == .none ? "Nothing" : $0.rawValue.capitalized) }

    static func render(rows: [Row], unusable: [UnusableButton], scan: Scan?, timeZone: TimeZone, now: Date, csrf: String, flash: Flash?) -> String {
        var body = "<h1>Buttons</h1>"
        body += "<div id=\"announce\" role=\"status\" aria-live=\"polite\">\(flash.map(TonightPage.renderFlash) ?? "")</div>"
        body += HTML.live("buttons", fragment(rows: rows, timeZone: timeZone, csrf: csrf))
        for row in unusable {
            body += "<p class=\"refusal\">\(HTML.escape(row.address, maxLength: 40)): unusable, never acts: \(HTML.escape(row.reason, maxLength: 200)) (add it again)</p>"
        }
        body += """
            <h2>Add a button</h2>
            <form method="post" action="/buttons/scan" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            <label for="scan-seconds">Listen for (seconds)</label>
            <input id="scan-seconds" name="seconds" type="number" min="1" max="30" value="5" inputmode="numeric">
            <button type="submit">Scan for buttons</button></form>
            """
        if let scan {
            body += "<h3 id=\"found\">Found in \(scan.seconds) s</h3>"
            if scan.found.isEmpty { body += "<p role=\"status\">No buttons found. Wake the button (press it) and scan again.</p>" }
            body += "<ul class=\"alarms\" aria-labelledby=\"found\">"
            for (i, c) in scan.found.enumerated() {
                let name = HTML.escape(c.name ?? "(no name)", maxLength: 64)
                let signal = c.rssi.map { "\($0) dBm" } ?? (c.connected ? "connected" : "")
                body += """
                    <li class="alarm"><p><strong>\(name)</strong> · \(HTML.escape(c.address)) · \(HTML.escape(c.kind.rawValue)) \(HTML.escape(signal))</p>
                    <form method="post" action="/buttons/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
                    <input type="hidden" name="address" value="\(HTML.escape(c.address))"><input type="hidden" name="kind" value="\(HTML.escape(c.kind.rawValue))">
                    <label for="found-\(i)-name">Name</label><input id="found-\(i)-name" name="name" type="text" maxlength="64" value="\(HTML.escape(c.name ?? "", maxLength: 64))">
                    \(c.kind == .bthome ? "<label for=\"found-\(i)-key\">Bindkey (encrypted buttons, 32 hex digits)</label><input id=\"found-\(i)-key\" name=\"bindkey\" type=\"text\" maxlength=\"32\" autocomplete=\"off\">" : "")
                    \(c.kind == .flic2 ? "<p>Hold the Flic 2 for 7 seconds until it flashes, then pair (it takes a few seconds).</p>" : "")
                    <button type="submit">\(c.kind == .flic2 ? "Pair" : "Add") \(name)</button></form></li>
                    """
            }
            body += "</ul>"
        }
        body += """
            <details><summary>Add by address</summary>
            <form method="post" action="/buttons/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            <label for="add-address">Address</label><input id="add-address" name="address" type="text" required placeholder="AA:BB:CC:DD:EE:FF" autocomplete="off">
            <label for="add-kind">Kind</label><select id="add-kind" name="kind"><option value="bthome">BTHome</option><option value="itag">iTag</option><option value="hid">HID remote</option><option value="flic2">Flic 2 (hold it 7 s until it flashes first)</option></select>
            <label for="add-name">Name</label><input id="add-name" name="name" type="text" maxlength="64">
            <label for="add-key">Bindkey (BTHome, encrypted; optional)</label><input id="add-key" name="bindkey" type="text" maxlength="32" autocomplete="off">
            <button type="submit">Add button</button></form></details>
            """
        return HTML.page(title: "Buttons", current: "/buttons", body: body)
    }

    /// The live part: every added button with its battery and last press.
    static func fragment(rows: [Row], timeZone: TimeZone, csrf: String) -> String {
        let clock = ClockText(timeZone: timeZone)
        if rows.isEmpty { return "<p>No buttons yet: scan for one below. Only added buttons can act.</p>" }
        return "<ul class=\"alarms\">" + rows.enumerated().map { index, row in self.row(row, index: index, clock: clock, csrf: csrf) }.joined() + "</ul>"
    }

    static func row(_ row: Row, index: Int, clock: ClockText, csrf: String) -> String {
        let b = row.button
        let name = HTML.escape(b.name, maxLength: 64)
        let id = "button-\(index)"
        let battery = row.battery.map { "\(Int($0.level.rounded())) % (\(clock.time($0.at)))" } ?? "not reported yet"
        let press = row.lastPress.map { "\($0.gesture) at \(clock.time($0.at))" } ?? "none since the agent started"
        func select(_ gesture: String, _ title: String, _ selected: ButtonAction) -> String {
            """
            <label for="\(id)-\(gesture)">\(title)</label><select id="\(id)-\(gesture)" name="\(gesture)">\(SoundsPage.options(actions, selected: selected.rawValue))</select>
            """
        }
        return """
            <li class="alarm" id="\(id)" data-address="\(HTML.escape(b.address))"><h2>\(name)</h2>
            <dl class="facts"><dt>Kind</dt><dd>\(HTML.escape(b.kind.rawValue))\(b.bindkey != nil ? " (encrypted)" : "")</dd>
            <dt>Address</dt><dd>\(HTML.escape(b.address))</dd><dt>Battery</dt><dd>\(HTML.escape(battery))</dd>
            <dt>Last press</dt><dd class="last-press">\(HTML.escape(press))</dd><dt>Gestures</dt><dd>\(HTML.escape(b.mapping.summary))</dd></dl>
            <div class="actions">
            <details><summary>Change gestures of \(name)</summary>
            <form method="post" action="/buttons/map" class="alarm-form">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="address" value="\(HTML.escape(b.address))">
            \(select("single", "Single press", b.mapping.single))\(select("double", "Double press", b.mapping.double))\(select("hold", "Hold", b.mapping.hold))
            <label for="\(id)-dp">Double press</label><select id="\(id)-dp" name="double-press">\(SoundsPage.options([("on", "Recognised"), ("off", "Off: single presses act at once")], selected: b.mapping.noDouble ? "off" : "on"))</select>
            <button type="submit">Save gestures</button></form></details>
            <details><summary>Remove \(name)…</summary>
            <form method="post" action="/buttons/remove">\(HTML.hiddenCSRF(csrf))<input type="hidden" name="address" value="\(HTML.escape(b.address))"><input type="hidden" name="confirm" value="yes">
            <button type="submit">Yes, remove \(name)</button></form></details>
            </div></li>
            """
    }
}
