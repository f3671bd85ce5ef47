import DoseTapCore
import Synchronization

/// The signals a session listens to and its timers, in one stream. The timers run on the scheduling port
/// (a test's fake clock decides when they fire). Closing it cancels the forwarding tasks (which drops the
/// match rules) and the timers.
final class SignalInbox: Sendable {
    enum Input: Sendable {
        case signal(DBusMessage)
        case timeout(UInt64)
    }

    let stream: AsyncStream<Input>
    private let continuation: AsyncStream<Input>.Continuation
    private let connection: DBusConnection
    private let scheduler: any Scheduling
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let timers = Mutex<[UInt64: Task<Void, Never>]>([:])

    init(connection: DBusConnection, scheduler: any Scheduling) {
        self.connection = connection
        self.scheduler = scheduler
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

    /// `.timeout(token)` after `after` of elapsed time, unless cancelled first.
    func timer(after: Duration, token: UInt64) {
        let continuation = continuation
        let task = Task { [scheduler] in
            if await scheduler.sleep(elapsing: after) { continuation.yield(.timeout(token)) }
        }
        timers.withLock { $0[token] = task }
    }

    /// The wait the timer was for is over: it stops sleeping (a test's fake clock counts no stale sleeper).
    func cancelTimer(_ token: UInt64) {
        timers.withLock { $0.removeValue(forKey: token) }?.cancel()
    }

    func close() {
        let all = tasks.withLock { t -> [Task<Void, Never>] in
            defer { t.removeAll() }
            return t
        } + timers.withLock { t -> [Task<Void, Never>] in
            defer { t.removeAll() }
            return Array(t.values)
        }
        for task in all { task.cancel() }
        continuation.finish()
    }
}
