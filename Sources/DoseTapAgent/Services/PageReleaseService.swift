import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Gives back the clean pages of the agent's code once it has done its work (#15), without waking it for
/// that when anything else will:
/// - after start-up: by a timer `startUp` seconds after the service starts (one wake-up in the agent's life);
/// - after activity (an agent event, a change to the database): due `settle` after the first activity since
///   the last release (the tail of the work — a write on GRDB's thread, the subscribers' reads, a sound
///   player's exit — is done by then) and no sooner than `spacing` after the last release; done at the end
///   of the first wake-up the agent has anyway once it is due (`idle`: the epoll loop's hook, run in that
///   same wake-up: an advert, a battery sample), or by a timer `slack` after it was due if none came.
/// So an agent woken often (a button's adverts, the battery sample) has no wake-up of this service's own and
/// gives its pages back at most once per `spacing`, and a quiet one (on AC, no button) has one per burst of
/// work. What a release does, and why it is safe, is `ResidentPages`'s to say.
struct PageReleaseService: Service, CustomStringConvertible {
    var description: String { "PageReleaseService" }

    struct Timing: Sendable {
        var startUp: TimeInterval = 30
        var settle: TimeInterval = 10
        /// A release costs about a dozen context switches (measured on battery, docs/performance.md): an agent
        /// woken every minute (the battery sample) or every few seconds (adverts) gives its pages back at most
        /// every ten minutes, so the release never costs it more than about one wake-up a minute.
        var spacing: TimeInterval = 600
        var slack: TimeInterval = 20
    }

    /// Activity: each element is "something ran".
    let activity: AsyncStream<Void>
    let clock: any Scheduling
    let timing: Timing
    /// Installs (or, with nil, removes) the hook run each time the agent's loop is idle.
    let idle: @Sendable ((@Sendable () -> Void)?) -> Void
    let release: @Sendable () -> Void

    private final class State: Sendable {
        struct Value {
            /// When work was first done since the last release; nil: nothing to give back.
            var firstActivity: Date?
            /// No release before this instant (start-up's, then the spacing after the last release).
            var notBefore: Date
            var timer: Task<Void, Never>?
        }
        let value: Mutex<Value>
        init(start: Date, notBefore: Date) { value = Mutex(Value(firstActivity: start, notBefore: notBefore)) }
    }

    func run() async throws {
        let start = clock.now()
        let state = State(start: start, notBefore: start.addingTimeInterval(timing.startUp))
        let clock = self.clock, release = self.release, timing = self.timing

        /// Releases if it is due, and cancels the fallback timer (or, called by the timer, forgets it whatever
        /// it finds).
        @Sendable func releaseIfDue(byTimer: Bool = false) {
            let now = clock.now()
            let timer = state.value.withLock { v -> Task<Void, Never>?? in
                if byTimer { v.timer = nil }
                guard let first = v.firstActivity, now >= max(first.addingTimeInterval(timing.settle), v.notBefore) else { return nil }
                v.firstActivity = nil
                v.notBefore = now.addingTimeInterval(timing.spacing)
                defer { v.timer = nil }
                return .some(v.timer)
            }
            guard let timer else { return }
            timer?.cancel()
            release()
        }
        /// The fallback: a timer at `at`, cancelled if the release rides on another wake-up first.
        @Sendable func arm(at: Date) -> Task<Void, Never> {
            Task {
                // A wall clock set meanwhile: the instant still stands.
                while true {
                    let woke = await clock.sleep(until: at)
                    if woke == .cancelled || Task.isCancelled { return }
                    if woke == .due { break }
                }
                releaseIfDue(byTimer: true)
            }
        }

        state.value.withLock { $0.timer = arm(at: start.addingTimeInterval(timing.startUp)) }
        idle { releaseIfDue() }
        await cancelWhenGracefulShutdown {
            for await _ in activity {
                let now = clock.now()
                state.value.withLock { v in
                    // The first activity since the last release sets when the next one is due; more never
                    // postpones it, and one timer at a time.
                    guard v.firstActivity == nil else { return }
                    v.firstActivity = now
                    let due = max(now.addingTimeInterval(timing.settle), v.notBefore)
                    v.timer?.cancel()
                    v.timer = arm(at: due.addingTimeInterval(timing.slack))
                }
            }
        }
        idle(nil)
        state.value.withLock { $0.timer?.cancel(); $0.timer = nil }
    }

    /// The agent's activity: every event on the bus and every change of the data directory.
    static func activity(events: EventBus, databaseChanges: AsyncStream<Void>?) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let bus = events.subscribe(buffer: 1)
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in bus { continuation.yield() } }
                if let databaseChanges {
                    group.addTask { for await _ in databaseChanges { continuation.yield() } }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
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
