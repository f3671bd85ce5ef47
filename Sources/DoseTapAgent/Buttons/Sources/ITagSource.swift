import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// iTag-style GATT buttons: one `GATTButtonClient` follower per added iTag (started and stopped as the
/// allowlist changes); their bare presses, batteries and link changes become `ButtonSignal`s.
struct ITagSource: ButtonSource {
    let bluez: BlueZClient
    let clock: any Scheduling
    let logger: Logger
    /// `button test` drops the links it made when it ends; the agent keeps them (see GATTButtonClient).
    let disconnectOnStop: Bool
    let followers = ITagFollowers()

    var kinds: Set<ButtonKind> { [.itag] }

    func follow(_ buttons: [ButtonConfig]) async {
        let addresses = Set(buttons.map(\.address))
        followers.setAddresses(addresses)
    }

    /// Follows the added iTags until cancelled; then leaves each one cleanly (StopNotify) before returning.
    func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async {
        let client = GATTButtonClient(bluez: bluez, clock: clock, logger: logger)
        let clock = self.clock
        followers.start(client: client, disconnectOnStop: disconnectOnStop) { address, event in
            sink(ButtonSignal(itag: address, event, now: clock.now()))
        }
        await Task.untilCancelled()
        await followers.stopAll()
    }

    func close() {}
}

extension ButtonSignal {
    /// An iTag's event (BlueZ GATT adapter) as a button signal. `now` stamps the battery reading.
    public init(itag address: String, _ event: GATTButtonEvent, now: Date) {
        switch event {
        case .connected:
            self = .link(address: address, kind: .itag, .connected(detail: [:]))
        case .disconnected(let reason):
            self = .link(address: address, kind: .itag, .disconnected(reason: reason, interruptedPress: false))
        case .battery(let level):
            self = .battery(address: address, kind: .itag, level: level, at: now)
        case .press(let at):
            self = .key(address: address, kind: .itag, .press(at: at))
        }
    }
}

/// One follower task per added GATT button (iTags; Flic 2 buttons with their conversation). Addresses may be set
/// before the client is: they are picked up when it is.
final class ITagFollowers: Sendable {
    typealias Handler = @Sendable (String, GATTButtonEvent) async -> Void

    /// For a button that talks back: a new conversation for each connection to an address.
    typealias Conversations = @Sendable (String) -> (@Sendable () -> any GATTConversation)

    private struct State {
        var client: GATTButtonClient?
        var disconnectOnStop = false
        var profile = GATTProfile.iTag
        var conversations: Conversations?
        var handler: Handler?
        var wanted: Set<String> = []
        var running: [String: Task<Void, Never>] = [:]
        /// Followers of removed buttons still leaving them (StopNotify, Disconnect).
        var leaving: [UUID: Task<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    func start(client: GATTButtonClient, disconnectOnStop: Bool, profile: GATTProfile = .iTag,
               conversation: Conversations? = nil, handler: @escaping Handler) {
        state.withLock {
            $0.client = client
            $0.disconnectOnStop = disconnectOnStop
            $0.profile = profile
            $0.conversations = conversation
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
            let profile = s.profile
            for address in s.wanted where s.running[address] == nil {
                let conversation = s.conversations?(address)
                s.running[address] = Task {
                    await client.follow(address: address, profile: profile, conversation: conversation,
                                        disconnectOnStop: disconnectOnStop) { event in await handler(address, event) }
                }
            }
        }
    }
}
