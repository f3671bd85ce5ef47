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

    private let bluez: BlueZClient
    private let buttons: ButtonRepository
    private let repository: DoseRepository
    private let samples: BatterySampleRepository
    private let feedback: FeedbackNotifier?
    private let clock: any WallClock
    private let logger: Logger
    private let interpreter: ButtonInterpreter
    private let databaseChanges: AsyncStream<Void>?
    private let onRecorded: @Sendable () -> Void
    private let onHandled: @Sendable (BLEAdvert, [DoseOutcome]) -> Void
    private let guards = Mutex<[String: ButtonFloodGuard]>([:])
    private let lastBattery = Mutex<[String: Date]>([:])

    public init(bluez: BlueZClient, buttons: ButtonRepository, repository: DoseRepository, samples: BatterySampleRepository,
                feedback: FeedbackNotifier?, clock: any WallClock, logger: Logger, databaseChanges: AsyncStream<Void>?,
                onRecorded: @escaping @Sendable () -> Void = {},
                onHandled: @escaping @Sendable (BLEAdvert, [DoseOutcome]) -> Void = { _, _ in }) {
        self.onHandled = onHandled
        self.bluez = bluez
        self.buttons = buttons
        self.repository = repository
        self.samples = samples
        self.feedback = feedback
        self.clock = clock
        self.logger = logger
        self.databaseChanges = databaseChanges
        self.onRecorded = onRecorded
        interpreter = ButtonInterpreter(buttons: (try? buttons.all()) ?? [], logger: logger)
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followConfiguration() }
                group.addTask { await self.followBlueZ() }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.bluez.connection.close()
        }
    }

    /// Re-reads the allowlist whenever the database changes (the CLI added or remapped a button).
    private func followConfiguration() async {
        guard let databaseChanges else { return await Task.sleepForever() }
        for await _ in databaseChanges {
            let now = (try? buttons.all()) ?? []
            let before = interpreter.configured
            if Set(now) != Set(before) {
                interpreter.replace(now)
                logger.info("buttons changed", metadata: ["buttons": "\(now.map(\.address).sorted().joined(separator: ","))"])
                if now.contains(where: { $0.kind == .bthome }) { try? await bluez.startDiscovery() }
            }
        }
    }

    /// Adverts, and a fresh start whenever bluetoothd gets a new owner.
    private func followBlueZ() async {
        while !Task.isCancelled {
            do {
                let owners = try await bluez.ownerChanges()
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
        var results: [DoseOutcome] = []
        for intent in outcome.intents {
            guard let command = intent.action.command else {
                logger.info("button gesture without an action", metadata: ["button": "\(intent.button.name)", "gesture": "\(intent.gesture.rawValue)"])
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
                    logger.warning("button flooding: muted for 5 minutes", metadata: ["button": "\(intent.button.name)", "until": "\(until)"])
                }
                continue
            case .queue:
                // Queued behind the flood: by the time it is decided it is stale, so it can never log a dose.
                try? await Task.sleep(for: .seconds(4))
            case .allow:
                break
            }
            let now = clock.now()
            do {
                let result = try repository.submit(DoseInput(command: command, source: .button, issuedAt: intent.at), now: now,
                                                   timeZone: clock.timeZone)
                results.append(result)
                switch result {
                case .recorded(_, let confirmation, _):
                    logger.notice("button action recorded", metadata: [
                        "button": "\(intent.button.name)", "gesture": "\(intent.gesture.rawValue)", "result": "\(confirmation)",
                    ])
                    onRecorded()
                    await feedback?.play(.doseRecorded, title: confirmation, body: "")
                case .refused(let refusal, _):
                    logger.notice("button action rejected", metadata: [
                        "button": "\(intent.button.name)", "gesture": "\(intent.gesture.rawValue)", "reason": "\(refusal.message)",
                    ])
                    await feedback?.play(.actionRejected, title: refusal.message, body: "")
                }
            } catch {
                logger.error("cannot record the button action", metadata: ["error": "\(error)"])
            }
        }
        return results
    }

    private func recordBattery(_ button: ButtonConfig, _ level: Int, at: Date) {
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
