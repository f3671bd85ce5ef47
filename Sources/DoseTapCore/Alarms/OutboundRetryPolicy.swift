import Foundation

/// The one retry policy of every outbound HTTP call of the cascade (#12: ntfy pushes, phone calls):
/// a success ends it; 503 (and a timeout or a connection failure) is tried again after 5, 10 and 30 s;
/// 429 waits for the server's `Retry-After` (seconds or an HTTP date; 5 s when missing, at most 5
/// minutes); 401 and 403 stop at once — the credentials were refused and the person must be told;
/// anything else stops. Each attempt times out after 10 s.
public enum OutboundRetryPolicy {
    public static let timeout: TimeInterval = 10
    public static let backoff: [TimeInterval] = [5, 10, 30]
    public static let maximumRetryAfter: TimeInterval = 300

    /// How one attempt ended.
    public enum Attempt: Sendable, Equatable {
        case status(Int, retryAfter: String?)
        /// No answer within the timeout, or no connection.
        case noAnswer
    }

    /// What to do next.
    public enum Decision: Sendable, Equatable {
        case done
        case retry(after: TimeInterval)
        /// Stop; `credentialsRefused` when the user must be told their account or token was refused.
        case giveUp(reason: String, credentialsRefused: Bool)
    }

    /// The decision after attempt number `attempt` (1 the first) ended as `outcome`, at `now` (for an
    /// HTTP-date Retry-After).
    public static func decide(_ outcome: Attempt, attempt: Int, now: Date) -> Decision {
        switch outcome {
        case .status(let code, _) where (200..<300).contains(code):
            return .done
        case .status(401, _), .status(403, _):
            return .giveUp(reason: "the credentials were refused (HTTP \(code(outcome)))", credentialsRefused: true)
        case .status(429, let retryAfter):
            // A server that keeps saying "too many" is not waited on for ever: as many waits as 503 gets.
            guard attempt <= backoff.count else { return .giveUp(reason: "still rate-limited after \(attempt) attempts (HTTP 429)", credentialsRefused: false) }
            return .retry(after: Self.retryAfter(retryAfter, now: now))
        case .status(503, _), .noAnswer:
            guard attempt <= backoff.count else {
                return .giveUp(reason: "no success after \(attempt) attempts (\(outcome == .noAnswer ? "no answer" : "HTTP 503"))", credentialsRefused: false)
            }
            return .retry(after: backoff[attempt - 1])
        case .status(let code, _):
            return .giveUp(reason: "HTTP \(code)", credentialsRefused: false)
        }
    }

    static func code(_ outcome: Attempt) -> Int {
        if case .status(let code, _) = outcome { return code }
        return 0
    }

    /// `Retry-After` as seconds ("120") or an HTTP date; 5 s when missing or unreadable; 0…300 s.
    public static func retryAfter(_ header: String?, now: Date) -> TimeInterval {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return backoff[0] }
        if header.allSatisfy({ $0.isASCII && $0.isNumber }), let seconds = Double(header) {
            return min(maximumRetryAfter, seconds)
        }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = f.date(from: header) else { return backoff[0] }
        return min(maximumRetryAfter, max(0, date.timeIntervalSince(now)))
    }
}
