import Crypto
import DoseTapCore
import DoseTapCrypto
import Foundation

/// A factory key that only tests hold: the simulated button's certificates are signed with it, and a session made
/// with `publicKey` as its factory key accepts them (a genuine Flic factory key never does).
public struct TestFlic2Factory: Sendable {
    /// The private key's 32 bytes (swift-crypto's key type is not Sendable on Linux).
    private let seed: [UInt8]
    public let publicKey: [UInt8]

    public init() {
        let key = Curve25519.Signing.PrivateKey()
        seed = Array(key.rawRepresentation)
        publicKey = Array(key.publicKey.rawRepresentation)
    }

    /// A fixed key (from 32 bytes), for tests that need the same certificate twice.
    public init(seed: [UInt8]) throws {
        let key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
        self.seed = seed
        publicKey = Array(key.publicKey.rawRepresentation)
    }

    public func sign(_ message: [UInt8]) -> [UInt8]? {
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed) else { return nil }
        return try? Array(key.signature(for: message))
    }
}

/// The button side of the Flic 2 protocol, written from the specification: full verify (certificate, X25519,
/// verifier check, the signed answer), quick verify with its stored pairings, InitButtonEvents with a queue of the
/// events made while no session was up, button-event notifications with the counter, acks, battery and ping.
/// It answers frames with frames, so a test can carry them over any transport, or tamper with them on the way.
public struct SimulatedFlic2Button: Sendable {
    public let address: BluetoothAddress
    public let factory: TestFlic2Factory
    /// The variant whose signature is valid (the low two bits of the certificate's byte 32, before they are masked).
    public let signatureVariant: UInt8
    public var publicMode: Bool
    /// The address the certificate names (tests set another one).
    public var certificateAddress: BluetoothAddress
    public var name: [UInt8] = Array("F2 test".utf8)
    public var serialNumber: [UInt8] = Array("BG00-T00001".utf8)
    /// The battery reading, a 10-bit fraction of 3.6 V (853: about 3.0 V).
    public var batteryRaw: UInt16 = 853
    public var mtu: Int = Flic2Frame.defaultMTU
    /// A button that replays every event not acknowledged, whatever event count the app says it has (the worst a
    /// button may do: the app must still act on each event once).
    public var replaysUnacknowledged = false
    /// The button's clock, in 1/32768 s.
    public private(set) var clock: UInt64 = 1 << 20
    public private(set) var bootID: UInt32
    public private(set) var eventCount: UInt32 = 0
    /// Pairings it keeps (identifier → key).
    public private(set) var pairings: [UInt32: [UInt8]] = [:]
    /// Events not yet acknowledged, with their counts.
    public private(set) var queue: [(item: Flic2Packets.EventItem, count: UInt32)] = []

    private let crypto = SwiftCryptoFlic2()
    private let ecdhPrivate: [UInt8]
    private let ecdhPublic: [UInt8]
    private let signature: [UInt8]
    private var reassembler = Flic2Reassembler()
    private var connectionID: UInt8 = 0
    private var nextConnectionID: UInt8 = 1
    private var keys: ChaskeyKeys?
    private var tx: UInt64 = 0
    private var rx: UInt64 = 0
    private var pendingFull: (tmpID: UInt32, random: [UInt8])?
    private var eventsInitialized = false

    public init(address: BluetoothAddress, factory: TestFlic2Factory = TestFlic2Factory(), signatureVariant: UInt8 = 0,
                publicMode: Bool = true, bootID: UInt32 = 7) {
        self.address = address
        self.factory = factory
        self.signatureVariant = signatureVariant & 3
        self.publicMode = publicMode
        certificateAddress = address
        self.bootID = bootID
        // A key pair whose certificate's signature has the wanted variant (one in four does).
        while true {
            let pair = SwiftCryptoFlic2().x25519KeyPair()
            let message = Array(address.bytes.reversed()) + [0] + pair.publicKey
            guard let signed = factory.sign(message), signed[32] & 3 == signatureVariant & 3 else {
                continue
            }
            ecdhPrivate = pair.privateKey
            ecdhPublic = pair.publicKey
            signature = signed
            break
        }
    }

    /// Whether a session is up (verified and events initialized).
    public var isConnected: Bool { keys != nil && eventsInitialized }

    /// The link dropped: the session ends; the pairings and the queue stay.
    public mutating func disconnect() {
        keys = nil
        connectionID = 0
        reassembler.reset()
        pendingFull = nil
        eventsInitialized = false
    }

    /// The button restarted (a battery change): a new boot id, the counter from zero, the queue gone.
    public mutating func reboot(bootID: UInt32) {
        disconnect()
        self.bootID = bootID
        eventCount = 0
        queue = []
    }

    public mutating func advance(seconds: Double) { clock += UInt64(seconds * 32768) }

    /// A factory reset: every pairing forgotten.
    public mutating func forgetPairings() { pairings = [:] }

    /// A gesture made on the button: the notification frames when a session is up, or queued until one is.
    public mutating func press(_ gesture: ButtonGesture) -> [[UInt8]] {
        let encoded: [UInt8]
        switch gesture {
        case .single: encoded = [1, 10]
        case .double: encoded = [1, 8, 1, 11]
        case .hold: encoded = [1, 3, 14]
        default: encoded = [1, 8, 1, 8, 1, 8]  // not a gesture Flic 2 classifies: clicks without a result
        }
        var items: [(Flic2Packets.EventItem, UInt32)] = []
        for value in encoded {
            let kind: UInt32 = value >> 3 != 0 ? 3 : UInt32(value & 3)
            // The counter moves to the next value with this kind in its low bits (down …1, hold …2, up …3, timeout …0).
            var next = eventCount &+ 1
            while next % 4 != kind % 4 { next &+= 1 }
            eventCount = next
            items.append((Flic2Packets.EventItem(timestamp: clock, encoded: value, wasQueued: !isConnected), next))
            clock += 3277
        }
        queue += items.map { (item: $0.0, count: $0.1) }
        guard isConnected else { return [] }
        return signed(Flic2Packets.ButtonEventNotification(pressCounter: eventCount, items: items.map(\.0)).encoded)
    }

    /// Frames the button sends for one frame written to it.
    public mutating func receive(_ frame: [UInt8]) -> [[UInt8]] {
        guard case .success(let packet?) = reassembler.receive(frame) else { return [] }
        var bytes = packet.bytes
        if keys != nil {
            guard bytes.count > 5 else { return [] }
            let body = Array(bytes.dropLast(5))
            guard let keys, Flic2KeySchedule.mac(body, keys: keys, direction: .toButton, counter: rx) == Array(bytes.suffix(5)) else {
                let out = signed([Flic2Opcode.FromButton.disconnectedVerifiedLinkInd.rawValue, 1])
                disconnect()
                return out
            }
            rx += 1
            bytes = body
            return established(bytes)
        }
        var r = ReaderLE(bytes)
        switch bytes[0] {
        case Flic2Opcode.ToButton.fullVerifyRequest1.rawValue:
            guard let tmpID = r.u32() else { return [] }
            let random = crypto.randomBytes(8)
            pendingFull = (tmpID, random)
            assignConnection()
            var shown = signature
            shown[32] = (shown[32] & 0xFC) | (signatureVariant ^ 2)  // the variant bits are not sent as they were
            let response = Flic2Packets.FullVerifyResponse1(
                tmpID: tmpID, signature: shown, address: Array(certificateAddress.bytes.reversed()), addressType: 0,
                publicKey: ecdhPublic, buttonRandom: random, isInPublicMode: publicMode)
            return frames(response.encoded, newlyAssigned: true)
        case Flic2Opcode.ToButton.fullVerifyRequest2WithoutAppToken.rawValue:
            guard let pending = pendingFull, let appKey = r.take(32), let clientRandom = r.take(8), let flags = r.u8(),
                  let verifier = r.take(16) else { return [] }
            pendingFull = nil
            guard publicMode else { return frames([Flic2Opcode.FromButton.fullVerifyFailResponse.rawValue, 1]) }
            guard let shared = crypto.x25519(privateKey: ecdhPrivate, peerPublicKey: appKey) else { return [] }
            let secret = Flic2KeySchedule.fullVerifySecret(crypto, sharedSecret: shared, variant: signatureVariant,
                                                           buttonRandom: pending.random, clientRandom: clientRandom, flags: flags)
            let derived = Flic2KeySchedule.fullVerifyKeys(crypto, secret: secret)
            guard derived.verifier == verifier else { return frames([Flic2Opcode.FromButton.fullVerifyFailResponse.rawValue, 0]) }
            pairings[derived.pairing.identifier] = derived.pairing.key
            startSession(ChaskeyKeys(key: derived.sessionKey))
            let info = Flic2Packets.FullVerifyResponse2(buttonUUID: Array(repeating: 0xAB, count: 16), name: name,
                                                        firmwareVersion: 10, batteryLevel: batteryRaw, serialNumber: serialNumber)
            return signed(info.encoded)
        case Flic2Opcode.ToButton.quickVerifyRequest.rawValue:
            guard let clientRandom = r.take(7), let flags = r.u8(), let tmpID = r.u32(), let pairingID = r.u32() else { return [] }
            guard let pairingKey = pairings[pairingID] else {
                return frames([Flic2Opcode.FromButton.quickVerifyNegativeResponse.rawValue] + le(UInt64(tmpID), 4))
            }
            let random = crypto.randomBytes(8)
            guard let sessionKey = Flic2KeySchedule.quickVerifySessionKey(pairingKey: pairingKey, clientRandom: clientRandom,
                                                                          flags: flags, buttonRandom: random) else { return [] }
            assignConnection()
            startSession(ChaskeyKeys(key: sessionKey))
            return signed(Flic2Packets.QuickVerifyResponse(buttonRandom: random, tmpID: tmpID).encoded, newlyAssigned: true)
        default:
            return []
        }
    }

    private mutating func established(_ bytes: [UInt8]) -> [[UInt8]] {
        var r = ReaderLE(bytes)
        switch bytes[0] {
        case Flic2Opcode.ToButton.initButtonEventsLightRequest.rawValue:
            guard let count = r.u32(), let boot = r.u32() else { return [] }
            let sameBoot = boot == bootID
            let from = sameBoot && !replaysUnacknowledged ? count : 0
            queue.removeAll { $0.count <= from }
            eventsInitialized = true
            let response = Flic2Packets.InitButtonEventsResponse(hasQueuedEvents: !queue.isEmpty, timestamp: clock,
                                                                 eventCount: from, newBootID: sameBoot ? nil : bootID)
            var out = signed(response.encoded)
            // Queued events, at most 16 to a notification (a packet is at most 128 bytes).
            var start = 0
            while start < queue.count {
                let end = min(queue.count, start + 16)
                var items = queue[start..<end].map(\.item)
                for i in items.indices { items[i].wasQueued = true }
                if end == queue.count { items[items.count - 1].wasQueuedLast = true }
                out += signed(Flic2Packets.ButtonEventNotification(pressCounter: queue[end - 1].count, items: items).encoded)
                start = end
            }
            return out
        case Flic2Opcode.ToButton.ackButtonEventsInd.rawValue:
            if let count = r.u32() { queue.removeAll { $0.count <= count } }
            return []
        case Flic2Opcode.ToButton.getBatteryLevelRequest.rawValue:
            return signed([Flic2Opcode.FromButton.getBatteryLevelResponse.rawValue] + le(UInt64(batteryRaw), 2))
        default:
            return []
        }
    }

    /// Any button-event notification, MACed like a real one (a test crafting what a faulty button might send).
    public mutating func notify(_ notification: Flic2Packets.ButtonEventNotification) -> [[UInt8]] {
        signed(notification.encoded)
    }

    /// A ping from the button (the app must answer it).
    public mutating func ping() -> [[UInt8]] {
        guard keys != nil else { return [] }
        return signed([Flic2Opcode.FromButton.pingRequest.rawValue])
    }

    private mutating func assignConnection() {
        connectionID = nextConnectionID
        nextConnectionID = nextConnectionID % 31 + 1
    }

    private mutating func startSession(_ sessionKeys: ChaskeyKeys?) {
        keys = sessionKeys
        tx = 0
        rx = 0
        eventsInitialized = false
    }

    private mutating func signed(_ packet: [UInt8], newlyAssigned: Bool = false) -> [[UInt8]] {
        guard let keys else { return [] }
        let mac = Flic2KeySchedule.mac(packet, keys: keys, direction: .fromButton, counter: tx)
        tx += 1
        return frames(packet + mac, newlyAssigned: newlyAssigned)
    }

    private func frames(_ packet: [UInt8], newlyAssigned: Bool = false) -> [[UInt8]] {
        var out = Flic2Frame.split(packet, connectionID: connectionID, mtu: mtu)
        if newlyAssigned {
            for i in out.indices { out[i][0] |= 0x20 }
        }
        return out
    }

    private func le(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private struct ReaderLE {
        let bytes: [UInt8]
        var offset = 1
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        mutating func take(_ n: Int) -> [UInt8]? {
            guard bytes.count - offset >= n else { return nil }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }
        mutating func u8() -> UInt8? { take(1)?[0] }
        mutating func u32() -> UInt32? {
            take(4).map { $0.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) } }
        }
    }
}
