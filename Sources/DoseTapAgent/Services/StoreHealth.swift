import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whether the agent can write its data, as one state for the whole agent (#51). The services that write in the
/// background (the alarms' rings, the reminders fired) report each write's outcome here and keep what they could
/// not write in memory; this says when to try again (`StoreTrouble`: 5 s doubling to 30 s), and tells —
/// one log line when the trouble begins, changes cause or ends, a reminder at most every ten minutes; a critical
/// desktop notification once per cause; and `store-status.json` in the data folder, which the command line and the
/// dashboard read while the agent holds it (`AlarmWarnings`): "DoseTap cannot write its data (the disk is full):
/// alarms still ring, doses cannot be recorded — free space on …".
public final class StoreHealth: Sendable {
    public static let fileName = AgentRecord.storeName

    private let trouble = Mutex(StoreTrouble())
    private let folder: String
    private let logger: Logger
    private let record: AgentStatusFile.Holder?
    /// Told `.storeHealthChanged` when the trouble begins, changes cause or ends.
    private let events: EventBus?
    private let announcer = Mutex<(@Sendable (_ title: String, _ body: String) async -> Void)?>(nil)
    /// Told when the trouble ends: each service that kept writes in memory tries them at once, not at its back-off.
    private let recoveredHandlers = Mutex<[@Sendable () -> Void]>([])
    /// Yields when the trouble begins or ends (`StoreCheckService` waits on it).
    let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - folder: the data folder, named in the sentence.
    ///   - record: `store-status.json`, held locked for as long as the agent runs; nil records nothing.
    ///   - events: told `.storeHealthChanged` (the status bar's follower, the dashboard, Home Assistant look again).
    public init(folder: String, logger: Logger, record: AgentStatusFile.Holder? = nil, events: EventBus? = nil) {
        self.folder = folder
        self.logger = logger
        self.record = record
        self.events = events
        (changes, changed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        write(nil, since: nil)
    }

    /// The data folder's `store-status.json`, held for this agent; nil (logged) when it cannot be.
    public static func record(dataDirectory: URL, logger: Logger) -> AgentStatusFile.Holder? {
        do {
            return try AgentStatusFile(dataDirectory: dataDirectory, name: fileName).hold()
        } catch {
            logger.notice("cannot record whether the data can be written for the command line", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Where the person is told (the alarm bell's critical notification); set once the bell exists.
    public func announce(with post: @escaping @Sendable (_ title: String, _ body: String) async -> Void) {
        announcer.withLock { $0 = post }
    }

    /// The trouble now, if any.
    public var problem: StoreProblem? { trouble.withLock { $0.episode?.problem } }

    /// The sentence every face shows while the store cannot be written; nil while it can.
    public var sentence: String? { problem.map { $0.sentence(folder: folder) } }

    /// A write (or a read it needed) failed at `now`: told as the state says; returns when to try again.
    @discardableResult
    public func failed(_ error: any Error, doing what: String, at now: Date) -> Date {
        let problem = Self.problem(of: error)
        let (report, retryAt) = trouble.withLock { $0.failed(problem, detail: "\(error)", at: now) }
        if let report { tell(report, doing: what, error: error) }
        return retryAt
    }

    /// `handler` runs each time a trouble ends (a service writes what it kept in memory at once).
    public func whenRecovered(_ handler: @escaping @Sendable () -> Void) {
        recoveredHandlers.withLock { $0.append(handler) }
    }

    /// A write succeeded: a trouble in progress is over.
    public func succeeded() {
        guard trouble.withLock({ $0.isFailing }) else { return }
        if let report = trouble.withLock({ $0.succeeded() }) { tell(report, doing: nil, error: nil) }
    }

    /// The store's cause of `error`; `.other` for anything that is not the store's.
    public static func problem(of error: any Error) -> StoreProblem {
        (error as? StoreError)?.cause ?? .other
    }

    private func tell(_ report: StoreTrouble.Report, doing what: String?, error: (any Error)?) {
        let detail = error.map { DisplayText.escaped("\($0)", maxLength: 400) } ?? "-"
        switch report {
        case .began(let problem), .changed(_, let problem):
            changed.yield()
            let sentence = problem.sentence(folder: folder)
            write(problem, since: trouble.withLock { $0.episode?.since })
            events?.publish(.storeHealthChanged(problem))
            logger.error("\(sentence)", metadata: ["while": "\(what ?? "-")", "error": "\(detail)"])
            if let post = announcer.withLock({ $0 }) {
                Task { await post("DoseTap cannot save", sentence) }
            }
        case .reminder(let problem, let since, let failures):
            logger.notice("still cannot write the data: \(problem.reason)", metadata: [
                "since": "\(since)", "failedWrites": "\(failures)", "error": "\(detail)",
            ])
        case .recovered(let problem, let since, let failures):
            changed.yield()
            write(nil, since: nil)
            events?.publish(.storeHealthChanged(nil))
            for handler in recoveredHandlers.withLock({ $0 }) { handler() }
            logger.notice("the data can be written again: what was kept in memory is saved as each service tries again", metadata: [
                "was": "\(problem.reason)", "since": "\(since)", "failedWrites": "\(failures)",
            ])
        }
    }

    /// `store-status.json`: `{"canWrite": true}`, or false with the problem, since when and the sentence.
    private func write(_ problem: StoreProblem?, since: Date?) {
        guard let record else { return }
        let utc = TimeZone(identifier: "UTC")!
        var fields: [(String, JSON)] = [("pid", .int(Int(getpid()))), ("canWrite", .bool(problem == nil))]
        if let problem {
            fields += [("problem", .string(problem.rawValue)), ("since", since.map { .string($0.rfc3339(in: utc)) } ?? .null),
                       ("message", .string(problem.sentence(folder: folder)))]
        }
        record.write(Array((JSON.object(fields).text + "\n").utf8), reserving: 1024)
    }
}

/// While the store is in trouble, checks on `StoreTrouble`'s back-off whether it can be written again
/// (`DoseTapDatabase.checkWritable`, which writes nothing), so the trouble is said to be over — the notification's
/// sentence gone from `alarm list`, `status` and the dashboard — even when nothing needed writing. Idle otherwise.
struct StoreCheckService: Service, CustomStringConvertible {
    var description: String { "StoreCheckService" }
    let health: StoreHealth
    let check: @Sendable () throws -> Void
    let clock: any Scheduling

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var changes = health.changes.makeAsyncIterator()
            var checks = 0
            while !Task.isCancelled {
                guard health.problem != nil else {
                    checks = 0
                    guard await changes.next() != nil else { return }
                    continue
                }
                checks += 1
                if await clock.sleep(for: StoreTrouble.retryDelay(afterFailures: checks)) == .cancelled { return }
                guard health.problem != nil else { continue }
                do {
                    try check()
                    health.succeeded()
                } catch {
                    health.failed(error, doing: "checking whether the data can be written", at: clock.now())
                }
            }
        }
    }
}
