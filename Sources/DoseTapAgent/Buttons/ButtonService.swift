import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Buttons in the agent, as a short pipeline: every adapter (BTHome adverts from BlueZ, HID remotes from
/// udev + evdev, iTags over GATT) feeds one stream of `ButtonSignal`s; one loop hands each to the
/// `ButtonPipeline` (allowlist, gestures, flood guard, the dose use case). Survives bluetoothd restarting;
/// picks up added, removed or remapped buttons without a restart.
public final class ButtonService: Service, Sendable, CustomStringConvertible {
    public var description: String { "ButtonService" }

    let bluez: BlueZClient?
    private let hid: HIDButtonSource?
    /// The GATT followers of the added iTags (ITagButtons.swift).
    let itags = ITagFollowers()
    private let buttons: ButtonRepository
    public let pipeline: ButtonPipeline
    let clock: any Scheduling
    let logger: Logger
    private let databaseChanges: AsyncStream<Void>?
    private let onHandled: @Sendable (ButtonSignal, [DoseOutcome]) -> Void
    /// `dosetap button test`: gestures are printed, nothing acts, links made for the test are dropped.
    let observing: Bool
    private let reportedUnusable = Mutex(RecentKeys<String>(capacity: 256))

    /// - Parameters:
    ///   - doses: the dose use case every press goes through; nil with `observer` (nothing acts).
    ///   - samples: where button batteries are kept; nil with `observer`.
    ///   - onHandled: called after each signal with what it decided (benchmarks).
    public init(bluez: BlueZClient?, hid: HIDButtonSource? = nil, buttons: ButtonRepository,
                doses: DoseUseCases?, samples: BatterySampleRepository?, events: EventBus? = nil,
                clock: any Scheduling, logger: Logger, databaseChanges: AsyncStream<Void>?,
                onHandled: @escaping @Sendable (ButtonSignal, [DoseOutcome]) -> Void = { _, _ in },
                observer: (@Sendable (ButtonIntent) -> Void)? = nil, alarms: (any RingingAlarmControl)? = nil) {
        self.bluez = bluez
        self.hid = hid
        self.buttons = buttons
        self.clock = clock
        self.logger = logger
        self.databaseChanges = databaseChanges
        self.onHandled = onHandled
        observing = observer != nil
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
        // One stream of everything the adapters report; bounded, so a radio flood cannot grow it without end.
        let (signals, sink) = AsyncStream<ButtonSignal>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        // Shutdown cancels everything below (the streams end on cancellation), then closes the bus.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await signal in signals {
                        self.onHandled(signal, self.pipeline.handle(signal))
                    }
                }
                group.addTask { await self.followConfiguration() }
                group.addTask { await self.followBlueZ(into: sink) }
                group.addTask { await self.followHID(into: sink) }
                group.addTask { await self.followITags(into: sink) }
                // Each follower runs until cancelled; one ending early (no BlueZ, no udev) must not stop the others.
                while await group.next() != nil, !Task.isCancelled {}
                sink.finish()
                group.cancelAll()
            }
        }
        bluez?.connection.close()
    }

    /// Re-reads the allowlist whenever the database changes (the CLI added or remapped a button).
    private func followConfiguration() async {
        guard let databaseChanges else { return await Task.untilCancelled() }
        for await _ in databaseChanges {
            let stored = (try? buttons.load()) ?? (buttons: [], unusable: [])
            reportUnusable(stored.unusable)
            let now = stored.buttons
            if Set(now) != Set(pipeline.interpreter.configured) {
                pipeline.replace(now)
                logger.info("buttons changed", metadata: ["buttons": "\(now.map(\.address).sorted().joined(separator: ","))"])
                hid?.setAddresses(pipeline.configured(.hid))
                itags.setAddresses(pipeline.configured(.itag))
                if now.contains(where: { $0.kind == .bthome }) { try? await bluez?.startDiscovery() }
            }
        }
    }

    /// Adverts, and a fresh start whenever bluetoothd gets a new owner or an adapter comes (back) on.
    private func followBlueZ(into sink: AsyncStream<ButtonSignal>.Continuation) async {
        guard let bluez else { return await Task.untilCancelled() }
        while !Task.isCancelled {
            do {
                let owners = try await bluez.ownerChanges()
                let adapters = try await bluez.adapterChanges()
                if !pipeline.configured(.bthome).isEmpty { try await bluez.startDiscovery() }
                let adverts = try await bluez.adverts()
                logger.info("listening to BlueZ", metadata: ["buttons": "\(pipeline.interpreter.configured.count)"])
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await advert in adverts { sink.yield(.advert(advert)) }
                    }
                    group.addTask {
                        for await owner in owners where !owner.isEmpty {
                            self.logger.notice("bluetoothd restarted: re-reading its objects and the discovery filter")
                            return
                        }
                    }
                    group.addTask {
                        for await change in adapters {
                            switch change {
                            case .poweredOn(let adapter), .added(let adapter):
                                self.logger.notice("adapter on: re-reading BlueZ's objects and the discovery filter", metadata: ["adapter": "\(adapter)"])
                                return
                            case .poweredOff(let adapter):
                                self.logger.warning("adapter powered off: buttons are out of reach until it is back", metadata: ["adapter": "\(adapter)"])
                            case .removed(let adapter):
                                self.logger.warning("adapter removed", metadata: ["adapter": "\(adapter)"])
                            }
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
                if !bluez.connection.isConnected { return }
            } catch {
                logger.warning("BlueZ unavailable; retrying in 10 s", metadata: ["error": "\(error)"])
                _ = await clock.sleep(for: 10)
            }
        }
    }

    /// HID remotes: key downs and ups (gestures are recognised by the pipeline, with its timers).
    private func followHID(into sink: AsyncStream<ButtonSignal>.Continuation) async {
        guard let hid else { return await Task.untilCancelled() }
        for await event in hid.events(addresses: pipeline.configured(.hid)) {
            sink.yield(ButtonSignal(event))
        }
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
