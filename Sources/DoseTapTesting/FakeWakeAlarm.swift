import DoseTapCore
import Foundation
import Synchronization

/// The wake-from-suspend port, recording what was armed. `capability` is what it answers (and what `arm`
/// obeys: a failure is thrown as the `WakeUnavailable`).
public final class FakeWakeAlarm: WakeAlarm {
    private struct State {
        var capability: Result<WakeMethod, WakeUnavailable>
        var armed: [Date] = []
        var disarms = 0
    }

    private let state: Mutex<State>

    public init(_ capability: Result<WakeMethod, WakeUnavailable> = .success(.alarmTimer)) {
        state = Mutex(State(capability: capability))
    }

    public func capability() -> Result<WakeMethod, WakeUnavailable> { state.withLock { $0.capability } }

    public func set(_ capability: Result<WakeMethod, WakeUnavailable>) { state.withLock { $0.capability = capability } }

    @discardableResult
    public func arm(at date: Date) throws -> WakeMethod {
        try state.withLock { s throws -> WakeMethod in
            switch s.capability {
            case .success(let method):
                s.armed.append(date)
                return method
            case .failure(let problem):
                throw problem
            }
        }
    }

    public func disarm() { state.withLock { $0.disarms += 1 } }

    /// Every instant armed, in order.
    public var armed: [Date] { state.withLock { $0.armed } }
    public var disarms: Int { state.withLock { $0.disarms } }
}
