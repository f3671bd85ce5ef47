import Foundation

/// The per-client rate limit of the dashboard (the patient app's rule): up to 60 requests a minute are
/// served at once; beyond that a request waits its turn (one a second — "queued"); a client that sends
/// more than 200 in a minute is refused for 5 minutes. Pure: time comes in as a value.
public struct RateLimiter: Sendable {
    public static let burst = 60
    public static let interval: TimeInterval = 1
    public static let refuseAbove = 200
    public static let window: TimeInterval = 60
    public static let refusal: TimeInterval = 300

    public enum Decision: Sendable, Equatable {
        /// Serve now.
        case serve
        /// Serve at this instant (queued).
        case wait(until: Date)
        /// Refused until this instant; `first` is true for the request that started the refusal (log it once).
        case refused(until: Date, first: Bool)
    }

    private struct Client {
        /// GCRA's theoretical arrival time: when the client's next request would be on schedule.
        var tat: Date
        var arrivals = Arrivals()
        var blockedUntil: Date?
    }

    /// The arrival times of the last minute, oldest first: a queue whose front is dropped by moving an index
    /// (amortized O(1) a request), not by shifting the array — with `rate_refuse_above` raised (the benchmark's
    /// 10^8) a minute holds 10^5 arrivals, and shifting them all on every request was most of its cost.
    struct Arrivals {
        private var times: [Date] = []
        private var head = 0

        var count: Int { times.count - head }
        var last: Date? { head < times.count ? times.last : nil }

        mutating func append(_ time: Date) { times.append(time) }

        /// Forgets the arrivals at or before `start`.
        mutating func drop(through start: Date) {
            while head < times.count, times[head] <= start { head += 1 }
            if head == times.count {
                times.removeAll(keepingCapacity: times.count <= 1024)
                head = 0
            } else if head >= 1024, head * 2 >= times.count {
                times.removeFirst(head)
                head = 0
            }
        }
    }

    private var clients: [String: Client] = [:]
    private var decisions = 0
    /// Served at once, a minute (`[web] rate_burst`).
    public let burstLimit: Int
    /// Refused above this many in a minute (`[web] rate_refuse_above`).
    public let refuseLimit: Int

    public init(burst: Int = RateLimiter.burst, refuseAbove: Int = RateLimiter.refuseAbove) {
        burstLimit = burst
        refuseLimit = refuseAbove
    }

    public mutating func admit(_ client: String, at now: Date) -> Decision {
        decisions += 1
        if decisions % 1024 == 0 { prune(now) }
        // Taken out of the dictionary while it changes, so its arrivals are not copied on write.
        if clients[client] == nil, clients.count >= Self.clientsKept { makeRoom(now) }
        var state = clients.removeValue(forKey: client) ?? Client(tat: now)
        defer { clients[client] = state }
        if let until = state.blockedUntil {
            if now < until { return .refused(until: until, first: false) }
            state = Client(tat: now)
        }
        let windowStart = now.addingTimeInterval(-Self.window)
        state.arrivals.drop(through: windowStart)
        state.arrivals.append(now)
        if state.arrivals.count > refuseLimit {
            let until = now.addingTimeInterval(Self.refusal)
            state.blockedUntil = until
            state.arrivals = Arrivals()
            return .refused(until: until, first: true)
        }
        let tolerance = TimeInterval(burstLimit - 1) * Self.interval
        let tat = max(state.tat, now)
        let earliest = tat.addingTimeInterval(-tolerance)
        state.tat = tat.addingTimeInterval(Self.interval)
        return earliest <= now ? .serve : .wait(until: earliest)
    }

    /// Clients followed at once (each address or session a stranger uses adds one): beyond this, the idle ones
    /// go, then the quarter heard from longest ago (blocked ones last), so a flood pays for the sort rarely.
    public static let clientsKept = 4096

    private mutating func makeRoom(_ now: Date) {
        prune(now)
        guard clients.count >= Self.clientsKept else { return }
        let byAge = clients.map { key, client in
            (key: key, blocked: client.blockedUntil.map { $0 > now } ?? false, last: client.arrivals.last ?? .distantPast)
        }.sorted { a, b in a.blocked != b.blocked ? !a.blocked : a.last < b.last }
        for old in byAge.prefix(Self.clientsKept / 4) { clients[old.key] = nil }
    }

    /// Forgets clients that are idle and not refused.
    private mutating func prune(_ now: Date) {
        clients = clients.filter { _, c in
            if let until = c.blockedUntil, until > now { return true }
            return c.tat > now || (c.arrivals.last.map { $0 > now.addingTimeInterval(-Self.window) } ?? false)
        }
    }

    public var clientCount: Int { clients.count }
}
