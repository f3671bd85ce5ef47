internal import CLinuxTime
import DoseTapCore
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The scheduling port on the real machine: each `sleep(until:)` is a `timerfd` on `CLOCK_REALTIME`,
/// armed for the absolute wall-clock instant with `TFD_TIMER_CANCEL_ON_SET`, waited for in the agent's one
/// event loop (`EpollLoop`: one thread in `epoll_wait`, no wake-up of ours until one is due). So:
/// - a reminder rings at its wall-clock minute even when the clock is stepped meanwhile: the kernel
///   cancels the timer on the step and the sleeper gets `.clockChanged` and plans again;
/// - after a suspend, a deadline that passed during sleep fires at once on resume (the realtime clock
///   kept counting), and one still ahead is still absolute.
public final class TimerFDScheduler: Scheduling, @unchecked Sendable {
    /// The process's scheduler, on the process's loop.
    public static let shared = TimerFDScheduler()

    private struct Waiter {
        var fd: Int32
        var watch: EpollLoop.Watch?
        var continuation: CheckedContinuation<WakeReason, Never>
    }

    private final class Registry: Sendable {
        let waiters = Mutex<[UInt64: Waiter]>([:])
        /// Cancelled before their watch was known: the registering code closes their descriptor.
        let orphans = Mutex<Set<UInt64>>([])
        func take(_ key: UInt64) -> Waiter? { waiters.withLock { $0.removeValue(forKey: key) } }
    }

    private let loop: EpollLoop
    private let registry = Registry()
    private let nextKey = Atomic<UInt64>(1)

    public init(loop: EpollLoop = .shared) {
        self.loop = loop
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
        let loop = self.loop
        let registry = self.registry
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WakeReason, Never>) in
                if dosetap_timerfd_arm(fd, Int64(seconds), Int64(nanoseconds)) != 0 {
                    let code = errno
                    close(fd)
                    // ECANCELED: the clock was set between reading it and arming.
                    continuation.resume(returning: code == ECANCELED ? .clockChanged : .due)
                    return
                }
                registry.waiters.withLock { $0[key] = Waiter(fd: fd, watch: nil, continuation: continuation) }
                // Cancelled before the waiter was registered: the handler found nothing to cancel.
                if Task.isCancelled, let waiter = registry.take(key) {
                    close(waiter.fd)
                    waiter.continuation.resume(returning: .cancelled)
                    return
                }
                do {
                    // One shot: the loop drops the watch itself when it fires; this handler runs on its thread.
                    let watch = try loop.watch(fd: fd, oneShot: true) { _ in
                        guard let waiter = registry.take(key) else { return } // cancelled meanwhile: closed there
                        let result = dosetap_timerfd_consume(waiter.fd)
                        close(waiter.fd)
                        waiter.continuation.resume(returning: result == 0 ? .clockChanged : .due)
                    }
                    let ended = registry.waiters.withLock { w -> Bool in
                        guard w[key] != nil else { return true }
                        w[key]?.watch = watch
                        return false
                    }
                    // Fired or cancelled between `watch` and here. Fired: the handler closed it. Cancelled:
                    // `onCancel` could not unwatch a watch it did not know yet, so it is done here.
                    if ended, registry.orphans.withLock({ $0.remove(key) }) != nil {
                        loop.unwatch(watch, closing: true)
                    }
                } catch {
                    if let waiter = registry.take(key) {
                        close(waiter.fd)
                        waiter.continuation.resume(returning: .due)
                    } else if registry.orphans.withLock({ $0.remove(key) }) != nil {
                        close(fd)
                    }
                }
            }
        } onCancel: {
            if let waiter = registry.take(key) {
                if let watch = waiter.watch {
                    loop.unwatch(watch, closing: true)
                } else {
                    // Not in the epoll set yet: the registering code unwatches and closes it.
                    registry.orphans.withLock { _ = $0.insert(key) }
                }
                waiter.continuation.resume(returning: .cancelled)
            }
        }
    }

    /// How many sleepers wait now (tests).
    public var waiting: Int { registry.waiters.withLock { $0.count } }
}
