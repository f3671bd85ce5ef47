import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization
import Testing

/// The button port (#26): the service knows sources only as `ButtonSource`, so a new kind of button is a
/// source and its parser, with no change to the pipeline.
@Suite("ButtonService through the ButtonSource port", .timeLimit(.minutes(1)))
struct ButtonSourcePortTests {
    static let shutter = "2A:07:98:10:34:8B"
    static let tag = "FF:FF:10:0E:8A:2C"

    /// A source that reports what the test gives it and records what the service told it.
    final class ScriptedSource: ButtonSource, Sendable {
        let kinds: Set<ButtonKind>
        private let state = Mutex((followed: [Set<String>](), closed: 0, sink: (@Sendable (ButtonSignal) -> Void)?.none))

        init(kinds: Set<ButtonKind>) { self.kinds = kinds }

        var followed: [Set<String>] { state.withLock { $0.followed } }
        var closed: Int { state.withLock { $0.closed } }
        var running: Bool { state.withLock { $0.sink != nil } }

        func follow(_ buttons: [ButtonConfig]) async { state.withLock { $0.followed.append(Set(buttons.map(\.address))) } }

        func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async {
            state.withLock { $0.sink = sink }
            await Task.untilCancelledForTests()
        }

        func close() { state.withLock { $0.closed += 1 } }

        func report(_ signal: ButtonSignal) { state.withLock { $0.sink }?(signal) }
    }

    static func eventually(_ condition: () throws -> Bool) async rethrows -> Bool {
        for _ in 0..<500 {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return try condition()
    }

    @Test("each source is told the added buttons of its kinds, again on a change; its signals reach the pipeline; closed after stopping")
    func port() async throws {
        let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)
        let db = try DoseTapDatabase(directory: freshDataFolder())
        var noDouble = ButtonMapping()
        noDouble.noDouble = true
        let buttons = ButtonRepository(database: db)
        try buttons.save(try ButtonConfig(address: Self.shutter, kind: .hid, name: "shutter", mapping: noDouble))
        let remotes = ScriptedSource(kinds: [.hid])
        let tags = ScriptedSource(kinds: [.itag])
        let repo = DoseRepository(database: db)
        let (changes, changed) = AsyncStream<Void>.makeStream()
        let service = ButtonService(sources: [remotes, tags], buttons: buttons, doses: DoseUseCases(repository: repo, clock: clock),
                                    samples: BatterySampleRepository(database: db), clock: clock, logger: Logger(label: "t"),
                                    databaseChanges: changes)
        let running = Task { try await service.run() }

        #expect(await Self.eventually { remotes.running && tags.running })
        #expect(remotes.followed == [[Self.shutter]])
        #expect(tags.followed == [[]])

        // A press of the added remote is a dose; the same press from an address never added is nothing.
        let now = clock.now()
        remotes.report(.key(address: "11:22:33:44:55:66", kind: .hid, .down(at: now)))
        remotes.report(.key(address: "11:22:33:44:55:66", kind: .hid, .up(at: now.addingTimeInterval(0.1))))
        remotes.report(.key(address: Self.shutter, kind: .hid, .down(at: now)))
        remotes.report(.key(address: Self.shutter, kind: .hid, .up(at: now.addingTimeInterval(0.1))))
        #expect(try await Self.eventually { try repo.count() == 1 })

        // An iTag added from the command line: the iTag source learns it, the remote source hears its own again.
        try buttons.save(try ButtonConfig(address: Self.tag, kind: .itag, name: "tag"))
        changed.yield()
        #expect(await Self.eventually { tags.followed.count == 2 })
        #expect(tags.followed.last == [Self.tag])
        #expect(remotes.followed.last == [Self.shutter])

        #expect(remotes.closed == 0)
        running.cancel()
        _ = try? await running.value
        #expect(remotes.closed == 1 && tags.closed == 1)
        #expect(try repo.count() == 1)
    }

    @Test("a button added by the agent's own use case (the dashboard) reaches the sources through the event bus, with no data-folder watch")
    func ownChangeThroughTheBus() async throws {
        let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "America/New_York")!)
        let db = try DoseTapDatabase(directory: freshDataFolder())
        let buttons = ButtonRepository(database: db)
        let tags = ScriptedSource(kinds: [.itag])
        let events = EventBus()
        let repo = DoseRepository(database: db)
        // No inotify stream at all: only the bus can tell the service.
        let service = ButtonService(sources: [tags], buttons: buttons, doses: DoseUseCases(repository: repo, clock: clock),
                                    samples: BatterySampleRepository(database: db), events: events, clock: clock, logger: Logger(label: "t"),
                                    databaseChanges: nil)
        let running = Task { try await service.run() }
        #expect(await Self.eventually { tags.running })
        #expect(tags.followed == [[]])

        _ = try ButtonUseCases(store: DataStore(database: db), events: events).add(address: Self.tag, kind: .itag, name: "tag", bindkey: nil)
        #expect(await Self.eventually { tags.followed.count == 2 })
        #expect(tags.followed.last == [Self.tag])
        #expect(service.pipeline.interpreter.configured.map(\.address) == [Self.tag])

        running.cancel()
        _ = try? await running.value
        #expect(tags.closed == 1)
    }
}

extension Task where Success == Never, Failure == Never {
    /// Suspends until the task is cancelled.
    static func untilCancelledForTests() async {
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        for await _ in stream {}
        withExtendedLifetime(continuation) {}
    }
}
