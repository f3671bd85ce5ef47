import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// BTHome buttons: the adverts BlueZ hears (every neighbour in range; the pipeline keeps the added ones and
/// parses them with Core's BTHome parser). Starts again whenever bluetoothd gets a new owner or an adapter
/// comes (back) on. Its bus is shared with the iTag source and closed after every source has stopped.
final class BTHomeAdvertSource: ButtonSource {
    let bluez: BlueZClient
    let clock: any Scheduling
    let logger: Logger
    private let state = Mutex((addresses: Set<String>(), running: false))

    init(bluez: BlueZClient, clock: any Scheduling, logger: Logger) {
        self.bluez = bluez
        self.clock = clock
        self.logger = logger
    }

    var kinds: Set<ButtonKind> { [.bthome] }

    func follow(_ buttons: [ButtonConfig]) async {
        let addresses = Set(buttons.map(\.address))
        let running = state.withLock { state in
            state.addresses = addresses
            return state.running
        }
        // A BTHome button added while running: discovery must be on (the first one turns it on).
        if running, !addresses.isEmpty { try? await bluez.startDiscovery() }
    }

    func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async {
        state.withLock { $0.running = true }
        while !Task.isCancelled {
            do {
                let owners = try await bluez.ownerChanges()
                let adapters = try await bluez.adapterChanges()
                if !state.withLock({ $0.addresses.isEmpty }) { try await bluez.startDiscovery() }
                let adverts = try await bluez.adverts()
                logger.info("listening to BlueZ", metadata: ["buttons": "\(state.withLock { $0.addresses.count })"])
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await advert in adverts { sink(.advert(advert)) }
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

    func close() {
        bluez.connection.close()
    }
}
