import Foundation
import Synchronization

/// Rendered views (a page's HTML, an API's JSON) kept between requests while nothing they show can have
/// changed: keyed by what the request brings (the page, the session's CSRF key, the theme, …) and valid
/// while
/// - the store's generation is the same (`DirectoryWatcher.generation()`: every write to the data folder,
///   the agent's own and another process's, read synchronously on each request — a dose taken with the
///   command line or a button is on the next page at once),
/// - the agent's event count is the same (a press, a ring, a battery reading: what the pages remember or
///   read outside the store), and
/// - the time is before the instant at which the text would next change (the next minute of the wall clock,
///   or of the night's own minutes: "minutes left" counts from the window's close, not from :00).
///
/// A view is kept per session (the CSRF token is in it): one session's view is never served to another.
/// Without a store generation (a folder that cannot be watched, the unit tests' fixture) nothing is kept.
final class ViewCache: Sendable {
    struct Key: Hashable, Sendable {
        var view: String
        /// The session's CSRF key ("" for a view without a token, such as the API's JSON).
        var session: String
        /// Anything else the view shows from the request or from memory read per request (the theme, the
        /// alarms ringing, the wake warning).
        var variant: String
    }

    struct Entry: Sendable {
        var generation: Generation
        var validUntil: Date
        var text: String
    }

    struct Generation: Equatable, Sendable {
        var store: Int
        var events: Int
    }

    /// At most this many views are kept (7 views × 2 themes × a few browsers; the Sounds page, the largest,
    /// is about 50 KB: a few MB at most); beyond it the cache starts afresh (a session gone stays until then).
    static let capacity = 64

    private let store: (@Sendable () -> Int)?
    private let events = Atomic<Int>(0)
    private let entries = Mutex<[Key: Entry]>([:])
    /// Views drawn because none was kept (the tests count them).
    let renders = Atomic<Int>(0)

    init(storeGeneration: (@Sendable () -> Int)?) {
        store = storeGeneration
    }

    var isEnabled: Bool { store != nil }

    /// The agent published an event: every kept view may be out of date.
    func eventSeen() {
        events.add(1, ordering: .sequentiallyConsistent)
    }

    /// The generation now; nil when nothing may be kept.
    func generation() -> Generation? {
        guard let store else { return nil }
        // Events first: a view rendered after both reads and stored under them is at least as new as both.
        let events = events.load(ordering: .sequentiallyConsistent)
        return Generation(store: store(), events: events)
    }

    /// The kept text for `key`, or `render`'s, which is kept until its `validUntil` (or a change). The
    /// generation is read before rendering: a change during the render leaves a view that is never served.
    func view(_ key: Key, now: Date, render: () throws -> (text: String, validUntil: Date)) rethrows -> String {
        guard let generation = generation() else { return try render().text }
        if let entry = entries.withLock({ $0[key] }), entry.generation == generation, now < entry.validUntil {
            return entry.text
        }
        renders.add(1, ordering: .relaxed)
        let (text, validUntil) = try render()
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(generation: generation, validUntil: validUntil, text: text)
        }
        return text
    }

    /// The next start of a minute after `now`, counted from `anchor` (a Dose 1 at 22:13:27 changes the
    /// night's minutes at :27) — and never later than the next minute of the wall clock.
    static func nextMinute(after now: Date, anchoredAt anchor: Date? = nil) -> Date {
        func next(_ offset: TimeInterval) -> Date {
            let t = now.timeIntervalSince1970 - offset
            return Date(timeIntervalSince1970: ((t / 60).rounded(.down) + 1) * 60 + offset)
        }
        let wall = next(0)
        guard let anchor else { return wall }
        let offset = anchor.timeIntervalSince1970.truncatingRemainder(dividingBy: 60)
        return min(wall, next(offset < 0 ? offset + 60 : offset))
    }
}
