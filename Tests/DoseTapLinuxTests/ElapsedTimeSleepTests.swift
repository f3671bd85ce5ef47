@testable import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing

/// `Scheduling.sleep(elapsing:)`: an interval of elapsed time (a back-off, a timeout) through the
/// scheduling port, on the fake clock.
@Suite("Waiting an interval through the scheduling port")
struct ElapsedTimeSleepTests {
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000))

    @Test("it ends when the clock has moved by the interval, not before")
    func due() async {
        let wait = Task { [clock] in await clock.sleep(elapsing: .milliseconds(1500)) }
        await clock.waitForSleepers(1)
        clock.advance(by: 1.499)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: 0.002)
        #expect(await wait.value)
    }

    /// Forward by less than the interval (a step past the deadline counts as reached on the fake clock), or
    /// back by an hour: either way the whole interval is still to come after the step.
    @Test("the wall clock set forward or back is not elapsed time: the whole interval is waited again from the new time",
          arguments: [5.0, -3600.0])
    func stepped(by offset: TimeInterval) async {
        let wait = Task { [clock] in await clock.sleep(elapsing: .seconds(10)) }
        await clock.waitForSleepers(1)
        clock.step(to: clock.now().addingTimeInterval(offset))
        await clock.waitForSleepers(1)
        clock.advance(by: 9.9)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: 0.2)
        #expect(await wait.value)
    }

    @Test("cancelled: it returns false at once")
    func cancelled() async {
        let wait = Task { [clock] in await clock.sleep(elapsing: .seconds(10)) }
        await clock.waitForSleepers(1)
        wait.cancel()
        #expect(await wait.value == false)
        #expect(clock.sleeperCount == 0)
    }

    @Test("no interval: it ends at once")
    func zero() async {
        #expect(await clock.sleep(elapsing: .zero))
    }
}
