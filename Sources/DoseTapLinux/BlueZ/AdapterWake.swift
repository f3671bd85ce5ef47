import DoseTapCore
import Synchronization

/// Ends a reconnection wait early when an adapter is powered on or plugged in (or was since the last
/// wait), without polling: one continuation, resumed by whichever comes first — the adapter, the
/// delay, or cancellation.
final class AdapterWake: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else { s.pending = true; return nil }
            s.waiter = nil
            return w
        }
        waiter?.resume()
    }

    /// Returns after `delay` of elapsed time on `scheduler`, or as soon as `fire()` is called (at once if it
    /// was called since the last wait).
    func wait(upTo delay: Duration, on scheduler: any Scheduling) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await scheduler.sleep(elapsing: delay) }
            group.addTask { await self.fired() }
            await group.next()
            group.cancelAll()
        }
    }

    private func fired() async {
        state.withLock { $0.cancelled = false }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || s.cancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.cancelled = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }
}
