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

    /// A Flic 2 paired: its pairing (40 hex digits, kept like a bindkey), the button's own name, and one line for the
    /// person (serial and battery).
    public struct Flic2Paired: Sendable {
        public var pairing: String
        public var ownName: String?
        public var summary: String

        public init(pairing: String, ownName: String?, summary: String) {
            self.pairing = pairing
            self.ownName = ownName
            self.summary = summary
        }
    }

    let useCases: ButtonUseCases
    let scan: @Sendable (Int) async throws -> [ButtonUseCases.Candidate]
    /// Pairs with the Flic 2 at an address, waiting so many seconds (the agent's `Flic2Pairer`); nil where the
    /// dashboard cannot reach Bluetooth. Throws the one-line reason.
    let pairFlic2: (@Sendable (String, Int) async throws -> Flic2Paired)?
    let levels: @Sendable () -> [String: (level: Double, at: Date)]
    private let presses = Mutex<[String: Press]>([:])

    /// - Parameters:
    ///   - scan: listening for buttons for so many seconds (`ButtonUseCases.scan` through the machine's scanner).
    ///   - levels: the latest level of each power source ("button:<name>").
    public init(useCases: ButtonUseCases, scan: @escaping @Sendable (Int) async throws -> [ButtonUseCases.Candidate],
                levels: @escaping @Sendable () -> [String: (level: Double, at: Date)] = { [:] },
                pairFlic2: (@Sendable (String, Int) async throws -> Flic2Paired)? = nil) {
        self.useCases = useCases
        self.scan = scan
        self.pairFlic2 = pairFlic2
        self.levels = levels
    }

    public func recordPress(address: String, gesture: String, at: Date) {
        presses.withLock { $0[address.uppercased()] = Press(gesture: gesture, at: at) }
    }

    public func lastPress(_ address: String) -> Press? { presses.withLock { $0[address.uppercased()] } }

    /// How long the dashboard waits for a Flic 2 while pairing.
    static let pairingSeconds = 45

    /// Adds a button; a Flic 2 is paired first (the person holds it until it flashes, then asks). Returns the
    /// outcome in one line.
    func add(address: String, kind: ButtonKind, name: String?, bindkey: String?) async throws -> (ButtonUseCases.AddResult, String?) {
        guard kind == .flic2 else { return (try useCases.add(address: address, kind: kind, name: name, bindkey: bindkey), nil) }
        guard bindkey == nil else { throw UseCaseError("a Flic 2 has no bindkey: it is paired with") }
        _ = try useCases.repository()
        guard let pairFlic2 else { throw UseCaseError.unavailable("pairing a Flic 2 needs Bluetooth, which this dashboard cannot reach") }
        guard BluetoothAddress(address) != nil else {
            throw UseCaseError("invalid address '\(DisplayText.escaped(address, maxLength: 40))'")
        }
        let paired = try await pairFlic2(address, Self.pairingSeconds)
        var chosen = name
        if chosen == nil, let own = paired.ownName, !own.isEmpty,
           (try? ButtonConfig(address: address, kind: .flic2, name: own, pairing: paired.pairing)) != nil {
            chosen = own
        }
        return (try useCases.add(address: address, kind: .flic2, name: chosen, bindkey: nil, pairing: paired.pairing), paired.summary)
    }

    /// Every added button with its battery and last press; the rows that cannot be used.
    func rows() throws -> ([ButtonsPage.Row], [UnusableButton]) {
        let (list, unusable) = try useCases.list()
        let levels = self.levels()
        return (list.map { ButtonsPage.Row(button: $0, battery: levels[$0.powerSourceName], lastPress: lastPress($0.address)) }, unusable)
    }
}

/// `/buttons…` and `/api/buttons…`: `dosetap button …`'s use cases, and the scan.
struct ButtonsController: DashboardController {
    let dashboard: WebDashboard
    let buttons: WebButtons

    func addRoutes(to router: Router<WebContext>) {
        router.get("/buttons", use: page)
        router.post("/buttons/:change", use: change)
        router.get("/api/buttons", use: list)
        router.post("/api/buttons", use: apiAdd)
        router.post("/api/buttons/scan", use: apiScan)
        router.patch("/api/buttons/:address", use: apiMap)
        router.delete("/api/buttons/:address", use: apiRemove)
    }

    func page(flash: Flash?, access: WebDashboard.Access, headers: HTTPFields = [:], scanned: ButtonsPage.Scan? = nil) throws -> Response {
        let d = dashboard
        let (rows, unusable) = try buttons.rows()
        return WebDashboard.html(ButtonsPage.render(rows: rows, unusable: unusable, scan: scanned, timeZone: d.clock.timeZone, now: d.clock.now(),
                                                    csrf: d.csrf(access), flash: flash), headers: headers)
    }

    func attempt(_ body: () throws -> String) throws -> Response {
        try dashboard.formOutcome(back: "/buttons", body)
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let buttons = self.buttons
        var headers = HTTPFields()
        let flash = d.takeFlash(request, &headers)
        guard flash == nil else { return try page(flash: flash, access: context.access, headers: headers) }
        // The last presses are remembered from the event stream (an event: a new generation); "ago" is
        // drawn again at least every minute.
        let now = d.clock.now()
        let csrf = d.csrf(context.access)
        return WebDashboard.html(try d.views.view(.init(view: "/buttons", session: csrf, variant: WebDashboard.themeVariant), now: now) {
            let (rows, unusable) = try buttons.rows()
            return (ButtonsPage.render(rows: rows, unusable: unusable, scan: nil, timeZone: d.clock.timeZone, now: now, csrf: csrf, flash: nil),
                    ViewCache.nextMinute(after: now))
        }, headers: headers)
    }

    /// `/buttons/scan|add|map|remove`.
    @Sendable func change(_ request: Request, _ context: WebContext) async throws -> Response {
        let useCases = buttons.useCases
        let form = try await WebDashboard.form(request, context)
        switch context.parameters.get("change") {
        case "scan":
            let seconds = try WebDashboard.scanSeconds(form["seconds"])
            do {
                return try page(flash: nil, access: context.access, scanned: ButtonsPage.Scan(seconds: seconds, found: try await buttons.scan(seconds)))
            } catch let error as UseCaseError {
                return try page(flash: Flash(recorded: false, message: error.description, verb: "saved"), access: context.access)
            }
        case "add":
            let address = try WebDashboard.required(form["address"], "address")
            let kind = try WebDashboard.kind(form["kind"])
            let name = form["name"].flatMap { $0.isEmpty ? nil : $0 }
            let bindkey = form["bindkey"].flatMap { $0.isEmpty ? nil : $0 }
            let outcome: Result<(ButtonUseCases.AddResult, String?), any Error>
            do { outcome = .success(try await buttons.add(address: address, kind: kind, name: name, bindkey: bindkey)) } catch {
                outcome = .failure(error)
            }
            return try attempt {
                let (result, paired) = try outcome.get()
                return (paired.map { "\($0). " } ?? "")
                    + "\(result.updated ? "updated" : "added") \(result.button.name) (\(result.button.address), \(result.button.kind.rawValue))"
                    + (result.keyChange.map { ". \($0.description)" } ?? "")
            }
        case "map":
            let address = try WebDashboard.required(form["address"], "address")
            let change = try WebDashboard.mapping(single: form["single"], double: form["double"], hold: form["hold"],
                                                  noDouble: form["double-press"].map { $0 == "off" ? "true" : "false" })
            return try attempt {
                let button = try useCases.map(address: address, change)
                return "\(button.name): \(button.mapping.summary)"
            }
        case "remove":
            let address = try WebDashboard.required(form["address"], "address")
            guard form["confirm"] == "yes" else { throw WebInputError(.badRequest, "removing a button needs confirm=yes") }
            return try attempt { "removed \(try useCases.remove(address: address))" }
        default:
            throw HTTPError(.notFound)
        }
    }

    @Sendable func list(_ request: Request, _ context: WebContext) async throws -> Response {
        let buttons = self.buttons
        let (list, unusable) = try buttons.useCases.list()
        let levels = buttons.levels()
        let zone = dashboard.clock.timeZone
        return WebDashboard.json(.object([("buttons", .array(list.map { button in
            var fields: [(String, JSON)] = []
            if case .object(let own) = button.json { fields = own }
            let level = levels[button.powerSourceName]
            fields.append(("battery", level.map { .object([("level", .number($0.level)), ("at", .string($0.at.rfc3339(in: zone)))]) } ?? .null))
            let press = buttons.lastPress(button.address)
            fields.append(("lastPress", press.map { .object([("gesture", .string($0.gesture)), ("at", .string($0.at.rfc3339(in: zone)))]) } ?? .null))
            return .object(fields)
        } + unusable.map(\.json)))]))
    }

    @Sendable func apiAdd(_ request: Request, _ context: WebContext) async throws -> Response {
        let buttons = self.buttons
        let body = try await WebDashboard.jsonBody(request)
        let address = try WebDashboard.required(try WebDashboard.text(body, "address"), "address")
        let kind = try WebDashboard.kind(try WebDashboard.text(body, "kind"))
        let name = try WebDashboard.text(body, "name")
        let bindkey = try WebDashboard.text(body, "bindkey")
        let outcome: Result<(ButtonUseCases.AddResult, String?), any Error>
        do { outcome = .success(try await buttons.add(address: address, kind: kind, name: name, bindkey: bindkey)) } catch {
            outcome = .failure(error)
        }
        return dashboard.apiAnswer {
            let (result, paired) = try outcome.get()
            return .object([("button", result.button.json), ("updated", .bool(result.updated)),
                            ("keyChange", .optional(result.keyChange?.description)), ("paired", .optional(paired))])
        }
    }

    @Sendable func apiScan(_ request: Request, _ context: WebContext) async throws -> Response {
        let body = try await WebDashboard.jsonBody(request)
        // A whole number only: "5" or 5.5 used to be read as text (#51).
        let seconds = try WebDashboard.scanSeconds(try WebDashboard.wholeNumber(body, "seconds", "seconds must be from 1 to 30").map(String.init))
        return WebDashboard.json(.object([("candidates", .array(try await buttons.scan(seconds).map(\.json)))]))
    }

    @Sendable func apiMap(_ request: Request, _ context: WebContext) async throws -> Response {
        let useCases = buttons.useCases
        let body = try await WebDashboard.jsonBody(request)
        let noDouble: String?
        switch body["noDouble"] {
        case nil, is NSNull: noDouble = nil
        case let value as Bool: noDouble = value ? "true" : "false"
        default: throw WebInputError(.badRequest, "noDouble must be true or false")
        }
        let change = try WebDashboard.mapping(single: try WebDashboard.text(body, "single"), double: try WebDashboard.text(body, "double"),
                                              hold: try WebDashboard.text(body, "hold"), noDouble: noDouble)
        let address = context.parameters.get("address") ?? ""
        return dashboard.apiAnswer { try useCases.map(address: address, change).json }
    }

    @Sendable func apiRemove(_ request: Request, _ context: WebContext) async throws -> Response {
        let useCases = buttons.useCases
        let address = context.parameters.get("address") ?? ""
        return dashboard.apiAnswer { .object([("removed", .string(try useCases.remove(address: address)))]) }
    }
}

extension WebDashboard {
    static func scanSeconds(_ text: String?) throws -> Int {
        guard let text, !text.isEmpty else { return 5 }
        guard let seconds = Int(text), (1...30).contains(seconds) else {
            throw WebInputError(.badRequest, "seconds must be from 1 to 30")
        }
        return seconds
    }

    static func kind(_ text: String?) throws -> ButtonKind {
        guard let text, let kind = ButtonKind(rawValue: text) else {
            throw WebInputError(.badRequest, "kind must be bthome, itag, hid or flic2")
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
