import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Gives back the clean pages of the agent's code once it has done its work (#15), without waking it for
/// that when anything else will:
/// - after start-up: by a timer `settle` seconds after the service starts (one wake-up in the agent's life);
/// - after activity (an agent event, a change to the database): the first time the agent's loop has finished
///   a wake-up's work (`idle`: the epoll loop's hook, in that same wake-up) at least `spacing` after the last
///   release — right after the battery sample or the button press that was the activity, when the last
///   release is old enough, else on a later wake-up (the next sample, the next advert);
/// - only if no wake-up comes by then, by a timer `slack` after the release could first have been done.
/// So an agent that wakes anyway (on battery, with a button) has no wake-up of this service's own, and a
/// quiet one has one per burst of work. `spacing` keeps an agent woken often (adverts every few seconds)
/// from giving back and mapping again the same pages at every wake-up. What a release does, and why it is
/// safe, is `ResidentPages`'s to say.
struct PageReleaseService: Service, CustomStringConvertible {
    var description: String { "PageReleaseService" }

    struct Timing: Sendable {
        var settle: TimeInterval = 10
        /// Less than the battery's minute between samples, so each sample can end with a release.
        var spacing: TimeInterval = 50
        var slack: TimeInterval = 60
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
            /// Work was done since the last release.
            var pending = true
            /// No release before this instant (start-up's settle, then the spacing after the last release).
            var notBefore: Date
            var timer: Task<Void, Never>?
        }
        let value: Mutex<Value>
        init(notBefore: Date) { value = Mutex(Value(notBefore: notBefore)) }
    }

    func run() async throws {
        let start = clock.now()
        let state = State(notBefore: start.addingTimeInterval(timing.settle))
        let clock = self.clock, release = self.release, timing = self.timing

        /// Releases if work is pending and the time has come, and cancels the fallback timer (or, called by
        /// the timer, forgets it whatever it finds).
        @Sendable func releaseIfDue(byTimer: Bool = false) {
            let now = clock.now()
            let timer = state.value.withLock { v -> Task<Void, Never>?? in
                if byTimer { v.timer = nil }
                guard v.pending, now >= v.notBefore else { return nil }
                v.pending = false
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

        state.value.withLock { $0.timer = arm(at: start.addingTimeInterval(timing.settle)) }
        idle { releaseIfDue() }
        await cancelWhenGracefulShutdown {
            for await _ in activity {
                let now = clock.now()
                state.value.withLock { v in
                    v.pending = true
                    // One timer at a time: more activity never postpones the release.
                    if v.timer == nil {
                        v.timer = arm(at: max(now.addingTimeInterval(timing.settle), v.notBefore).addingTimeInterval(timing.slack))
                    }
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
