import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// iTag-style GATT buttons in the agent: one `GATTButtonClient` follower per added iTag (started and
/// stopped as the allowlist changes); its bare presses, battery and link changes become `ButtonSignal`s
/// of the service's one stream.
extension ButtonService {
    /// Follows the added iTags until cancelled, feeding their presses, batteries and links into `sink`;
    /// then leaves each one cleanly (StopNotify) before returning.
    func followITags(into sink: AsyncStream<ButtonSignal>.Continuation) async {
        guard let bluez else { return await Task.untilCancelled() }
        let client = GATTButtonClient(bluez: bluez, clock: clock, logger: logger)
        let clock = self.clock
        // `button test` (observing) drops the links it made when it ends; the agent keeps them (see GATTButtonClient).
        itags.start(client: client, disconnectOnStop: observing) { address, event in
            sink.yield(ButtonSignal(itag: address, event, now: clock.now()))
        }
        itags.setAddresses(pipeline.configured(.itag))
        await Task.untilCancelled()
        await itags.stopAll()
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
