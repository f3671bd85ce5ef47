import DoseTapCore
import DoseTapLinux
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real scheduling port: timerfd on CLOCK_REALTIME, absolute, cancelled when the clock is set.
@Suite("TimerFDScheduler (timerfd, the real clock)", .serialized)
struct TimerFDSchedulerTests {
    // Its own registry (on the shared loop): other suites sleep on `.shared` meanwhile (the motor's pattern gaps).
    let scheduler = TimerFDScheduler()

    @Test("a deadline in the past is due at once; a near one is due")
    func due() async {
        #expect(await scheduler.sleep(until: Date().addingTimeInterval(-5)) == .due)
        let deadline = Date().addingTimeInterval(0.05)
        #expect(await scheduler.sleep(until: deadline) == .due)
        #expect(Date() >= deadline)
        #expect(scheduler.waiting == 0)
    }

    @Test("cancelling the sleeping task ends the sleep and releases its timer")
    func cancel() async {
        let task = Task { await scheduler.sleep(until: Date().addingTimeInterval(3600)) }
        while scheduler.waiting == 0 { await Task.yield() }
        task.cancel()
        #expect(await task.value == .cancelled)
        #expect(scheduler.waiting == 0)
    }

    @Test("setting the wall clock wakes a sleeper with .clockChanged (TFD_TIMER_CANCEL_ON_SET)")
    func clockSet() async throws {
        let task = Task { await scheduler.sleep(until: Date().addingTimeInterval(3600)) }
        while scheduler.waiting == 0 { await Task.yield() }
        // The least disturbing real clock change there is: set CLOCK_REALTIME to what it reads (it moves
        // back by the microseconds between the two calls). A time namespace cannot do this: it offsets only
        // CLOCK_MONOTONIC and CLOCK_BOOTTIME. Needs CAP_SYS_TIME, which the test command has here and in CI.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let rc = clock_settime(CLOCK_REALTIME, &now)
        if rc != 0 {
            task.cancel()
            Issue.record("clock_settime failed (\(String(cString: strerror(errno)))): this test needs CAP_SYS_TIME")
            return
        }
        #expect(await task.value == .clockChanged)
        #expect(scheduler.waiting == 0)
    }
}
