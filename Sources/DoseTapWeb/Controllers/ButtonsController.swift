import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import HTTPTypes
import Hummingbird
import ServiceLifecycle
import Synchronization

/// The buttons of the dashboard: `dosetap button …`'s use cases, the scan of `dosetap button scan`, each
/// button's battery (its latest sample) and its last press (seen on the agent's event stream since the agent
/// started).
public final class WebButtons: Sendable {
    public struct Press: Sendable, Equatable {
        public var gesture: String
        public var at: Date
    }

    let useCases: ButtonUseCases
    let scan: @Sendable (Int) async throws -> [ButtonUseCases.Candidate]
    let levels: @Sendable () -> [String: (level: Double, at: Date)]
    private let presses = Mutex<[String: Press]>([:])

    /// - Parameters:
    ///   - scan: listening for buttons for so many seconds (`ButtonUseCases.scan` through the machine's scanner).
    ///   - levels: the latest level of each power source ("button:<name>").
    public init(useCases: ButtonUseCases, scan: @escaping @Sendable (Int) async throws -> [ButtonUseCases.Candidate],
                levels: @escaping @Sendable () -> [String: (level: Double, at: Date)] = { [:] }) {
        self.useCases = useCases
        self.scan = scan
        self.levels = levels
    }

    public func recordPress(address: String, gesture: String, at: Date) {
        presses.withLock { $0[address.uppercased()] = Press(gesture: gesture, at: at) }
    }

    public func lastPress(_ address: String) -> Press? { presses.withLock { $0[address.uppercased()] } }

    /// Every added button with its battery and last press; the rows that cannot be used.
    func rows() throws -> ([ButtonsPage.Row], [UnusableButton]) {
        let (list, unusable) = try useCases.list()
        let levels = self.levels()
        return (list.map { ButtonsPage.Row(button: $0, battery: levels[$0.powerSourceName], lastPress: lastPress($0.address)) }, unusable)
    }
}

extension WebDashboard {
    /// `/buttons…` and `/api/buttons…`.
    func buttonsRoute(_ request: Request, method: HTTPRequest.Method, path: String, access: Access, api: Bool) async throws -> Response {
        guard let buttons else { return Self.error(.notFound, "no buttons here", api: api) }
        let useCases = buttons.useCases
        let parts = path.split(separator: "/").map(String.init)
        func page(flash: Flash?, headers: HTTPFields = [:], scanned: ButtonsPage.Scan? = nil) throws -> Response {
            let (rows, unusable) = try buttons.rows()
            return Self.html(ButtonsPage.render(rows: rows, unusable: unusable, scan: scanned, timeZone: clock.timeZone, now: clock.now(),
                                                csrf: csrf(access), flash: flash), headers: headers)
        }
        func attempt(_ body: () throws -> String) throws -> Response {
            do {
                return try redirect("/buttons", flash: Flash(recorded: true, message: try body(), verb: "saved"))
            } catch let error as UseCaseError {
                return try redirect("/buttons", flash: Flash(recorded: false, message: error.description, verb: "saved"))
            }
        }
        switch (method, parts.count) {
        case (.get, 1) where parts[0] == "buttons":
            var headers = HTTPFields()
            let flash = takeFlash(request, &headers)
            guard flash == nil else { return try page(flash: flash, headers: headers) }
            // The last presses are remembered from the event stream (an event: a new generation); "ago" is
            // drawn again at least every minute.
            let now = clock.now()
            let csrf = csrf(access)
            return Self.html(try views.view(.init(view: "/buttons", session: csrf, variant: Self.themeVariant), now: now) {
                let (rows, unusable) = try buttons.rows()
                return (ButtonsPage.render(rows: rows, unusable: unusable, scan: nil, timeZone: clock.timeZone, now: now, csrf: csrf, flash: nil),
                        ViewCache.nextMinute(after: now))
            }, headers: headers)
        case (.post, 2) where parts[0] == "buttons":
            let form = try await Self.form(request)
            try checkCSRF(request, form: form, access: access)
            switch parts[1] {
            case "scan":
                let seconds = try Self.scanSeconds(form["seconds"])
                do {
                    return try page(flash: nil, scanned: ButtonsPage.Scan(seconds: seconds, found: try await buttons.scan(seconds)))
                } catch let error as UseCaseError {
                    return try page(flash: Flash(recorded: false, message: error.description, verb: "saved"))
                }
            case "add":
                let address = try Self.required(form["address"], "address")
                let kind = try Self.kind(form["kind"])
                let name = form["name"].flatMap { $0.isEmpty ? nil : $0 }
                let bindkey = form["bindkey"].flatMap { $0.isEmpty ? nil : $0 }
                return try attempt {
                    let result = try useCases.add(address: address, kind: kind, name: name, bindkey: bindkey)
                    return "\(result.updated ? "updated" : "added") \(result.button.name) (\(result.button.address), \(result.button.kind.rawValue))"
                        + (result.keyChange.map { ". \($0.description)" } ?? "")
                }
            case "map":
                let address = try Self.required(form["address"], "address")
                let change = try Self.mapping(single: form["single"], double: form["double"], hold: form["hold"], noDouble: form["double-press"].map { $0 == "off" ? "true" : "false" })
                return try attempt {
                    let button = try useCases.map(address: address, change)
                    return "\(button.name): \(button.mapping.summary)"
                }
            case "remove":
                let address = try Self.required(form["address"], "address")
                guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "removing a button needs confirm=yes") }
                return try attempt { "removed \(try useCases.remove(address: address))" }
            default: break
            }
        case (.get, 2) where parts[1] == "buttons":
            let (list, unusable) = try useCases.list()
            let levels = buttons.levels()
            let zone = clock.timeZone
            return Self.json(.object([("buttons", .array(list.map { button in
                var fields: [(String, JSON)] = []
                if case .object(let own) = button.json { fields = own }
                let level = levels[button.powerSourceName]
                fields.append(("battery", level.map { .object([("level", .number($0.level)), ("at", .string($0.at.rfc3339(in: zone)))]) } ?? .null))
                let press = buttons.lastPress(button.address)
                fields.append(("lastPress", press.map { .object([("gesture", .string($0.gesture)), ("at", .string($0.at.rfc3339(in: zone)))]) } ?? .null))
                return .object(fields)
            } + unusable.map(\.json)))]))
        case (.post, 2) where parts[1] == "buttons":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let address = try Self.required(try Self.text(body, "address"), "address")
            let kind = try Self.kind(try Self.text(body, "kind"))
            let name = try Self.text(body, "name")
            let bindkey = try Self.text(body, "bindkey")
            return apiAnswer {
                let result = try useCases.add(address: address, kind: kind, name: name, bindkey: bindkey)
                return .object([("button", result.button.json), ("updated", .bool(result.updated)),
                                ("keyChange", .optional(result.keyChange?.description))])
            }
        case (.post, 3) where parts[1] == "buttons" && parts[2] == "scan":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let seconds = try Self.scanSeconds(body["seconds"].map { "\($0)" })
            do {
                return Self.json(.object([("candidates", .array(try await buttons.scan(seconds).map(\.json)))]))
            } catch let error as UseCaseError {
                return Self.error(error, api: true)
            }
        case (.patch, 3) where parts[1] == "buttons":
            let body = try await Self.jsonBody(request)
            try checkCSRF(request, form: [:], access: access)
            let noDouble: String?
            switch body["noDouble"] {
            case nil, is NSNull: noDouble = nil
            case let value as Bool: noDouble = value ? "true" : "false"
            default: throw WebInputError(.badRequest, "noDouble must be true or false")
            }
            let change = try Self.mapping(single: try Self.text(body, "single"), double: try Self.text(body, "double"),
                                          hold: try Self.text(body, "hold"), noDouble: noDouble)
            let address = parts[2]
            return apiAnswer { try useCases.map(address: address, change).json }
        case (.delete, 3) where parts[1] == "buttons":
            try checkCSRF(request, form: [:], access: access)
            let address = parts[2]
            return apiAnswer { .object([("removed", .string(try useCases.remove(address: address)))]) }
        default: break
        }
        return Self.error(.notFound, "no such page: \(path)", api: api)
    }

    static func scanSeconds(_ text: String?) throws -> Int {
        guard let text, !text.isEmpty else { return 5 }
        guard let seconds = Int(text), (1...30).contains(seconds) else {
            throw WebInputError(.badRequest, "seconds must be from 1 to 30")
        }
        return seconds
    }

    static func kind(_ text: String?) throws -> ButtonKind {
        guard let text, let kind = ButtonKind(rawValue: text) else {
            throw WebInputError(.badRequest, "kind must be bthome, itag or hid")
        }
        return kind
    }

    static func mapping(single: String?, double: String?, hold: String?, noDouble: String?) throws -> ButtonUseCases.MappingChange {
        func action(_ text: String?, _ name: String) throws -> ButtonAction? {
            guard let text, !text.isEmpty else { return nil }
            guard let action = ButtonAction(rawValue: text) else {
                throw WebInputError(.badRequest, "\(name) must be take, snooze, undo, skip or none")
            }
            return action
        }
        let change = ButtonUseCases.MappingChange(single: try action(single, "single"), double: try action(double, "double"),
                                                  hold: try action(hold, "hold"), noDouble: noDouble.map { $0 == "true" })
        guard change != ButtonUseCases.MappingChange() else {
            throw WebInputError(.badRequest, "nothing to change: give single, double, hold or noDouble")
        }
        return change
    }
}

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
                    <button type="submit">Add \(name)</button></form></li>
                    """
            }
            body += "</ul>"
        }
        body += """
            <details><summary>Add by address</summary>
            <form method="post" action="/buttons/add" class="alarm-form">\(HTML.hiddenCSRF(csrf))
            <label for="add-address">Address</label><input id="add-address" name="address" type="text" required placeholder="AA:BB:CC:DD:EE:FF" autocomplete="off">
            <label for="add-kind">Kind</label><select id="add-kind" name="kind"><option value="bthome">BTHome</option><option value="itag">iTag</option><option value="hid">HID remote</option></select>
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
