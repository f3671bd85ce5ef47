internal import CLinuxTime
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The agent's one event loop: one thread in `epoll_wait`, with no timeout of its own. It serves
/// - the scheduling port's timers (`TimerFDScheduler`: one `timerfd` each, in this epoll set),
/// - file descriptors watched with `watch(fd:)` (inotify on the database directory, …), whose handlers
///   run on this thread,
/// - and, once `installAsGlobalExecutor()` has run (`dosetap agent` does it first thing), Swift
///   concurrency's global executor: every job the runtime would hand to libdispatch's worker pool, and
///   every `Task.sleep`, runs here.
///
/// Why (docs/performance.md, "Idle wake-ups"): the first libdispatch worker thread of a non-overcommit
/// root queue — the default global executor's, `Task.sleep`'s, `DispatchQueue.global()`'s — starts
/// libdispatch's workqueue monitor, a 1 Hz timer on its manager thread that never stops. With the
/// runtime's jobs and timers here, a quiet agent sleeps in this one `epoll_wait` until a descriptor is
/// ready: no wake-up of its own.
///
/// One thread: jobs run one after another, in the order they were queued. A job that blocks (a
/// synchronous SQLite commit) delays the others by that long, as it would delay a dose decision anyway.
public final class EpollLoop: SerialExecutor, @unchecked Sendable {
    /// The process's loop (its thread starts on first use).
    public static let shared = EpollLoop()

    /// What a watched descriptor's handler is told: its `epoll` event mask.
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: UInt32(DOSETAP_EPOLLIN))
        public static let writable = Events(rawValue: UInt32(DOSETAP_EPOLLOUT))
        public static let error = Events(rawValue: UInt32(DOSETAP_EPOLLERR))
        public static let hangUp = Events(rawValue: UInt32(DOSETAP_EPOLLHUP))
    }

    /// A watch, to end it with `unwatch`.
    public struct Watch: Sendable, Hashable {
        fileprivate let key: UInt64
    }

    private enum Work {
        /// A job enqueued on this loop as a serial executor (an actor whose executor it is): run isolated to it.
        case job(UnownedJob)
        /// A job handed to the global executor (`installAsGlobalExecutor`): run on the generic executor, as
        /// libdispatch's pool would. Run "on" this loop instead, its task would count as isolated to the loop,
        /// and each call it makes into nonisolated async code would hop (a suspension, its job queued behind
        /// the others) where the code has none — code that holds a lock across such a call, "safe since the
        /// closure runs straight away" (swift-async-algorithms' `merge`, behind ServiceLifecycle's
        /// `cancelOnGracefulShutdown`), then waits on it from the next job queued: the agent's loop deadlocked
        /// on a lock it held itself (docs/performance.md).
        case globalJob(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private struct Handler {
        var fd: Int32
        var oneShot: Bool
        var body: @Sendable (Events) -> Void
    }

    private struct State {
        var work: [Work] = []
        /// The eventfd was written and the loop has not yet taken the work: no need to write it again.
        var wakePending = false
        var handlers: [UInt64: Handler] = [:]
        /// Run each time the loop has nothing left to do, just before it waits again.
        var idle: (@Sendable () -> Void)?
    }

    private let epoll: Int32
    private let wake: Int32
    private let state = Mutex<State>(State())
    private let nextKey = Atomic<UInt64>(1)
    private let threadID = Atomic<UInt64>(0)

    public init() {
        epoll = dosetap_time_epoll_create()
        wake = dosetap_eventfd_create()
        precondition(epoll >= 0 && wake >= 0, "EpollLoop: no epoll or eventfd (\(String(cString: strerror(errno))))")
        _ = dosetap_epoll_watch(epoll, wake, UInt32(DOSETAP_EPOLLIN), 0, 0)
        let started = startThread(name: "dosetap-loop") { [self] in run() }
        precondition(started, "EpollLoop: no thread for its loop")
    }

    // MARK: - Swift concurrency

    public func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Makes this loop Swift concurrency's global executor for the rest of the process (jobs and
    /// `Task.sleep`). Call it once, before the work that should run here starts; false when another global
    /// executor hook was already installed (nothing changed then).
    @discardableResult
    public static func installAsGlobalExecutor() -> Bool {
        _ = shared
        let installed = dosetap_install_global_executor(
            { job in EpollLoop.shared.submit(.globalJob(unsafeBitCast(job, to: UnownedJob.self))) },
            { job, nanoseconds in EpollLoop.shared.submit(unsafeBitCast(job, to: UnownedJob.self), after: nanoseconds) }
        ) == 1
        if installed { installedFlag.store(true, ordering: .releasing) }
        return installed
    }

    private static let installedFlag = Atomic<Bool>(false)

    /// True once `installAsGlobalExecutor()` succeeded in this process.
    public static var isGlobalExecutor: Bool { installedFlag.load(ordering: .acquiring) }

    /// Runs `body` on the loop's thread, after the work already queued.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        submit(.closure(body))
    }

    /// Runs `body` on the loop's thread and waits for it: inline when called there (so a caller on the loop
    /// never waits for itself), else queued behind the work already there while the caller's thread blocks.
    public func sync<T>(_ body: () throws -> T) rethrows -> T {
        if inLoop { return try body() }
        return try withoutActuallyEscaping(body) { body in
            // The loop must let go of `body` before the caller returns (withoutActuallyEscaping checks
            // that it did): the queued closure holds only this box, emptied before the caller is released.
            let box = SyncBox<T>()
            box.body = body
            let condition = SyncCondition()
            execute {
                box.run()
                condition.signal()
            }
            condition.wait()
            return try box.result!.get()
        }
    }

    /// Arms a monotonic timer (libdbus's timeouts): `handler` runs on the loop's thread after `nanoseconds`,
    /// then every `nanoseconds` until `unwatch`.
    public func repeatingTimer(every nanoseconds: UInt64, _ handler: @escaping @Sendable () -> Void) throws(SystemCallError) -> Watch {
        let fd = dosetap_monotonic_timer(nanoseconds, nanoseconds)
        guard fd >= 0 else { throw SystemCallError(description: "timerfd: \(String(cString: strerror(errno)))") }
        do {
            return try watch(fd: fd) { _ in
                _ = dosetap_timerfd_consume(fd)
                handler()
            }
        } catch {
            close(fd)
            throw error
        }
    }

    /// True on the loop's own thread.
    public var inLoop: Bool { threadID.load(ordering: .acquiring) == UInt64(pthread_self()) }

    // MARK: - File descriptors

    /// Calls `handler` on the loop's thread whenever `fd` is ready for `events` (level-triggered: a handler
    /// that leaves data unread is called again). `oneShot`: once, then the watch ends by itself. The caller
    /// keeps owning `fd`; close it only after `unwatch` (or pass `closing: true` to `unwatch`).
    public func watch(fd: Int32, for events: Events = .readable, oneShot: Bool = false,
                      _ handler: @escaping @Sendable (Events) -> Void) throws(SystemCallError) -> Watch {
        let key = nextKey.add(1, ordering: .relaxed).oldValue
        state.withLock { $0.handlers[key] = Handler(fd: fd, oneShot: oneShot, body: handler) }
        if dosetap_epoll_watch(epoll, fd, events.rawValue, oneShot ? 1 : 0, key) != 0 {
            let reason = String(cString: strerror(errno))
            _ = state.withLock { $0.handlers.removeValue(forKey: key) }
            throw SystemCallError(description: "epoll: cannot watch descriptor \(fd): \(reason)")
        }
        return Watch(key: key)
    }

    /// Ends a watch: its handler is not called after this returns on the loop's thread, nor after the
    /// removal queued here has run on it. With `closing: true` the descriptor is closed there too (so a
    /// handler already running never reads a descriptor number that was closed and reused meanwhile).
    public func unwatch(_ watch: Watch, closing: Bool = false) {
        let finish: @Sendable () -> Void = { [self] in
            if let handler = state.withLock({ $0.handlers.removeValue(forKey: watch.key) }) {
                _ = dosetap_time_epoll_remove(epoll, handler.fd)
                if closing { close(handler.fd) }
            }
        }
        if inLoop { finish() } else { execute(finish) }
    }

    // MARK: - The loop

    private func submit(_ work: Work) {
        // On the loop's own thread the work is run before the next `epoll_wait` anyway: no eventfd write.
        let onLoop = inLoop
        let signal = state.withLock { s -> Bool in
            s.work.append(work)
            if s.wakePending || onLoop { return false }
            s.wakePending = true
            return true
        }
        if signal { dosetap_eventfd_signal(wake) }
    }

    /// A delayed job (`Task.sleep` once installed): a one-shot `CLOCK_MONOTONIC` timerfd in this epoll set.
    private func submit(_ job: UnownedJob, after nanoseconds: UInt64) {
        let fd = dosetap_monotonic_timer(nanoseconds, 0)
        guard fd >= 0 else {
            // Out of descriptors: run it now rather than never (a sleep that returns early, not a hang).
            submit(.globalJob(job))
            return
        }
        do {
            _ = try watch(fd: fd, oneShot: true) { _ in
                close(fd)
                dosetap_run_global_job(unsafeBitCast(job, to: UnsafeMutableRawPointer.self))
            }
        } catch {
            close(fd)
            submit(.globalJob(job))
        }
    }

    private func run() {
        threadID.store(UInt64(pthread_self()), ordering: .releasing)
        var keys = [UInt64](repeating: 0, count: 64)
        var masks = [UInt32](repeating: 0, count: 64)
        func wait(_ timeoutMs: Int32) -> Int32 {
            keys.withUnsafeMutableBufferPointer { k in
                masks.withUnsafeMutableBufferPointer { m in dosetap_epoll_wait_events(epoll, k.baseAddress, m.baseAddress, 64, timeoutMs) }
            }
        }
        // After work, with an idle hook: first a look (timeout 0) for events already pending — the inotify event
        // of the database write just made, a D-Bus reply already in — which belong to the same wake-up; the
        // hook runs only when nothing is, then the loop sleeps.
        var worked = false
        while true {
            let idle = worked ? state.withLock({ $0.idle }) : nil
            var n = wait(idle == nil ? -1 : 0)
            worked = false
            if n == 0, let idle {
                idle()
                runQueued()
                n = wait(-1)
            }
            if n < 0 { return } // the epoll set is gone: nothing can be waited for any more
            for i in 0..<Int(n) {
                let key = keys[i]
                if key == 0 {
                    dosetap_eventfd_drain(wake)
                    continue
                }
                let handler = state.withLock { s -> Handler? in
                    guard let h = s.handlers[key] else { return nil }
                    if h.oneShot {
                        s.handlers[key] = nil
                        _ = dosetap_time_epoll_remove(epoll, h.fd)
                    }
                    return h
                }
                handler?.body(Events(rawValue: masks[i]))
            }
            runQueued()
            worked = true
        }
    }

    /// Runs `body` on the loop's thread each time the loop has done all its work and no event is pending, just
    /// before it waits again: in the same wake-up as that work, never one of its own (nil removes it). It must
    /// be short.
    public func whenIdle(_ body: (@Sendable () -> Void)?) {
        state.withLock { $0.idle = body }
    }

    /// Runs everything queued, including what the work itself queues, until nothing is left.
    private func runQueued() {
        while true {
            let batch = state.withLock { s -> [Work] in
                if s.work.isEmpty {
                    s.wakePending = false
                    return []
                }
                let batch = s.work
                s.work = []
                return batch
            }
            if batch.isEmpty { return }
            for work in batch {
                switch work {
                case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
                case .globalJob(let job): dosetap_run_global_job(unsafeBitCast(job, to: UnsafeMutableRawPointer.self))
                case .closure(let body): body()
                }
            }
        }
    }
}

/// The result of a `sync` block, written on the loop's thread before the waiting thread is released.
private final class SyncBox<T>: @unchecked Sendable {
    var body: (() throws -> T)?
    var result: Result<T, any Error>?

    func run() {
        guard let body else { return }
        self.body = nil
        result = Result { try body() }
    }
}

/// A one-time event for `EpollLoop.sync`'s waiting thread.
private final class SyncCondition: @unchecked Sendable {
    private var condition = pthread_cond_t()
    private var mutex = pthread_mutex_t()
    private var done = false
    init() {
        pthread_cond_init(&condition, nil)
        pthread_mutex_init(&mutex, nil)
    }
    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }
    func signal() {
        pthread_mutex_lock(&mutex)
        done = true
        pthread_cond_signal(&condition)
        pthread_mutex_unlock(&mutex)
    }
    func wait() {
        pthread_mutex_lock(&mutex)
        while !done { pthread_cond_wait(&condition, &mutex) }
        pthread_mutex_unlock(&mutex)
    }
}

/// A value touched only on the loop's thread, carried through a `@Sendable` handler.
struct LoopBound<T>: @unchecked Sendable {
    let value: T
}
