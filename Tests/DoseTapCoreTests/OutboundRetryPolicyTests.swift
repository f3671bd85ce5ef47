import DoseTapCore
import Foundation
import Testing

@Suite("The retry policy of outbound calls (#12): 503, 429, 401/403, success")
struct OutboundRetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a success ends it, at any attempt")
    func success() {
        for code in [200, 201, 204, 299] { #expect(OutboundRetryPolicy.decide(.status(code, retryAfter: nil), attempt: 1, now: now) == .done) }
        #expect(OutboundRetryPolicy.decide(.status(200, retryAfter: nil), attempt: 4, now: now) == .done)
    }

    @Test("503 and no answer: after 5, 10, 30 s, then give up")
    func unavailable() {
        for outcome in [OutboundRetryPolicy.Attempt.status(503, retryAfter: nil), .noAnswer] {
            #expect((1...3).map { OutboundRetryPolicy.decide(outcome, attempt: $0, now: now) } == [.retry(after: 5), .retry(after: 10), .retry(after: 30)])
            guard case .giveUp(_, let credentials) = OutboundRetryPolicy.decide(outcome, attempt: 4, now: now) else {
                Issue.record("a fourth failure retried")
                continue
            }
            #expect(!credentials)
        }
    }

    @Test("429 waits for Retry-After: seconds, an HTTP date, missing or garbage (5 s), capped at 5 minutes")
    func rateLimited() {
        #expect(OutboundRetryPolicy.decide(.status(429, retryAfter: "120"), attempt: 1, now: now) == .retry(after: 120))
        #expect(OutboundRetryPolicy.decide(.status(429, retryAfter: nil), attempt: 1, now: now) == .retry(after: 5))
        #expect(OutboundRetryPolicy.decide(.status(429, retryAfter: "soon"), attempt: 2, now: now) == .retry(after: 5))
        #expect(OutboundRetryPolicy.decide(.status(429, retryAfter: "99999"), attempt: 1, now: now) == .retry(after: 300))
        #expect(OutboundRetryPolicy.decide(.status(429, retryAfter: "-3"), attempt: 1, now: now) == .retry(after: 5))
        let date = "Fri, 15 Jan 2027 08:01:00 GMT"  // 60 s after now
        #expect(OutboundRetryPolicy.retryAfter(date, now: Date(timeIntervalSince1970: 1_800_000_000)) == 60)
        if case .giveUp = OutboundRetryPolicy.decide(.status(429, retryAfter: "1"), attempt: 4, now: now) {} else { Issue.record("429 for ever") }
    }

    @Test("401 and 403 stop at once and say the credentials were refused; other errors stop too, without that")
    func refused() {
        #expect(OutboundRetryPolicy.decide(.status(401, retryAfter: nil), attempt: 1, now: now)
                == .giveUp(reason: "the credentials were refused (HTTP 401)", credentialsRefused: true))
        #expect(OutboundRetryPolicy.decide(.status(403, retryAfter: nil), attempt: 1, now: now)
                == .giveUp(reason: "the credentials were refused (HTTP 403)", credentialsRefused: true))
        #expect(OutboundRetryPolicy.decide(.status(404, retryAfter: nil), attempt: 1, now: now) == .giveUp(reason: "HTTP 404", credentialsRefused: false))
        #expect(OutboundRetryPolicy.decide(.status(500, retryAfter: nil), attempt: 1, now: now) == .giveUp(reason: "HTTP 500", credentialsRefused: false))
        #expect(OutboundRetryPolicy.timeout == 10)
    }
}
