@testable import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import ServiceLifecycle
import Synchronization
import Testing

/// When the agent gives back its clean pages (#15): at the end of a wake-up whose work mapped `growthKB` or
/// more of file pages since the last release; within `spacing` of the last release only at the first
/// wake-up after it, or by one timer if none comes; never while idle, never for less growth.
@Suite("PageReleaseService")
struct PageReleaseServiceTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// What the service did and what it reads, shared with its closures.
    final class Record: Sendable {
        let releases = Mutex<[TimeInterval]>([])
        let hook = Mutex<(@Sendable () -> Void)?>(nil)
        /// kB of file pages resident (the test's stand-in for /proc/self/statm); nil: unreadable.
        let resident = Mutex<Int?>(30_000)
        /// What a release leaves resident.
        let afterRelease = Mutex(16_000)
    }

    final class Harness: Sendable {
        let clock = FakeClock(PageReleaseServiceTests.start)
        let record = Record()
        let task: Task<Void, any Error>

        init(growthKB: Int = 6144, spacing: TimeInterval = 10) {
            let clock = self.clock
            let record = self.record
            let service = PageReleaseService(
                clock: clock, policy: .init(growthKB: growthKB, spacing: spacing),
                idle: { body in record.hook.withLock { $0 = body } },
                fileResidentKB: { record.resident.withLock { $0 } },
                release: {
                    record.releases.withLock { $0.append(clock.now().timeIntervalSince(PageReleaseServiceTests.start)) }
                    let left = record.afterRelease.withLock { $0 }
                    record.resident.withLock { $0 = left }
                })
            task = Task { try await service.run() }
        }

        var released: [TimeInterval] { record.releases.withLock { $0 } }
        var timers: [TimeInterval] { clock.deadlines.map { $0.timeIntervalSince(PageReleaseServiceTests.start) } }

        func at(_ t: TimeInterval) { clock.set(PageReleaseServiceTests.start.addingTimeInterval(t)) }

        /// A wake-up at `t` whose work leaves `kB` of file pages resident: the loop's idle hook runs at its end.
        func wakeUp(at t: TimeInterval, resident kB: Int? = nil) {
            at(t)
            if let kB { record.resident.withLock { $0 = kB } }
            record.hook.withLock { $0 }?()
        }

        func waitForReleases(_ count: Int) async {
            while released.count < count { await Task.yield() }
        }

        /// Released at 100, then 7 MB mapped at 103 (spacing 10 s): too soon, so its one timer is armed for 110.
        static func grewTooSoonAfterARelease() async -> Harness {
            let h = Harness(spacing: 10)
            await h.started()
            h.wakeUp(at: 100)
            h.wakeUp(at: 103, resident: 23_000)
            await h.clock.waitForSleepers(1)
            return h
        }

        /// Waits until the service installed its idle hook.
        func started() async {
            while record.hook.withLock({ $0 == nil }) { await Task.yield() }
        }
    }

    @Test("start-up: the end of the first wake-up gives back what start-up mapped, with no timer")
    func startUp() async {
        let h = Harness()
        await h.started()
        #expect(h.clock.sleeperCount == 0)
        h.wakeUp(at: 0.5)
        #expect(h.released == [0.5])
        // Idle from then on: nothing, and no timer.
        h.wakeUp(at: 4000)
        #expect(h.released == [0.5])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("growth: one kB under `growthKB` since the last release gives back nothing; `growthKB` gives back at once")
    func growthBoundary() async {
        let h = Harness(growthKB: 6144)
        await h.started()
        h.wakeUp(at: 1)
        #expect(h.released == [1])
        // The baseline is what the release left (16,000 kB), not what was there before it.
        h.wakeUp(at: 100, resident: 16_000 + 6143)
        #expect(h.released == [1])
        h.wakeUp(at: 160, resident: 16_000 + 6144)
        #expect(h.released == [1, 160])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("a battery sample a minute: each one's pages go back at the end of its own wake-up; adverts in between release nothing")
    func batterySamples() async {
        let h = Harness()
        await h.started()
        h.wakeUp(at: 1)
        for minute in 1...5 {
            let t = Double(minute) * 60
            // The sample maps about 11 MB of code.
            h.wakeUp(at: t, resident: 27_000)
            // Adverts every 10 s map about 4.7 MB, and keep it.
            for advert in 1...5 { h.wakeUp(at: t + Double(advert) * 10, resident: 20_700) }
        }
        #expect(h.released == [1, 60, 120, 180, 240, 300])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("growth within `spacing` of the last release: the first wake-up from then on gives it back, and the timer goes")
    func spacingRidesOnAWakeUp() async {
        let h = Harness(spacing: 10)
        await h.started()
        h.wakeUp(at: 100)
        // A dose 3 s later maps 7 MB: too soon; one timer at 110.
        h.wakeUp(at: 103, resident: 23_000)
        #expect(h.released == [100])
        await h.clock.waitForSleepers(1)
        #expect(h.timers == [110])
        // More work before then: no second timer.
        h.wakeUp(at: 105, resident: 24_000)
        #expect(h.timers == [110])
        // An advert at 109.5: still too soon; at 110.5 it is not.
        h.wakeUp(at: 109.5)
        #expect(h.released == [100])
        h.wakeUp(at: 110.5)
        #expect(h.released == [100, 110.5])
        while h.clock.sleeperCount > 0 { await Task.yield() }
        h.task.cancel()
    }

    @Test("growth within `spacing` and no wake-up after it: its own timer gives it back, once")
    func spacingByTimer() async {
        let h = await Harness.grewTooSoonAfterARelease()
        h.at(110)
        await h.waitForReleases(2)
        #expect(h.released == [100, 110])
        while h.clock.sleeperCount > 0 { await Task.yield() }
        h.wakeUp(at: 5000)
        #expect(h.released == [100, 110])
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("a timer that finds the growth already given back, or gone, does nothing")
    func timerFindsNothing() async {
        let h = await Harness.grewTooSoonAfterARelease()
        // The kernel reclaimed the pages meanwhile (memory pressure): nothing to give back at 110.
        h.record.resident.withLock { $0 = 16_500 }
        h.at(110)
        while h.clock.sleeperCount > 0 { await Task.yield() }
        #expect(h.released == [100])
        h.task.cancel()
    }

    @Test("the resident size cannot be read: nothing is given back, and no timer")
    func unreadable() async {
        let h = Harness()
        h.record.resident.withLock { $0 = nil }
        await h.started()
        h.wakeUp(at: 1)
        h.wakeUp(at: 100)
        #expect(h.released.isEmpty)
        #expect(h.clock.sleeperCount == 0)
        h.task.cancel()
    }

    @Test("shutdown: no release, the idle hook removed, no timer left")
    func shutdown() async throws {
        let h = await Harness.grewTooSoonAfterARelease()
        h.task.cancel()
        _ = try? await h.task.value
        #expect(h.released == [100])
        #expect(h.record.hook.withLock { $0 == nil })
        while h.clock.sleeperCount > 0 { await Task.yield() }
    }

    @Test("the policy from the environment: DOSETAP_RELEASE_GROWTH_KB within 256…1048576, else the default")
    func policyFromEnvironment() {
        #expect(PageReleaseService.Policy(environment: [:]).growthKB == 6144)
        #expect(PageReleaseService.Policy(environment: ["DOSETAP_RELEASE_GROWTH_KB": "4096"]).growthKB == 4096)
        #expect(PageReleaseService.Policy(environment: ["DOSETAP_RELEASE_GROWTH_KB": "256"]).growthKB == 256)
        #expect(PageReleaseService.Policy(environment: ["DOSETAP_RELEASE_GROWTH_KB": "1048576"]).growthKB == 1_048_576)
        for bad in ["255", "1048577", "-1", "nan", "", "4096 ", "٤٠٩٦"] {
            #expect(PageReleaseService.Policy(environment: ["DOSETAP_RELEASE_GROWTH_KB": bad]).growthKB == 6144, "\(bad)")
        }
    }

    @Test("statm: the third of seven numbers, in pages; anything else is unreadable")
    func statm() throws {
        #expect(FileResidentMeter.sharedPages(statm: "7654 443 416 5 0 123 0\n") == 416)
        for bad in ["7654 443 416 5 0 123 0", "7654 443 416 5 0 123\n", "7654 443 416 5 0 123 0 9\n", "7654 443 -416 5 0 123 0\n",
                    "7654 443 4a6 5 0 123 0\n", "7654  443 416 5 0 123 0\n", "", "\n", "7654 443 ٤١٦ 5 0 123 0\n",
                    "7654 443 99999999999999999999 5 0 123 0\n"] {
            #expect(FileResidentMeter.sharedPages(statm: bad) == nil, "\(bad.debugDescription)")
        }
        // This process's own: a number of kB, read twice from the one open file.
        let meter = try #require(FileResidentMeter())
        let first = try #require(meter.kilobytes())
        #expect(first > 0)
        #expect(meter.kilobytes() != nil)
        #expect(FileResidentMeter(path: "/nonexistent/statm") == nil)
    }
}
