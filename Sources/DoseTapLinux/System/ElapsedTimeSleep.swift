import DoseTapCore
import Foundation

extension Scheduling {
    /// Waits `interval` of elapsed time through the scheduling port (a back-off, a timeout): the deadline
    /// is a wall-clock instant on this scheduler, so a fake clock in a test decides when it is reached.
    /// When the wall clock is set meanwhile (`.clockChanged`), the step is not elapsed time: what is left
    /// of the interval, measured on the monotonic clock, is planned again from the new wall-clock time.
    /// Returns false when the task was cancelled, true when the interval has passed.
    func sleep(elapsing interval: Duration) async -> Bool {
        let started = ContinuousClock.now
        var deadline = now().addingTimeInterval(interval.timeInterval)
        while true {
            switch await sleep(until: deadline) {
            case .due:
                return true
            case .cancelled:
                return false
            case .clockChanged:
                let left = interval - (ContinuousClock.now - started)
                guard left > .zero else { return true }
                deadline = now().addingTimeInterval(left.timeInterval)
            }
        }
    }
}

extension Duration {
    /// In seconds, as Foundation counts them.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
