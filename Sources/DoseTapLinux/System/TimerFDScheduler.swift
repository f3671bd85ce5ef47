internal import CLinuxTime
import DoseTapCore
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The scheduling port on the real machine: each `sleep(until:)` is a `timerfd` on `CLOCK_REALTIME`,
/// armed for the absolute wall-clock instant with `TFD_TIMER_CANCEL_ON_SET`, and one thread waits on all
/// of them in `epoll_wait` (no wake-up of ours until one is due). So:
/// - a reminder rings at its wall-clock minute even when the clock is stepped meanwhile: the kernel
///   cancels the timer on the step and the sleeper gets `.clockChanged` and plans again;
/// - after a suspend, a deadline that passed during sleep fires at once on resume (the realtime clock
///   kept counting), and one still ahead is still absolute.
public final class TimerFDScheduler: Scheduling, @unchecked Sendable {
    /// One waiting thread for the whole process.
    public static let shared = TimerFDScheduler()

    private struct Waiter {
        var fd: Int32
        var continuation: CheckedContinuation<WakeReason, Never>
    }

    private final class Registry: Sendable {
        let waiters = Mutex<[UInt64: Waiter]>([:])
    }

    private let epoll: Int32
    private let registry = Registry()
    private let nextKey = Atomic<UInt64>(1)

    public init() {
        epoll = dosetap_time_epoll_create()
        let thread = Thread { [epoll, registry] in
            var keys = [UInt64](repeating: 0, count: 32)
            while true {
                let n = keys.withUnsafeMutableBufferPointer { dosetap_time_epoll_wait(epoll, $0.baseAddress, 32) }
                guard n > 0 else {
                    if n < 0 { return } // the epoll set is gone: nothing can be waited for any more
                    continue
                }
                for key in keys[0..<Int(n)] {
                    guard let waiter = registry.waiters.withLock({ $0.removeValue(forKey: key) }) else { continue }
                    let result = dosetap_timerfd_consume(waiter.fd)
                    dosetap_time_epoll_remove(epoll, waiter.fd)
                    close(waiter.fd)
                    waiter.continuation.resume(returning: result == 0 ? .clockChanged : .due)
                }
            }
        }
        thread.name = "dosetap-timers"
        thread.start()
    }

    public func now() -> Date { Date() }
    public var timeZone: TimeZone { SystemTimeZone.current }

    public func sleep(until deadline: Date) async -> WakeReason {
        if Task.isCancelled { return .cancelled }
        let fd = dosetap_timerfd_create(0)
        guard fd >= 0 else {
            // Out of descriptors: fall back to a plain wait, so a reminder is late rather than lost.
            let seconds = max(0, deadline.timeIntervalSinceNow)
            do { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) } catch { return .cancelled }
            return .due
        }
        let key = nextKey.add(1, ordering: .relaxed).oldValue
        let interval = deadline.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        let nanoseconds = min(999_999_999, max(0, (interval - seconds) * 1e9))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WakeReason, Never>) in
                if dosetap_timerfd_arm(fd, Int64(seconds), Int64(nanoseconds)) != 0 {
                    let code = errno
                    close(fd)
                    // ECANCELED: the clock was set between reading it and arming.
                    continuation.resume(returning: code == ECANCELED ? .clockChanged : .due)
                    return
                }
                registry.waiters.withLock { $0[key] = Waiter(fd: fd, continuation: continuation) }
                // Cancelled before the waiter was registered: the handler found nothing to cancel.
                if Task.isCancelled, let waiter = registry.waiters.withLock({ $0.removeValue(forKey: key) }) {
                    close(waiter.fd)
                    waiter.continuation.resume(returning: .cancelled)
                    return
                }
                if dosetap_time_epoll_add(epoll, fd, key) != 0 {
                    if let waiter = registry.waiters.withLock({ $0.removeValue(forKey: key) }) {
                        close(waiter.fd)
                        waiter.continuation.resume(returning: .due)
                    }
                }
            }
        } onCancel: { [epoll, registry] in
            if let waiter = registry.waiters.withLock({ $0.removeValue(forKey: key) }) {
                dosetap_time_epoll_remove(epoll, waiter.fd)
                close(waiter.fd)
                waiter.continuation.resume(returning: .cancelled)
            }
        }
    }

    /// How many sleepers wait now (tests).
    public var waiting: Int { registry.waiters.withLock { $0.count } }
}
