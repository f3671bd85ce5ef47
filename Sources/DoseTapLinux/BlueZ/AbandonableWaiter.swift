import Synchronization

/// Runs `operation`, but stops waiting for it as soon as the task is cancelled (a D-Bus call cannot be
/// withdrawn: its late reply is dropped). Throws `CancellationError` then.
func abandonOnCancel<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let waiter = AbandonableWaiter<T>()
    Task { await waiter.run(operation) }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { waiter.arm($0) }
    } onCancel: {
        waiter.settle(.failure(CancellationError()))
    }
}

/// One result, handed over once to whoever waits (see `abandonOnCancel`).
final class AbandonableWaiter<T: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<T, any Error>)
        case settled(Result<T, any Error>)
        case done
    }

    private let state = Mutex<State>(.idle)

    func run(_ operation: @Sendable () async throws -> T) async {
        do { settle(.success(try await operation())) } catch { settle(.failure(error)) }
    }

    func arm(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { s -> Result<T, any Error>? in
            if case .settled(let result) = s {
                s = .done
                return result
            }
            s = .waiting(continuation)
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    func settle(_ result: Result<T, any Error>) {
        let waiting = state.withLock { s -> CheckedContinuation<T, any Error>? in
            switch s {
            case .idle:
                s = .settled(result)
                return nil
            case .waiting(let c):
                s = .done
                return c
            case .settled, .done:
                return nil
            }
        }
        waiting?.resume(with: result)
    }
}
