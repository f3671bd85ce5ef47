import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Buttons in the agent: adverts from BlueZ → the allowlist and BTHome rules → gestures → the dose
/// engine's one policy (source `button`) → "dose recorded" or "action rejected" feedback. Survives
/// bluetoothd restarting; picks up added, removed or remapped buttons without a restart.
public final class ButtonService: Service, Sendable, CustomStringConvertible {
    public var description: String { "ButtonService" }

    let bluez: BlueZClient?
    private let hid: HIDButtonSource?
    /// One gesture recognizer per HID remote and iTag (they send raw key downs and ups, or bare presses).
    private let recognizers = ButtonRecognizers()
    /// The GATT followers of the added iTags (ITagButtons.swift).
    let itags = ITagFollowers()
    private let buttons: ButtonRepository
    private let repository: DoseRepository
    /// The dose use case every press goes through (policy, commit, the battery nudge after Dose 1, events).
    private let doses: DoseUseCases
    private let samples: BatterySampleRepository
    private let feedback: FeedbackNotifier?
    let clock: any WallClock
    let logger: Logger
    let interpreter: ButtonInterpreter
    private let databaseChanges: AsyncStream<Void>?
    private let onRecorded: @Sendable () -> Void
    private let onHandled: @Sendable (BLEAdvert, [DoseOutcome]) -> Void
    private let guards = Mutex<[String: ButtonFloodGuard]>([:])
    private let lastBattery = Mutex<[String: Date]>([:])
    /// When set (`dosetap button test`), gestures are handed here instead of acting, and nothing is stored.
    let observer: (@Sendable (ButtonIntent) -> Void)?

    public init(bluez: BlueZClient?, hid: HIDButtonSource? = nil, buttons: ButtonRepository, repository: DoseRepository, samples: BatterySampleRepository,
                feedback: FeedbackNotifier?, clock: any WallClock, logger: Logger, databaseChanges: AsyncStream<Void>?,
                doses: DoseUseCases? = nil,
                onRecorded: @escaping @Sendable () -> Void = {},
                onHandled: @escaping @Sendable (BLEAdvert, [DoseOutcome]) -> Void = { _, _ in },
                observer: (@Sendable (ButtonIntent) -> Void)? = nil) {
        self.onHandled = onHandled
        self.observer = observer
        self.bluez = bluez
        self.hid = hid
        self.buttons = buttons
        self.repository = repository
        self.doses = doses ?? DoseUseCases(repository: repository, clock: clock)
        self.samples = samples
        self.feedback = feedback
        self.clock = clock
        self.logger = logger
        self.databaseChanges = databaseChanges
        self.onRecorded = onRecorded
        let stored = (try? buttons.load()) ?? (buttons: [], unusable: [])
        interpreter = ButtonInterpreter(buttons: stored.buttons, logger: logger)
        reportUnusable(stored.unusable)
    }

    private let reportedUnusable = Mutex<Set<String>>([])

    /// Rows of the `button` table that cannot be used (an older version wrote them): those buttons never
    /// act; say so once per row, as an error.
    private func reportUnusable(_ rows: [UnusableButton]) {
        for row in rows {
            guard reportedUnusable.withLock({ $0.insert("\(row.address)|\(row.reason)").inserted }) else { continue }
            logger.error("stored button cannot be used, so it never acts; add it again (dosetap button add)", metadata: [
                "address": "\(DisplayText.escaped(row.address))", "reason": "\(DisplayText.escaped(row.reason, maxLength: 200))",
            ])
        }
    }

    public func run() async throws {
        // Shutdown cancels everything below (the streams end on cancellation), then closes the bus.
        try? await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followConfiguration() }
                group.addTask { await self.followBlueZ() }
                group.addTask { await self.followHID() }
                group.addTask { await self.followITags() }
                // Each follower runs until cancelled; one ending early (no BlueZ, no udev) must not stop the others.
                while await group.next() != nil, !Task.isCancelled {}
                group.cancelAll()
            }
        }
        bluez?.connection.close()
    }

    /// Re-reads the allowlist whenever the database changes (the CLI added or remapped a button).
    private func followConfiguration() async {
        guard let databaseChanges else { return await Task.sleepForever() }
        for await _ in databaseChanges {
            let stored = (try? buttons.load()) ?? (buttons: [], unusable: [])
            reportUnusable(stored.unusable)
            let now = stored.buttons
            let before = interpreter.configured
            if Set(now) != Set(before) {
                interpreter.replace(now)
                logger.info("buttons changed", metadata: ["buttons": "\(now.map(\.address).sorted().joined(separator: ","))"])
                hid?.setAddresses(hidAddresses)
                itags.setAddresses(itagAddresses)
                if now.contains(where: { $0.kind == .bthome }) { try? await bluez?.startDiscovery() }
            }
        }
    }

    /// Adverts, and a fresh start whenever bluetoothd gets a new owner or an adapter comes (back) on.
    private func followBlueZ() async {
        guard let bluez else { return await Task.sleepForever() }
        while !Task.isCancelled {
            do {
                let owners = try await bluez.ownerChanges()
                let adapters = try await bluez.adapterChanges()
                if interpreter.configured.contains(where: { $0.kind == .bthome }) { try await bluez.startDiscovery() }
                let adverts = try await bluez.adverts()
                logger.info("listening to BlueZ", metadata: ["buttons": "\(interpreter.configured.count)"])
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await advert in adverts {
                            let outcomes = await self.handle(advert)
                            self.onHandled(advert, outcomes)
                        }
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
                try? await Task.sleep(for: .seconds(10))
            }
        }
    }

    /// Decides one advert. Returns the outcomes of the actions it carried (for tests and benchmarks).
    @discardableResult
    public func handle(_ advert: BLEAdvert) async -> [DoseOutcome] {
        let outcome = interpreter.interpret(advert)
        if let (button, level) = outcome.battery { recordBattery(button, level, at: advert.receivedAt) }
        return await act(on: outcome.intents)
    }

    /// Puts intents through the flood guard and the dose policy, and plays their feedback.
    public func act(on intents: [ButtonIntent]) async -> [DoseOutcome] {
        if let observer {
            intents.forEach(observer)
            return []
        }
        var results: [DoseOutcome] = []
        for intent in intents {
            guard let command = intent.action.command else {
                logger.info("button gesture without an action", metadata: ["button": "\(DisplayText.escaped(intent.button.name))", "gesture": "\(intent.gesture.rawValue)"])
                continue
            }
            let verdict = guards.withLock { g -> ButtonFloodGuard.Verdict in
                var guard_ = g[intent.button.address] ?? ButtonFloodGuard()
                let v = guard_.admit(at: intent.at)
                g[intent.button.address] = guard_
                return v
            }
            switch verdict {
            case .muted(let until, let announce):
                if announce {
                    logger.warning("button flooding: muted for 5 minutes", metadata: ["button": "\(DisplayText.escaped(intent.button.name))", "until": "\(until)"])
                }
                continue
            case .queue:
                // Queued behind the flood: by the time it is decided it is stale, so it can never log a dose.
                try? await Task.sleep(for: .seconds(4))
            case .allow:
                break
            }
            do {
                let submission = try doses.submit(command, source: .button, issuedAt: intent.at)
                let result = submission.outcome
                results.append(result)
                switch result {
                case .recorded(_, let confirmation, _):
                    logger.notice("button action recorded", metadata: [
                        "button": "\(DisplayText.escaped(intent.button.name))", "gesture": "\(intent.gesture.rawValue)", "result": "\(confirmation)",
                    ])
                    if let nudge = submission.nudge {
                        logger.warning("\(nudge.header): \(nudge.oneLine)")
                    }
                    onRecorded()
                    // A Dose 1 on a battery that will not last until the reminder says so with the confirmation.
                    await feedback?.play(.doseRecorded, title: confirmation, body: submission.nudge?.oneLine ?? "")
                case .refused(let refusal, _):
                    logger.notice("button action rejected", metadata: [
                        "button": "\(DisplayText.escaped(intent.button.name))", "gesture": "\(intent.gesture.rawValue)", "reason": "\(refusal.message)",
                    ])
                    await feedback?.play(.actionRejected, title: refusal.message, body: "")
                }
            } catch {
                logger.error("cannot record the button action", metadata: ["error": "\(error)"])
            }
        }
        return results
    }

    private var hidAddresses: Set<String> {
        Set(interpreter.configured.filter { $0.kind == .hid }.map(\.address))
    }

    /// HID remotes: key downs and ups → gestures (with a timer for the double window and holds).
    private func followHID() async {
        guard let hid else { return await Task.sleepForever() }
        for await event in hid.events(addresses: hidAddresses) {
            _ = await handleHID(event)
        }
    }

    /// Decides one HID event; returns the outcomes of the gestures it completed.
    @discardableResult
    public func handleHID(_ event: HIDButtonEvent) async -> [DoseOutcome] {
        switch event {
        case .connected(let remote, let grabbed):
            logger.info("HID remote connected", metadata: ["remote": "\(remote.address)", "grabbed": "\(grabbed)"])
            return []
        case .disconnected(let remote, _, let interrupted):
            if interrupted { recognizers.reset(address: remote.address) }
            logger.info("HID remote disconnected", metadata: ["remote": "\(remote.address)"])
            return []
        case .unavailable(let remote, let error):
            logger.warning("HID remote unavailable", metadata: ["remote": "\(remote.address)", "error": "\(error)"])
            return []
        case .signal(let address, let signal):
            guard let button = interpreter.configured.first(where: { $0.address == address && $0.kind == .hid }) else { return [] }
            return await feed(signal, button: button)
        }
    }

    /// One raw signal of a HID remote or an iTag → the gestures it completes (with a timer for the rest).
    func feed(_ signal: KeySignal, button: ButtonConfig) async -> [DoseOutcome] {
        let (gestures, deadline) = recognizers.feed(signal, button: button)
        if let deadline { scheduleExpiry(address: button.address, at: deadline) }
        return await act(on: intents(button, gestures))
    }

    /// Resolves what time alone decides for a HID remote or an iTag (a single whose double window passed, a hold).
    @discardableResult
    public func expireGestures(address: String, at now: Date) async -> [DoseOutcome] {
        guard let button = interpreter.configured.first(where: { $0.address == address && ($0.kind == .hid || $0.kind == .itag) }) else {
            return []
        }
        return await act(on: intents(button, recognizers.expire(address: address, at: now)))
    }

    /// `expireGestures` under its first name.
    @discardableResult
    public func expireHID(address: String, at now: Date) async -> [DoseOutcome] {
        await expireGestures(address: address, at: now)
    }

    private func scheduleExpiry(address: String, at deadline: Date) {
        let delay = max(0, deadline.timeIntervalSince(clock.now()))
        Task {
            try? await Task.sleep(for: .milliseconds(Int64((delay * 1000).rounded(.up)) + 1))
            await self.expireGestures(address: address, at: self.clock.now())
        }
    }

    private func intents(_ button: ButtonConfig, _ gestures: [RecognizedGesture]) -> [ButtonIntent] {
        gestures.map { ButtonIntent(button: button, buttonIndex: 0, gesture: $0.gesture, action: button.mapping.action(for: $0.gesture), at: $0.at) }
    }

    func recordBattery(_ button: ButtonConfig, _ level: Int, at: Date) {
        guard observer == nil else { return }
        let due = lastBattery.withLock { last -> Bool in
            if let previous = last[button.address], at.timeIntervalSince(previous) < 600, at >= previous { return false }
            last[button.address] = at
            return true
        }
        guard due else { return }
        do {
            try samples.appendLevel(source: button.powerSourceName, level: Double(min(100, max(0, level))), at: at)
        } catch {
            logger.error("cannot store the button battery", metadata: ["error": "\(error)"])
        }
    }
}

extension Task where Success == Never, Failure == Never {
    /// Suspends until cancelled.
    static func sleepForever() async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
}
