import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// iTag-style GATT buttons in the agent: one `GATTButtonClient` follower per added iTag (started and
/// stopped as the allowlist changes), bare presses → the shared press-only gesture recognizer → the dose
/// policy, the battery → samples of `button:<name>`.
extension ButtonService {
    var itagAddresses: Set<String> {
        Set(interpreter.configured.filter { $0.kind == .itag }.map(\.address))
    }

    /// Follows the added iTags until cancelled; then leaves each one cleanly (StopNotify) before returning.
    func followITags() async {
        guard let bluez else { return await Task.sleepForever() }
        let client = GATTButtonClient(bluez: bluez, clock: clock, logger: logger)
        // `button test` (observing) drops the links it made when it ends; the agent keeps them (see GATTButtonClient).
        itags.start(client: client, disconnectOnStop: observer != nil) { [weak self] address, event in
            _ = await self?.handleITag(address: address, event)
        }
        itags.setAddresses(itagAddresses)
        await Task.sleepForever()
        await itags.stopAll()
    }

    /// Decides one event of an iTag; returns the outcomes of the gestures it completed.
    @discardableResult
    public func handleITag(address: String, _ event: GATTButtonEvent) async -> [DoseOutcome] {
        guard let button = interpreter.configured.first(where: { $0.address == address && $0.kind == .itag }) else { return [] }
        switch event {
        case .connected, .disconnected:
            // The GATT client logs the link's changes.
            return []
        case .battery(let level):
            logger.debug("iTag battery", metadata: ["button": "\(DisplayText.escaped(button.name))", "level": "\(level)"])
            recordBattery(button, level, at: clock.now())
            return []
        case .press(let at):
            logger.info("iTag press", metadata: ["button": "\(DisplayText.escaped(button.name))"])
            return await feed(.press(at: at), button: button)
        }
    }
}

/// One follower task per added iTag. Addresses may be set before the client is: they are picked up when it is.
final class ITagFollowers: Sendable {
    typealias Handler = @Sendable (String, GATTButtonEvent) async -> Void

    private struct State {
        var client: GATTButtonClient?
        var disconnectOnStop = false
        var handler: Handler?
        var wanted: Set<String> = []
        var running: [String: Task<Void, Never>] = [:]
        /// Followers of removed buttons still leaving them (StopNotify, Disconnect).
        var leaving: [UUID: Task<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    func start(client: GATTButtonClient, disconnectOnStop: Bool, handler: @escaping Handler) {
        state.withLock {
            $0.client = client
            $0.disconnectOnStop = disconnectOnStop
            $0.handler = handler
        }
        reconcile()
    }

    func setAddresses(_ addresses: Set<String>) {
        state.withLock { $0.wanted = addresses }
        reconcile()
    }

    var following: Set<String> { state.withLock { Set($0.running.keys) } }

    /// Stops every follower and waits until each has left its button.
    func stopAll() async {
        let tasks = state.withLock { s -> [Task<Void, Never>] in
            defer {
                s.running.removeAll()
                s.leaving.removeAll()
                s.wanted.removeAll()
                s.client = nil
                s.handler = nil
            }
            return Array(s.running.values) + Array(s.leaving.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    private func reconcile() {
        state.withLock { s in
            guard let client = s.client, let handler = s.handler else { return }
            for address in s.running.keys where !s.wanted.contains(address) {
                guard let follower = s.running.removeValue(forKey: address) else { continue }
                // A removed button: stop following it, then release its link.
                follower.cancel()
                let id = UUID()
                s.leaving[id] = Task { [weak self] in
                    await follower.value
                    await client.disconnect(address: address)
                    self?.state.withLock { _ = $0.leaving.removeValue(forKey: id) }
                }
            }
            let disconnectOnStop = s.disconnectOnStop
            for address in s.wanted where s.running[address] == nil {
                s.running[address] = Task {
                    await client.follow(address: address, disconnectOnStop: disconnectOnStop) { event in await handler(address, event) }
                }
            }
        }
    }
}
