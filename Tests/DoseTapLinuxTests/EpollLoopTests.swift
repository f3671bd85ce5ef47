import DoseTapLinux
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The agent's one event loop: descriptor watches and a serial executor on one `epoll_wait` thread. (Its
/// role as the process's global executor is exercised by every end-to-end test of `dosetap agent`, which
/// installs it; a test process keeps the default executor.)
@Suite("EpollLoop (one epoll thread: descriptors and jobs)")
struct EpollLoopTests {
    /// Runs its jobs on a loop of its own.
    actor OnLoop {
        let loop: EpollLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        var order: [Int] = []
        init(loop: EpollLoop) { self.loop = loop }
        func record(_ n: Int) -> Bool {
            order.append(n)
            return loop.inLoop
        }
    }

    @Test("an actor whose executor is the loop runs there, in order")
    func serialExecutor() async {
        let loop = EpollLoop()
        let actor = OnLoop(loop: loop)
        for n in 0..<50 { #expect(await actor.record(n)) }
        #expect(await actor.order == Array(0..<50))
        #expect(!loop.inLoop)
    }

    @Test("the idle hook runs on the loop's thread after all the work of a wake-up, in that wake-up; removed, it no longer runs")
    func idleHook() throws {
        let loop = EpollLoop()
        let log = Mutex<[String]>([])
        loop.whenIdle { log.withLock { $0.append(loop.inLoop ? "idle on loop" : "idle elsewhere") } }
        // One wake-up with three closures queued at once (the first queues a fourth): the hook runs once,
        // after all of them.
        loop.sync {
            loop.execute { log.withLock { $0.append("a") }; loop.execute { log.withLock { $0.append("d") } } }
            loop.execute { log.withLock { $0.append("b") } }
            loop.execute { log.withLock { $0.append("c") } }
        }
        let deadline = Date().addingTimeInterval(30)
        while log.withLock({ !$0.contains("d") || $0.last != "idle on loop" }) && Date() < deadline { usleep(1000) }
        let seen = log.withLock { $0 }
        let work = seen.filter { !$0.hasPrefix("idle") }
        #expect(work == ["a", "b", "c", "d"])
        #expect(seen.last == "idle on loop")
        #expect(!seen.contains("idle elsewhere"))
        // After the last piece of work, the hook ran before the loop waited again (no piece after it).
        #expect((seen.lastIndex(of: "d") ?? .max) < (seen.lastIndex(of: "idle on loop") ?? -1))
        loop.whenIdle(nil)
        let count = log.withLock { $0.count }
        loop.sync {}
        loop.sync {}
        #expect(log.withLock { $0.count } == count)
    }

    @Test("an event already pending when the work is done (what the work itself caused) is handled before the idle hook")
    func idleHookAfterPendingEvents() throws {
        let loop = EpollLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(writeEnd) }
        let log = Mutex<[String]>([])
        let watch = try loop.watch(fd: readEnd) { _ in
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(readEnd, &buffer, buffer.count) > 0 {}
            log.withLock { $0.append("event") }
        }
        loop.whenIdle { log.withLock { $0.append("idle") } }
        // The work writes to the pipe, as a database write makes an inotify event: the event is the same wake-up's.
        loop.sync {
            log.withLock { $0.append("work") }
            _ = write(writeEnd, "x", 1)
        }
        let deadline = Date().addingTimeInterval(30)
        while log.withLock({ !$0.contains("idle") }) && Date() < deadline { usleep(1000) }
        #expect(log.withLock { $0 } == ["work", "event", "idle"])
        loop.whenIdle(nil)
        loop.unwatch(watch, closing: true)
    }

    /// A job the runtime hands the global executor runs on the generic executor, as libdispatch's pool runs
    /// it: a call into `@concurrent` (nonisolated) async code that does not suspend runs in place, so the
    /// closure queued just before it runs after it. Run "on" the loop as a serial executor, the call was a hop
    /// and the queued closure ran in between — what let swift-async-algorithms' `merge` (a lock held across
    /// such a call) deadlock the agent's loop. In a process of its own: the global executor is process-wide.
    @Test("as the global executor, a task's call into nonisolated async code runs in place: no hop, nothing queued runs in between")
    func globalJobsRunOnTheGenericExecutor() async {
        await #expect(processExitsWith: .exitCode(0)) {
            guard EpollLoop.installAsGlobalExecutor() else { exit(3) }
            final class Order: Sendable {
                let log = Mutex<[String]>([])
                func add(_ entry: String) { log.withLock { $0.append(entry) } }
            }
            @concurrent func step(_ order: Order) async -> Bool {
                order.add("step")
                return EpollLoop.shared.inLoop
            }
            let order = Order()
            let onLoop = await Task { () -> Bool in
                guard EpollLoop.shared.inLoop else { return false }
                EpollLoop.shared.execute { order.add("queued") }
                let stepOnLoop = await step(order)
                order.add("after")
                return stepOnLoop
            }.value
            // Let the queued closure run (it must have, by the time this job was queued behind it).
            let entries = await Task { order.log.withLock { $0 } }.value
            exit(onLoop && entries == ["step", "after", "queued"] ? 0 : 1)
        }
    }

    @Test("sync from another thread runs on the loop and returns its value, again and again; nested, it runs inline")
    func sync() throws {
        let loop = EpollLoop()
        var sum = 0
        for i in 0..<5000 {
            let (value, onLoop) = loop.sync { (i, loop.inLoop) }
            #expect(onLoop)
            sum += value
        }
        #expect(sum == 5000 * 4999 / 2)
        #expect(loop.sync { loop.sync { loop.inLoop } })
        struct Refused: Error {}
        #expect(throws: Refused.self) { try loop.sync { throw Refused() } }
    }

    @Test("a watched pipe's handler runs on the loop's thread while data waits; unwatch ends it and can close")
    func watchPipe() async throws {
        let loop = EpollLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let (stream, continuation) = AsyncStream<(String, Bool)>.makeStream()
        let watch = try loop.watch(fd: readEnd) { events in
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readEnd, &buffer, buffer.count)
            #expect(events.contains(.readable))
            continuation.yield((String(decoding: buffer.prefix(max(0, n)), as: UTF8.self), loop.inLoop))
        }
        var received = stream.makeAsyncIterator()
        #expect(write(writeEnd, "one", 3) == 3)
        let first = await received.next()
        #expect(first?.0 == "one")
        #expect(first?.1 == true)
        #expect(write(writeEnd, "two", 3) == 3)
        #expect(await received.next()?.0 == "two")

        var before = stat()
        #expect(fstat(readEnd, &before) == 0)
        loop.unwatch(watch, closing: true)
        // The removal runs on the loop's thread, before work queued after it.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.execute { done.resume() } }
        // Closed: the number is free, or (tests run in parallel) already reused for another file.
        var after = stat()
        #expect(fstat(readEnd, &after) != 0 || after.st_ino != before.st_ino || after.st_dev != before.st_dev)
        close(writeEnd)
        continuation.finish()
    }

    @Test("a one-shot watch fires once and removes itself")
    func oneShot() async throws {
        let loop = EpollLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let calls = Atomic<Int>(0)
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        _ = try loop.watch(fd: fds[0], oneShot: true) { _ in
            calls.add(1, ordering: .relaxed)
            continuation.yield()
        }
        #expect(write(fds[1], "x", 1) == 1) // left unread: level-triggered, yet one shot
        var it = stream.makeAsyncIterator()
        await it.next()
        // A second readiness (still unread, and more written) must not call it again.
        #expect(write(fds[1], "y", 1) == 1)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.execute { done.resume() } }
        #expect(calls.load(ordering: .relaxed) == 1)
        close(fds[0])
        close(fds[1])
    }
}
