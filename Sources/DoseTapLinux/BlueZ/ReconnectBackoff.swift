/// How long to wait before the next connection attempt: 1 s, 2 s, 5 s, 10 s, 20 s, then every 30 s.
/// The count restarts when a connection reached notifications.
public struct ReconnectBackoff: Sendable, Equatable {
    public var steps: [Duration]

    public init(steps: [Duration] = [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(20), .seconds(30)]) {
        self.steps = steps
    }

    /// The wait after `failures` consecutive attempts that failed or ended (0 → none; past the last step, the last step).
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0, !steps.isEmpty else { return .zero }
        return steps[min(failures, steps.count) - 1]
    }
}
