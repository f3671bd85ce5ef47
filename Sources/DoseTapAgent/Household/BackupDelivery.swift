import DoseTapApp
import DoseTapCore
import Foundation
import Logging

/// Sends a `push:` or `phone:` backup (#12): an ntfy-compatible push (title, message, priority `urgent`,
/// tags) or an automated call through a Twilio-compatible REST API, under the one `OutboundRetryPolicy`:
/// 503 and no answer are tried again after 5, 10 and 30 s, 429 waits for `Retry-After`, 401/403 stop and
/// the person is told the credentials were refused. Each attempt times out after 10 s on the scheduling port.
public struct BackupDelivery: Sendable {
    public enum Outcome: Sendable, Equatable {
        case sent(attempts: Int)
        case failed(reason: String, credentialsRefused: Bool)
    }

    /// Where the words come from: "<household name>'s <device>".
    public struct Wording: Sendable, Equatable {
        public var household: String?
        public init(household: String?) { self.household = household }

        /// "This is an automated backup alarm from Jen's family's jen-laptop."
        public func callMessage(owner: String) -> String {
            "This is an automated backup alarm from \(household.map { "\($0)'s " } ?? "")\(owner)."
        }
    }

    private let http: any OutboundHTTP
    private let clock: any Scheduling
    private let wording: Wording
    private let pushToken: @Sendable () -> Result<String, ConfigurationError>?
    private let pushServer: String?
    private let phone: PhoneSettings?
    private let phoneToken: @Sendable () -> Result<String, ConfigurationError>?
    private let logger: Logger

    /// - Parameters:
    ///   - pushServer: `[push] server`, the only origin the push token is sent to (none: the token is never sent).
    public init(http: any OutboundHTTP, clock: any Scheduling, wording: Wording, pushTokenFile: String?, pushServer: String? = nil,
                phone: PhoneSettings?, logger: Logger) {
        self.http = http
        self.clock = clock
        self.wording = wording
        pushToken = { pushTokenFile.map(readSecret) }
        self.pushServer = pushServer
        self.phone = phone
        phoneToken = { phone.map { readSecret($0.tokenFile) } }
        self.logger = logger
    }

    /// The numbers this device may call for another device's plan (`[phone] household_numbers`).
    public var householdNumbers: Set<String> { Set(phone?.householdNumbers ?? []) }

    /// The request for `target`, or why it cannot be made (no `[phone]` account, an unreadable token).
    public func request(for target: BackupTarget, occurrence: KnownOccurrence) -> Result<OutboundRequest, ConfigurationError> {
        let owner = occurrence.key.owner
        let label = DisplayText.escaped(occurrence.label, maxLength: 120)
        switch target {
        case .device:
            return .failure(ConfigurationError("a device target is rung by that device, not sent"))
        case .push(let url):
            var headers = [
                "Title": "Backup alarm \(occurrence.time) — \(owner)",
                "Priority": "urgent",
                "Tags": "alarm_clock,rotating_light",
                "Content-Type": "text/plain; charset=utf-8",
            ]
            // Header values are ASCII: the label goes in the body, which is UTF-8.
            headers["Title"] = headers["Title"]?.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "-" }.joined()
            // The token goes only to the server it was configured for, never to any URL a plan names.
            if let pushServer, BackupTarget.sameOrigin(url, pushServer) {
                switch pushToken() {
                case .success(let token): headers["Authorization"] = "Bearer \(token)"
                case .failure(let error): return .failure(ConfigurationError("push.token_file: \(error)"))
                case nil: break
                }
            }
            let body = "\(label) — the alarm at \(occurrence.time) on \(owner) was not stopped. \(wording.callMessage(owner: owner))"
            return .success(OutboundRequest(url: url, headers: headers, body: Array(body.utf8)))
        case .phone(let number):
            guard let phone else {
                return .failure(ConfigurationError("no [phone] account in config.toml: phone backups cannot call (docs/household.md)"))
            }
            let token: String
            switch phoneToken() {
            case .success(let value): token = value
            case .failure(let error): return .failure(ConfigurationError("phone.token_file: \(error)"))
            case nil: return .failure(ConfigurationError("no [phone] account in config.toml"))
            }
            let say = wording.callMessage(owner: owner)
            let twiml = "<Response><Say loop=\"3\">\(Self.xmlEscaped(say))</Say></Response>"
            let form = [("To", number), ("From", phone.from), ("Twiml", twiml)]
                .map { "\(Self.formEncoded($0.0))=\(Self.formEncoded($0.1))" }.joined(separator: "&")
            return .success(OutboundRequest(
                url: "\(phone.url)/2010-04-01/Accounts/\(phone.account)/Calls.json",
                headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Array(form.utf8),
                basicAuth: (phone.account, token)))
        }
    }

    /// Sends `request` under the retry policy.
    public func deliver(_ request: OutboundRequest, what: String) async -> Outcome {
        var attempt = 1
        while !Task.isCancelled {
            let outcome = await self.attempt(request)
            switch OutboundRetryPolicy.decide(outcome, attempt: attempt, now: clock.now()) {
            case .done:
                return .sent(attempts: attempt)
            case .retry(let after):
                logger.notice("backup \(what): trying again", metadata: [
                    "attempt": "\(attempt)", "answer": "\(Self.describe(outcome))", "afterSeconds": "\(Int(after))",
                ])
                if await sleep(after) == .cancelled { return .failed(reason: "the agent stopped", credentialsRefused: false) }
                attempt += 1
            case .giveUp(let reason, let refused):
                return .failed(reason: reason, credentialsRefused: refused)
            }
        }
        return .failed(reason: "the agent stopped", credentialsRefused: false)
    }

    /// Waits `seconds` of wall-clock time, through clock steps.
    private func sleep(_ seconds: TimeInterval) async -> WakeReason {
        let deadline = clock.now().addingTimeInterval(seconds)
        while true {
            let reason = await clock.sleep(until: deadline)
            if reason != .clockChanged { return reason }
        }
    }

    /// One attempt, given up after `OutboundRetryPolicy.timeout` on the scheduling port.
    func attempt(_ request: OutboundRequest) async -> OutboundRetryPolicy.Attempt {
        let http = self.http
        return await withTaskGroup(of: OutboundRetryPolicy.Attempt?.self) { group in
            group.addTask { await http.post(request) }
            group.addTask {
                await sleep(OutboundRetryPolicy.timeout) == .cancelled ? nil : .noAnswer
            }
            var result: OutboundRetryPolicy.Attempt = .noAnswer
            if let first = await group.next(), let first { result = first }
            group.cancelAll()
            return result
        }
    }

    static func describe(_ attempt: OutboundRetryPolicy.Attempt) -> String {
        switch attempt {
        case .status(let code, _): "HTTP \(code)"
        case .noAnswer: "no answer"
        }
    }

    static func formEncoded(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func xmlEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
