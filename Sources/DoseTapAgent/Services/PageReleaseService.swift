import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Gives back the clean pages of the agent's code when its work has mapped many of them (#15), in the
/// wake-up that did that work and never in one of its own when it can help it.
///
/// At the end of each wake-up of the agent's loop (`idle`: the epoll loop's hook, run in that same wake-up,
/// after its work) the service reads how many kB of file pages are resident (`fileResidentKB`, one `pread` of
/// /proc/self/statm). If that grew by `growthKB` or more since just after the last release — start-up, a
/// battery sample with its write and its subscribers, a dose — it releases at once,
/// unless the last release was less than `spacing` ago; then the first wake-up from that instant on does
/// it, or, if none comes, one timer at that instant (so a burst of work right after a release costs at most one
/// wake-up of this service's own, and an idle agent has none). Work that maps less than `growthKB` (an advert
/// decoded and dropped) releases nothing, so a path the agent runs every few seconds is not given back and
/// mapped again each time. The loop runs the hook only once no event is pending, so the events a piece of
/// work causes itself (the inotify event of its database write) belong to the same wake-up.
///
/// What a release does, and why it is safe, is `ResidentPages`'s to say.
struct PageReleaseService: Service, CustomStringConvertible {
    var description: String { "PageReleaseService" }

    struct Policy: Sendable {
        /// Growth of the file pages resident since the last release that calls for another. Start-up maps about
        /// 34 MB, a battery sample about 11 MB (fault-around included), a button's advert about 4.7 MB: a path
        /// run every few seconds stays mapped, and the larger, rarer ones are given back (docs/performance.md).
        var growthKB: Int = 6144
        /// The least time between two releases: a stream of work (the dashboard under load) gives its pages
        /// back at most this often.
        var spacing: TimeInterval = 10

        init(growthKB: Int = 6144, spacing: TimeInterval = 10) {
            self.growthKB = growthKB
            self.spacing = spacing
        }

        /// The defaults, or `DOSETAP_RELEASE_GROWTH_KB` (256 to 1048576) for measurements; anything else in it
        /// is ignored.
        init(environment: [String: String]) {
            self.init()
            if let text = environment["DOSETAP_RELEASE_GROWTH_KB"], let kb = Int(text), (256...1_048_576).contains(kb) {
                growthKB = kb
            }
        }
    }

    let clock: any Scheduling
    let policy: Policy
    /// Installs (or, with nil, removes) the hook run each time the agent's loop is idle.
    let idle: @Sendable ((@Sendable () -> Void)?) -> Void
    /// kB of file pages resident now; nil when it cannot be read (then nothing is released).
    let fileResidentKB: @Sendable () -> Int?
    let release: @Sendable () -> Void

    private final class State: Sendable {
        struct Value {
            /// File pages resident just after the last release (0 before the first).
            var baseline = 0
            var lastRelease: Date?
            var timer: Task<Void, Never>?
        }
        let value = Mutex(Value())
        func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    func run() async throws {
        let state = State()
        let clock = self.clock, policy = self.policy, release = self.release, fileResidentKB = self.fileResidentKB

        /// Releases if the growth calls for it and the spacing allows; if only the spacing is missing, arms the
        /// one timer at the instant it allows (unless a timer is armed). Called by the timer: forgets it.
        @Sendable func check(byTimer: Bool) {
            guard let resident = fileResidentKB() else { return }
            let now = clock.now()
            enum Decision { case nothing, release(Task<Void, Never>?), arm(Date) }
            let decision = state.withLock { s -> Decision in
                if byTimer { s.timer = nil }
                guard resident - s.baseline >= policy.growthKB else { return .nothing }
                if let last = s.lastRelease, now < last.addingTimeInterval(policy.spacing) {
                    return s.timer == nil ? .arm(last.addingTimeInterval(policy.spacing)) : .nothing
                }
                s.lastRelease = now
                defer { s.timer = nil }
                return .release(s.timer)
            }
            switch decision {
            case .nothing:
                return
            case .release(let timer):
                timer?.cancel()
                release()
                let after = fileResidentKB() ?? resident
                state.withLock { $0.baseline = after }
            case .arm(let at):
                let timer = Task {
                    // A wall clock set meanwhile: the instant still stands.
                    while true {
                        let woke = await clock.sleep(until: at)
                        if woke == .cancelled || Task.isCancelled { return }
                        if woke == .due { break }
                    }
                    check(byTimer: true)
                }
                state.withLock { s in
                    if s.timer == nil { s.timer = timer } else { timer.cancel() }
                }
            }
        }

        idle { check(byTimer: false) }
        // Nothing to do between wake-ups: parked until shutdown (or cancellation).
        try? await gracefulShutdown()
        idle(nil)
        state.withLock { $0.timer?.cancel(); $0.timer = nil }
    }

    /// The release as the agent does it, logged at debug with what it gave back and what it took.
    static func releasing(_ pages: ResidentPages, logger: Logger) -> @Sendable () -> Void {
        {
            let before = ResidentPages.residentKB()
            let started = ContinuousClock.now
            let released = pages.release()
            let took = ContinuousClock.now - started
            let after = ResidentPages.residentKB()
            if released.failed > 0 {
                logger.notice("could not give back the pages of \(released.failed) mappings (madvise refused)")
            }
            logger.debug("gave back clean pages of code", metadata: [
                "mappings": "\(released.mappings)",
                "rssKB": "\(before.map(String.init) ?? "?") → \(after.map(String.init) ?? "?")", "took": "\(took)",
            ])
        }
    }
}
