import Foundation
import Logging

/// How one connection attempt ended.
enum GATTSessionEnd: Sendable, Equatable {
    case stopped
    case busClosed
    case ended(reason: String, wasNotifying: Bool)
}

/// One connection attempt and, if it succeeds, one link: from finding the device to the link going away.
/// Used by one task only.
final class GATTButtonSession {
    private enum Phase { case waitingForBlueZ, findingDevice, connecting, resolving, notifying }

    /// Why the session stops (thrown through the steps).
    private enum Stop: Error {
        case stopped
        case busClosed
        /// The link went away by itself: nothing to clean up.
        case lost(String)
        /// A step failed: drop a link this session made before trying again.
        case failed(String)
    }

    private enum Happening {
        /// From bluetoothd, or (`nameOwnerChanged`) the bus about `org.bluez`.
        case signal(BlueZSignal)
        case timeout(UInt64)
    }

    private let client: GATTButtonClient
    private let profile: GATTProfile
    /// A button that talks back (Flic 2): its protocol, for this connection.
    private let conversation: (any GATTConversation)?
    private let address: String
    private let disconnectOnStop: Bool
    private let emit: @Sendable (GATTButtonEvent) -> Void
    private let inbox: SignalInbox
    private var iterator: AsyncStream<SignalInbox.Input>.Iterator
    private var connection: DBusConnection { client.bluez.connection }

    private var phase = Phase.waitingForBlueZ
    private var owner: String?
    private var devicePath: String?
    private var characteristicPath: String?
    private var writePath: String?
    private var servicePath: String?
    /// The conversation's timer, when one runs.
    private var conversationTimer: UInt64?
    private var linkUp = false
    private var connectedHere = false
    private var notifying = false
    private var timerToken: UInt64 = 0
    private var lastBattery: Int?

    init(client: GATTButtonClient, profile: GATTProfile = .iTag, conversation: (any GATTConversation)? = nil, address: String,
         disconnectOnStop: Bool, emit: @escaping @Sendable (GATTButtonEvent) -> Void) {
        self.client = client
        self.profile = profile
        self.conversation = conversation
        self.address = address
        self.disconnectOnStop = disconnectOnStop
        self.emit = emit
        inbox = SignalInbox(connection: client.bluez.connection, scheduler: client.scheduler)
        iterator = inbox.stream.makeAsyncIterator()
    }

    private var metadata: Logger.Metadata { ["button": "\(address)"] }

    func run() async -> GATTSessionEnd {
        defer { inbox.close() }
        do {
            try await start()
            try await listen()
        } catch let stop as Stop {
            return await finish(stop)
        } catch is CancellationError {
            return await finish(.stopped)
        } catch {
            return await finish(.failed("\(error)"))
        }
    }

    private func finish(_ stop: Stop) async -> GATTSessionEnd {
        let wasNotifying = phase == .notifying
        if let conversation {
            switch stop {
            case .stopped: conversation.closed(reason: "stopped")
            case .busClosed: conversation.closed(reason: "the D-Bus connection closed")
            case .lost(let reason), .failed(let reason): conversation.closed(reason: reason)
            }
        }
        switch stop {
        case .stopped:
            // Leave cleanly, even though the task is cancelled (D-Bus calls don't look at cancellation).
            if notifying, let path = characteristicPath { await cleanupCall(path, ITagGATT.gattCharacteristic, "StopNotify") }
            if disconnectOnStop, connectedHere, let path = devicePath { await cleanupCall(path, ITagGATT.device, "Disconnect") }
            return .stopped
        case .busClosed:
            return .busClosed
        case .lost(let reason):
            return .ended(reason: reason, wasNotifying: wasNotifying)
        case .failed(let reason):
            if connectedHere, linkUp, let path = devicePath { await cleanupCall(path, ITagGATT.device, "Disconnect") }
            return .ended(reason: reason, wasNotifying: wasNotifying)
        }
    }

    private func cleanupCall(_ path: String, _ interface: String, _ member: String) async {
        do {
            _ = try await connection.call(destination: BlueZClient.service, path: path, interface: interface, member: member,
                                          timeout: client.timing.cleanup)
        } catch {
            client.log(.debug, "\(profile.label) cleanup call failed", metadata.merging(["call": "\(member)", "error": "\(error)"]) { $1 })
        }
    }

    // MARK: The steps

    private func start() async throws {
        // Subscribe before reading anything, so nothing that happens in between is missed.
        try await subscribe(DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                          member: "NameOwnerChanged", arg0: BlueZClient.service))
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, interface: "org.freedesktop.DBus.ObjectManager",
                                          member: "InterfacesAdded"))
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, interface: "org.freedesktop.DBus.ObjectManager",
                                          member: "InterfacesRemoved"))

        // 1. bluetoothd, whose unique name every later signal must come from.
        owner = try? await call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(BlueZClient.service)],
                                destination: "org.freedesktop.DBus").first?.string
        if owner == nil {
            client.log(.notice, "bluetoothd is not running: waiting for it", metadata)
            while owner == nil {
                if case .signal(.nameOwnerChanged(_, let new)) = try await next(), !new.isEmpty { owner = new }
            }
        }

        // 2. The device: known to BlueZ, or discovered.
        phase = .findingDevice
        var tree = try await managedObjects()
        devicePath = ITagGATT.devicePath(address: address, in: tree)
        if devicePath == nil {
            client.log(.notice, "\(profile.label) not known to BlueZ yet: discovering it", metadata)
            do { try await abandonOnCancel { [client] in try await client.bluez.startDiscovery() } } catch is CancellationError {
                throw Stop.stopped
            } catch {
                client.log(.notice, "cannot start discovery", metadata.merging(["error": "\(error)"]) { $1 })
            }
            while devicePath == nil {
                guard case .signal(.interfacesAdded(let path, let interfaces)) = try await next(), interfaces[ITagGATT.device] != nil else { continue }
                devicePath = ITagGATT.devicePath(address: address, in: [path: interfaces])
            }
        }
        guard let devicePath else { throw Stop.failed("no device") }
        try await subscribe(DBusMatchRule(sender: BlueZClient.service, pathNamespace: devicePath,
                                          interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"))
        tree = try await managedObjects()
        guard let device = tree[devicePath]?[ITagGATT.device] else { throw Stop.lost("the device was removed") }
        if let level = tree[devicePath]?[ITagGATT.battery]?["Percentage"]?.int { battery(level) }

        // 3. The link.
        phase = .connecting
        linkUp = device["Connected"]?.bool == true
        if !linkUp { try await connect(devicePath) }

        // 4. Services resolved.
        phase = .resolving
        let resolved = try? await call(devicePath, "org.freedesktop.DBus.Properties", "Get",
                                       [.string(ITagGATT.device), .string("ServicesResolved")]).first?.bool
        if resolved != true {
            let token = startTimer(client.timing.resolve)
            defer { inbox.cancelTimer(token) }
            waiting: while true {
                switch try await next() {
                case .signal(.propertiesChanged(devicePath, ITagGATT.device, let changed)) where changed["ServicesResolved"]?.bool == true:
                    break waiting
                case .timeout(token):
                    throw Stop.failed("services not resolved within \(client.timing.resolve)")
                default:
                    continue
                }
            }
        }

        // 5. The notify characteristic under the profile's service (0xFFE1 under 0xFFE0 for an iTag), the write
        // characteristic of a button that talks back, and notifications.
        tree = try await managedObjects()
        guard let characteristic = ITagGATT.characteristic(profile.notifyUUID, service: profile.serviceUUID, device: devicePath, in: tree) else {
            throw Stop.failed(profile == .iTag ? "no characteristic 0xFFE1 under service 0xFFE0: not an iTag-style button?"
                : "no \(profile.label) service (\(profile.serviceUUID)) with its characteristics: not a \(profile.label)?")
        }
        if let writeUUID = profile.writeUUID {
            guard let write = ITagGATT.characteristic(writeUUID, service: profile.serviceUUID, device: devicePath, in: tree) else {
                throw Stop.failed("no \(profile.label) write characteristic (\(writeUUID)): not a \(profile.label)?")
            }
            writePath = write
        }
        characteristicPath = characteristic
        servicePath = tree[characteristic]?[ITagGATT.gattCharacteristic]?["Service"]?.string
        if let level = tree[devicePath]?[ITagGATT.battery]?["Percentage"]?.int { battery(level) }
        do {
            _ = try await call(characteristic, ITagGATT.gattCharacteristic, "StartNotify", [])
        } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
            // This connection already asked for them.
        } catch let error as DBusError {
            throw Stop.failed("StartNotify failed: \(error)")
        }
        notifying = true
        phase = .notifying
        if let conversation {
            let mtu = tree[characteristic]?[ITagGATT.gattCharacteristic]?["MTU"]?.int ?? 23
            client.log(.info, "\(profile.label) connected: verifying", metadata.merging(["characteristic": "\(characteristic)", "mtu": "\(mtu)"]) { $1 })
            emit(.connected)
            try await perform(conversation.opened(mtu: mtu))
        } else {
            client.log(.info, "iTag connected: listening for presses", metadata.merging(["characteristic": "\(characteristic)"]) { $1 })
            emit(.connected)
        }
    }

    /// Writes a conversation's frames in order, then starts its timer or ends the link.
    private func perform(_ reply: GATTReply) async throws {
        if let writePath {
            for frame in reply.writes {
                do {
                    _ = try await call(writePath, ITagGATT.gattCharacteristic, "WriteValue", [
                        .array(elementSignature: "y", frame.map(DBusValue.byte)),
                        .dictionary(keySignature: "s", valueSignature: "v", []),
                    ])
                } catch let error as DBusError {
                    throw Stop.failed("WriteValue failed: \(error)")
                }
            }
        }
        if let timeout = reply.timeout {
            if let token = conversationTimer { inbox.cancelTimer(token) }
            conversationTimer = startTimer(timeout)
        }
        if let end = reply.end { throw Stop.failed(end) }
    }

    private func connect(_ devicePath: String) async throws {
        do {
            _ = try await call(devicePath, ITagGATT.device, "Connect", [], timeout: client.timing.connect)
            connectedHere = true
            linkUp = true
        } catch let error as DBusError where error.name == "org.bluez.Error.AlreadyConnected" {
            linkUp = true
        } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
            // Someone else (the agent, `button test`) is connecting it: wait for the link.
            let token = startTimer(client.timing.connect)
            defer { inbox.cancelTimer(token) }
            while !linkUp {
                switch try await next() {
                case .signal(.propertiesChanged(devicePath, ITagGATT.device, let changed)) where changed["Connected"]?.bool == true:
                    linkUp = true
                case .timeout(token):
                    throw Stop.failed("another connection attempt did not finish within \(client.timing.connect)")
                default:
                    continue
                }
            }
        } catch let error as DBusError {
            throw Stop.failed("cannot connect: \(error.name == "org.freedesktop.DBus.Error.NoReply" ? "no answer within \(client.timing.connect)" : error.description)")
        }
    }

    private func listen() async throws -> Never {
        guard let characteristicPath else { throw Stop.failed("no characteristic") }
        while true {
            let happening = try await next()
            if let conversation, case .timeout(let token) = happening, token == conversationTimer {
                conversationTimer = nil
                try await perform(conversation.timedOut())
                continue
            }
            guard case .signal(.propertiesChanged(characteristicPath, ITagGATT.gattCharacteristic, let changed)) = happening,
                  let value = changed["Value"] else { continue }
            let at = client.now()
            guard let bytes = value.bytes else {
                client.log(.warning, "malformed \(profile.label) notification ignored", metadata.merging(["value": "\(value)"]) { $1 })
                continue
            }
            if let conversation {
                try await perform(conversation.received(bytes, at: at))
            } else if ITagGATT.isPress(bytes) {
                emit(.press(at: at))
            } else {
                client.log(.notice, "iTag notification that is not a press ignored",
                           metadata.merging(["value": "\(bytes.map { String(format: "%02x", $0) }.joined())"]) { $1 })
            }
        }
    }

    // MARK: Signals

    /// The next thing that happened, after what every step handles alike: a new owner of org.bluez, the device
    /// or the characteristic removed, the link dropping, the battery. Cancelled or the bus gone → thrown.
    private func next() async throws(Stop) -> Happening {
        while true {
            guard let input = await iterator.next() else {
                if Task.isCancelled { throw .stopped }
                if !connection.isConnected { throw .busClosed }
                throw .lost("the signal stream ended")
            }
            guard let happening = classify(input) else { continue }
            guard case .signal(let signal) = happening else { return happening }
            switch signal {
            case .nameOwnerChanged(_, let new):
                if phase == .waitingForBlueZ { return happening }
                throw .lost(new.isEmpty ? "bluetoothd stopped" : "bluetoothd restarted")
            case .interfacesRemoved(let path, let interfaces):
                if path == devicePath, interfaces.contains(ITagGATT.device) { throw .lost("the device was removed") }
                if path == characteristicPath || path == servicePath, phase == .notifying { throw .lost("its GATT services were removed") }
            case .interfacesAdded(let path, let interfaces):
                if path == devicePath, let level = interfaces[ITagGATT.battery]?["Percentage"]?.int { battery(level) }
            case .propertiesChanged(let path, let interface, let changed) where path == devicePath:
                if interface == ITagGATT.battery, let level = changed["Percentage"]?.int { battery(level) }
                if interface == ITagGATT.device, let connected = changed["Connected"]?.bool {
                    if connected {
                        linkUp = true
                    } else if linkUp {
                        linkUp = false
                        throw .lost("link lost")
                    }
                }
            default:
                break
            }
            return happening
        }
    }

    /// Reports the battery when it differs from what this session last reported.
    private func battery(_ level: Int) {
        guard level != lastBattery else { return }
        lastBattery = level
        emit(.battery(level))
    }

    /// The input as a happening, or nil when it is not for this session: a signal that is not from the
    /// current bluetoothd (another process on the bus could send look-alikes), or about another name.
    private func classify(_ input: SignalInbox.Input) -> Happening? {
        let message: DBusMessage
        switch input {
        case .timeout(let token): return .timeout(token)
        case .signal(let m): message = m
        }
        // Only bluetoothd speaks for the button; the bus speaks for who bluetoothd is.
        if message.member != "NameOwnerChanged" {
            guard let owner, message.sender == owner else { return nil }
        }
        let signal: BlueZSignal
        do {
            guard let decoded = try BlueZSignal.decode(message) else { return nil }
            signal = decoded
        } catch {
            client.log(.warning, "malformed BlueZ signal ignored",
                       metadata.merging(["member": "\(error.member)", "signature": "\(error.signature)"]) { $1 })
            return nil
        }
        if case .nameOwnerChanged(let name, _) = signal, name != BlueZClient.service { return nil }
        return .signal(signal)
    }

    private func subscribe(_ rule: DBusMatchRule) async throws {
        do { try await inbox.subscribe(rule) } catch {
            if Task.isCancelled { throw Stop.stopped }
            if !connection.isConnected { throw Stop.busClosed }
            throw Stop.failed("cannot subscribe to BlueZ's signals: \(error)")
        }
    }

    private func startTimer(_ after: Duration) -> UInt64 {
        timerToken += 1
        inbox.timer(after: after, token: timerToken)
        return timerToken
    }

    // MARK: Calls

    /// A call that stops being waited for when the task is cancelled (`CancellationError`).
    private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
                      destination: String = BlueZClient.service, timeout: Duration? = nil) async throws -> [DBusValue] {
        let connection = connection
        let timeout = timeout ?? client.timing.call
        return try await abandonOnCancel {
            try await connection.call(destination: destination, path: path, interface: interface, member: member,
                                      arguments: arguments, timeout: timeout)
        }
    }

    private func managedObjects() async throws -> ITagGATT.Tree {
        do {
            return try await abandonOnCancel { [client] in try await client.bluez.managedObjects() }
        } catch is CancellationError {
            throw Stop.stopped
        } catch {
            if !connection.isConnected { throw Stop.busClosed }
            throw Stop.failed("cannot read BlueZ's objects: \(error)")
        }
    }
}
