import Synchronization

/// The signals a session listens to and its timers, in one stream. Closing it cancels the forwarding tasks
/// (which drops the match rules) and the timers.
final class SignalInbox: Sendable {
    enum Input: Sendable {
        case signal(DBusMessage)
        case timeout(UInt64)
    }

    let stream: AsyncStream<Input>
    private let continuation: AsyncStream<Input>.Continuation
    private let connection: DBusConnection
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(connection: DBusConnection) {
        self.connection = connection
        (stream, continuation) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(4096))
    }

    func subscribe(_ rule: DBusMatchRule) async throws {
        let signals = try await connection.signals(rule)
        let continuation = continuation
        let task = Task {
            for await message in signals { continuation.yield(.signal(message)) }
            // The connection closed (or the inbox did): the session sees the end.
            continuation.finish()
        }
        tasks.withLock { $0.append(task) }
    }

    func timer(after: Duration, token: UInt64) {
        let continuation = continuation
        let task = Task {
            try? await Task.sleep(for: after)
            if !Task.isCancelled { continuation.yield(.timeout(token)) }
        }
        tasks.withLock { $0.append(task) }
    }

    func close() {
        let all = tasks.withLock { t -> [Task<Void, Never>] in
            defer { t.removeAll() }
            return t
        }
        for task in all { task.cancel() }
        continuation.finish()
    }
}
