@testable import DoseTapAgent
import DoseTapCore
import DoseTapTesting
import Foundation
import ServiceLifecycle
import Synchronization
import Testing

/// When the agent gives back its clean pages (#15): by a timer after start-up, and after activity — at the end
/// of a wake-up the agent has anyway (the loop's idle hook) when there is one, by its own timer only when
/// there is none; never while idle, never postponed by more activity, never more often than `spacing`.
@Suite("PageReleaseService")
struct PageReleaseServiceTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// What the service did, shared with its closures.
    final class Record: Sendable {
        let releases = Mutex<[TimeInterval]>([])
        let hook = Mutex<(@Sendable () -> Void)?>(nil)
    }

    final class Harness: Sendable {
        let clock = FakeClock(PageReleaseServiceTests.start)
        let record = Record()
        let poke: AsyncStream<Void>.Continuation
        let task: Task<Void, any Error>

        init() {
            let (activity, poke) = AsyncStream<Void>.makeStream()
            self.poke = poke
            let clock = self.clock
            let record = self.record
            let service = PageReleaseService(
                activity: activity, clock: clock, timing: .init(startUp: 10, settle: 10, spacing: 60, slack: 60),
                idle: { body in record.hook.withLock { $0 = body } },
                release: { record.releases.withLock { $0.append(clock.now().timeIntervalSince(PageReleaseServiceTests.start)) } })
            task = Task { try await service.run() }
        }

        var released: [TimeInterval] { record.releases.withLock { $0 } }
        var timers: [TimeInterval] { clock.deadlines.map { $0.timeIntervalSince(PageReleaseServiceTests.start) } }

        /// The loop finished a wake-up's work: its idle hook runs.
        func loopIdle() { record.hook.withLock { $0 }?() }

        func at(_ t: TimeInterval) { clock.set(PageReleaseServiceTests.start.addingTimeInterval(t)) }

        /// Activity at `t`; returns once the service has seen it (its timer is armed, or none was needed).
        func activity(at t: TimeInterval, expectTimerAt timer: TimeInterval? = nil) async {
            at(t)
            poke.yield()
            if let timer {
                while !timers.contains(timer) { await Task.yield() }
            } else {
                for _ in 0..<100 { await Task.yield() }
            }
        }

        func waitForReleases(_ count: Int) async {
            while released.count < count { await Task.yield() }
        }

        /// Waits until the service installed its idle hook and armed its start-up timer.
        func started() async {
            await clock.waitForSleepers(1)
            while record.hook.withLock({ $0 == nil }) { await Task.yield() }
        }
    }

    @Test("start-up: released by its timer `settle` after start when nothing else wakes the agent; not before")
    func startUpByTimer() async {
        let h = Harness()
        await h.started()
        #expect(h.timers == [10])
        h.at(9)
        h.loopIdle()
        #expect(h.released.isEmpty)
        h.at(10)
        await h.waitForReleases(1)
        #expect(h.released == [10])
        // Idle from then on: no timer, and idle moments release nothing.
        h.at(4000)
        h.loopIdle()
        #expect(h.released == [10])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("activity soon after a release: released on the first wake-up `spacing` after the last one, else by the timer")
    func activityWaitsForSpacing() async {
        let h = Harness()
        await h.started()
        h.at(10)
        await h.waitForReleases(1)
        // A dose 5 s after the start-up release: due at 70 (10 + 60), its fallback timer at 130.
        await h.activity(at: 15, expectTimerAt: 130)
        h.at(69)
        h.loopIdle()
        #expect(h.released == [10])
        // A battery sample at 70 wakes the loop: the release rides on it; the timer is gone.
        h.at(70)
        h.loopIdle()
        #expect(h.released == [10, 70])
        while h.clock.sleeperCount > 0 { await Task.yield() }
        h.task.cancel()
    }

    @Test("activity long after the last release: due `settle` after it, on the first wake-up from then on")
    func activityLongAfter() async {
        let h = Harness()
        await h.started()
        h.at(10)
        await h.waitForReleases(1)
        await h.activity(at: 1000, expectTimerAt: 1070)
        // The same wake-up's end, and one 9 s later: the work's tail may still run.
        h.loopIdle()
        h.at(1009)
        h.loopIdle()
        #expect(h.released == [10])
        h.at(1010)
        h.loopIdle()
        #expect(h.released == [10, 1010])
        while h.clock.sleeperCount > 0 { await Task.yield() }
        // Nothing pending: later idle moments release nothing.
        h.at(2000)
        h.loopIdle()
        #expect(h.released == [10, 1010])
        h.task.cancel()
    }

    @Test("woken often (an advert every 10 s): at most one release per `spacing`, each riding on a wake-up")
    func spacedUnderFrequentWakeUps() async {
        let h = Harness()
        await h.started()
        h.at(10)
        await h.waitForReleases(1)
        for t in stride(from: 15.0, through: 195.0, by: 10) {
            await h.activity(at: t)
            h.loopIdle()
        }
        #expect(h.released == [10, 75, 135, 195])
        h.task.cancel()
    }

    @Test("nothing wakes the agent after activity: its own timer releases, `slack` after it was due, once")
    func fallbackTimer() async {
        let h = Harness()
        await h.started()
        h.at(10)
        await h.waitForReleases(1)
        await h.activity(at: 1000, expectTimerAt: 1070)
        // More activity while due: it neither postpones the release nor arms a second timer.
        await h.activity(at: 1005)
        await h.activity(at: 1050)
        #expect(h.timers == [1070])
        h.at(1070)
        await h.waitForReleases(2)
        #expect(h.released == [10, 1070])
        h.at(5000)
        h.loopIdle()
        #expect(h.released == [10, 1070])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("the agent's activity: an event on the bus and a change of the database each count")
    func agentActivity() async {
        let bus = EventBus()
        let (changes, change) = AsyncStream<Void>.makeStream()
        let activity = PageReleaseService.activity(events: bus, databaseChanges: changes)
        var iterator = activity.makeAsyncIterator()
        // The bus subscription is made before `activity` returns: nothing published after it is lost.
        bus.publish(.settingsChanged)
        #expect(await iterator.next() != nil)
        change.yield()
        #expect(await iterator.next() != nil)
    }

    @Test("shutdown: no release, the idle hook removed, no timer left")
    func shutdown() async throws {
        let h = Harness()
        await h.started()
        h.task.cancel()
        _ = try? await h.task.value
        #expect(h.released.isEmpty)
        #expect(h.record.hook.withLock { $0 == nil })
        while h.clock.sleeperCount > 0 { await Task.yield() }
    }
}
