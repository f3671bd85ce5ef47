import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Buttons in the agent, as a short pipeline: every source (`ButtonSource`: BTHome adverts from BlueZ, HID
/// remotes from udev + evdev, iTags and Flic 2 buttons over GATT) feeds one stream of `ButtonSignal`s; one loop hands each to
/// the `ButtonPipeline` (allowlist, gestures, flood guard, the dose use case). Picks up added, removed or
/// remapped buttons without a restart — the agent's own changes (the dashboard) from the event bus
/// (`.settingsChanged`), another process's (the command line) from the data folder — telling each source the
/// added buttons of its kinds.
public final class ButtonService: Service, Sendable, CustomStringConvertible {
    public var description: String { "ButtonService" }

    let sources: [any ButtonSource]
    private let buttons: ButtonRepository
    public let pipeline: ButtonPipeline
    let clock: any Scheduling
    let logger: Logger
    private let databaseChanges: AsyncStream<Void>?
    private let events: EventBus?
    private let onHandled: @Sendable (ButtonSignal, [DoseOutcome]) -> Void
    private let reportedUnusable = Mutex(RecentKeys<String>(capacity: 256))

    /// - Parameters:
    ///   - sources: where buttons are heard (`ButtonSources.machine` on a real machine).
    ///   - doses: the dose use case every press goes through; nil with `observer` (nothing acts).
    ///   - samples: where button batteries are kept; nil with `observer`.
    ///   - onHandled: called after each signal with what it decided (benchmarks).
    public init(sources: [any ButtonSource], buttons: ButtonRepository,
                doses: DoseUseCases?, samples: BatterySampleRepository?, events: EventBus? = nil,
                clock: any Scheduling, logger: Logger, databaseChanges: AsyncStream<Void>?,
                onHandled: @escaping @Sendable (ButtonSignal, [DoseOutcome]) -> Void = { _, _ in },
                observer: (@Sendable (ButtonIntent) -> Void)? = nil, alarms: (any RingAnswering)? = nil) {
        self.sources = sources
        self.buttons = buttons
        self.clock = clock
        self.logger = logger
        self.databaseChanges = databaseChanges
        self.events = events
        self.onHandled = onHandled
        let stored = (try? buttons.load()) ?? (buttons: [], unusable: [])
        pipeline = ButtonPipeline(buttons: stored.buttons, doses: observer == nil ? doses : nil,
                                  samples: observer == nil ? samples : nil, events: events,
                                  clock: clock, logger: logger, observer: observer, alarms: alarms)
        reportUnusable(stored.unusable)
    }

    /// Rows of the `button` table that cannot be used (an older version wrote them): those buttons never
    /// act; say so once per row, as an error.
    private func reportUnusable(_ rows: [UnusableButton]) {
        for row in rows {
            guard reportedUnusable.withLock({ $0.insert("\(row.address)|\(row.reason)") }) else { continue }
            logger.error("stored button cannot be used, so it never acts; add it again (dosetap button add)", metadata: [
                "address": "\(DisplayText.escaped(row.address))", "reason": "\(DisplayText.escaped(row.reason, maxLength: 200))",
            ])
        }
    }

    public func run() async throws {
        // One stream of everything the sources report; bounded, so a radio flood cannot grow it without end.
        let (signals, sink) = AsyncStream<ButtonSignal>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        // Subscribed before the first reading of the allowlist: a change published meanwhile is read again.
        let news = events?.subscribe()
        await tellSources()
        // Shutdown cancels everything below (the streams end on cancellation), then the sources close.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await signal in signals {
                        self.onHandled(signal, self.pipeline.handle(signal))
                    }
                }
                group.addTask { await self.followConfiguration(news: news) }
                for source in self.sources {
                    group.addTask { await source.run(into: { sink.yield($0) }) }
                }
                // Each source runs until cancelled; one ending early (no BlueZ, no udev) must not stop the others.
                while await group.next() != nil, !Task.isCancelled {}
                sink.finish()
                group.cancelAll()
            }
        }
        for source in sources { source.close() }
    }

    /// Tells each source the added buttons of its kinds.
    private func tellSources() async {
        for source in sources {
            await source.follow(pipeline.interpreter.configured.filter { source.kinds.contains($0.kind) }.sorted { $0.address < $1.address })
        }
    }

    /// Re-reads the allowlist on every `.settingsChanged` of the bus (the agent's own use cases: the dashboard
    /// added or remapped a button) and every change of the data folder (the command line did), one at a time.
    private func followConfiguration(news: AsyncStream<AgentEvent>?) async {
        let (changes, changed) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            if let news {
                group.addTask {
                    for await event in news where event == .settingsChanged { changed.yield() }
                }
            }
            if let databaseChanges {
                group.addTask {
                    for await _ in databaseChanges { changed.yield() }
                }
            }
            group.addTask {
                for await _ in changes { await self.reload() }
            }
            await Task.untilCancelled()
            changed.finish()
            group.cancelAll()
        }
    }

    private func reload() async {
        let stored = (try? buttons.load()) ?? (buttons: [], unusable: [])
        reportUnusable(stored.unusable)
        let now = stored.buttons
        if Set(now) != Set(pipeline.interpreter.configured) {
            pipeline.replace(now)
            logger.info("buttons changed", metadata: ["buttons": "\(now.map(\.address).sorted().joined(separator: ","))"])
            await tellSources()
        }
    }
}

/// The machine's button sources.
public enum ButtonSources {
    /// BTHome adverts and iTags through `bluez` (one bus for both), HID remotes through `hid`.
    /// - Parameter observing: `dosetap button test`: the links made for the test are dropped at its end.
    /// - Parameter store: where Flic 2 buttons keep how far their events were acted on.
    public static func machine(bluez: BlueZClient?, hid: HIDButtonSource?, clock: any Scheduling, logger: Logger,
                               observing: Bool = false, store: ButtonRepository? = nil) -> [any ButtonSource] {
        var sources: [any ButtonSource] = []
        if let bluez {
            sources.append(BTHomeAdvertSource(bluez: bluez, clock: clock, logger: logger))
            sources.append(ITagSource(bluez: bluez, clock: clock, logger: logger, disconnectOnStop: observing))
            sources.append(Flic2Source(bluez: bluez, clock: clock, logger: logger, disconnectOnStop: observing, store: store,
                                       factoryKey: Flic2Source.factoryKey()))
        }
        if let hid { sources.append(HIDRemoteSource(hid: hid)) }
        return sources
    }
}

extension Task where Success == Never, Failure == Never {
    /// Suspends until the task is cancelled, without a timer (nothing wakes the process meanwhile).
    static func untilCancelled() async {
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        for await _ in stream {}
        withExtendedLifetime(continuation) {}
    }
}
