import DoseTapCore
import Foundation

extension Scheduling {
    /// Waits `interval` of elapsed time through the scheduling port (a back-off, a timeout): the deadline
    /// is a wall-clock instant on this scheduler, so a fake clock in a test decides when it is reached.
    /// When the wall clock is set meanwhile (`.clockChanged`), the step is not elapsed time, and how much
    /// had elapsed before it cannot be told on the wall clock: the whole interval is waited again from the
    /// new time (late by at most one interval after a rare step, never early). Returns false when the task
    /// was cancelled, true when the interval has passed.
    func sleep(elapsing interval: Duration) async -> Bool {
        while true {
            switch await sleep(until: now().addingTimeInterval(interval.timeInterval)) {
            case .due: return true
            case .cancelled: return false
            case .clockChanged: continue
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
