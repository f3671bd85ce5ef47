import Foundation

/// The app's side of one Flic 2 connection, pure and synchronous: frames in, frames to write and what happened out.
/// The adapter feeds it the notify characteristic's values, writes what it returns, and calls `timedOut()` when a
/// verify takes too long.
///
/// - Pairing (`.pair`): full verify. The button's certificate (its address, address type and X25519 key, signed
///   with Flic's factory key in one of four signature variants) must verify and name the address we connected to;
///   then X25519, the SHA-256/HMAC key schedule, our verifier, and the button's signed answer.
/// - Reconnecting (`.resume`): quick verify with the stored pairing; the button's answer is the first packet MACed
///   with the new session key.
/// - Then `InitButtonEvents` with the event count and boot id acted on so far: queued events come first, each with
///   its age. An event whose count was already acted on (a reconnect replaying it) is never acted on again.
///
/// Fail closed: a bad MAC (a forged, replayed, dropped or reordered packet), a certificate that does not verify or
/// names another address, a malformed packet, a refused verify: the session ends with the reason, and nothing that
/// came after it is acted on.
public struct Flic2Session: Sendable {
    public enum Mode: Sendable, Equatable {
        case pair
        case resume(Flic2Pairing, Flic2EventProgress)
    }

    public enum Output: Sendable, Equatable {
        /// One frame to write to the button's write characteristic.
        case write([UInt8])
        /// A full verify succeeded: keep the pairing (never print or log it).
        case paired(Flic2Pairing, Flic2ButtonInfo)
        /// Quick verify succeeded: the stored pairing still holds.
        case verified
        /// A press the button classified. `age`: how long ago it happened (queued events while disconnected).
        case gesture(ButtonGesture, eventCount: UInt32, age: TimeInterval, queued: Bool)
        /// How far events were acted on: store it, so a reconnect never acts on them again.
        case progress(Flic2EventProgress)
        case battery(millivolts: Int)
        /// The session is over (nothing more is acted on); the adapter disconnects.
        case ended(Flic2Failure)
    }

    enum State: Sendable {
        case idle
        case waitFullVerify1(tmpID: UInt32)
        case waitFullVerify2(keys: Flic2KeySchedule.FullVerifyKeys)
        case waitQuickVerify(tmpID: UInt32, clientRandom: [UInt8], pairing: Flic2Pairing)
        case established
        case ended
    }

    /// The age given to a queued event whose age cannot be worked out (no InitButtonEvents answer yet, or a timestamp
    /// after the button's clock at that answer).
    public static let unknownQueuedAge: TimeInterval = 24 * 3600

    public let mode: Mode
    /// The address we connected to, as text ("AA:BB:…").
    public let address: BluetoothAddress
    private let crypto: any Flic2Crypto
    private let factoryKey: [UInt8]
    public var mtu: Int
    private var state: State = .idle
    private var reassembler = Flic2Reassembler()
    private var connectionID: UInt8 = 0
    private var keys: ChaskeyKeys?
    private var txCounter: UInt64 = 0
    private var rxCounter: UInt64 = 0
    public private(set) var progress: Flic2EventProgress
    /// The button's clock when it answered InitButtonEvents (queued events' ages are measured from it).
    private var initTimestamp: UInt64?

    public init(mode: Mode, address: BluetoothAddress, crypto: any Flic2Crypto,
                factoryKey: [UInt8] = Flic2KeySchedule.factoryPublicKey, mtu: Int = Flic2Frame.defaultMTU) {
        self.mode = mode
        self.address = address
        self.crypto = crypto
        self.factoryKey = factoryKey
        self.mtu = mtu
        if case .resume(_, let progress) = mode { self.progress = progress } else { progress = Flic2EventProgress() }
    }

    public var isEstablished: Bool { if case .established = state { true } else { false } }
    public var isEnded: Bool { if case .ended = state { true } else { false } }

    /// The first request: FullVerifyRequest1 or QuickVerifyRequest.
    public mutating func start() -> [Output] {
        guard case .idle = state else { return [] }
        let tmpID = UInt32(truncatingIfNeeded: crypto.randomBytes(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) })
        switch mode {
        case .pair:
            state = .waitFullVerify1(tmpID: tmpID)
            return frames(Flic2Packets.fullVerifyRequest1(tmpID: tmpID))
        case .resume(let pairing, _):
            let random = crypto.randomBytes(7)
            state = .waitQuickVerify(tmpID: tmpID, clientRandom: random, pairing: pairing)
            return frames(Flic2Packets.quickVerifyRequest(clientRandom: random, tmpID: tmpID, pairingID: pairing.identifier))
        }
    }

    /// A verify step took too long.
    public mutating func timedOut() -> [Output] {
        switch state {
        case .waitFullVerify1, .waitFullVerify2, .waitQuickVerify: end(.timeout)
        default: []
        }
    }

    /// Asks for the battery (the answer comes as `.battery`).
    public mutating func requestBattery() -> [Output] {
        guard isEstablished else { return [] }
        return signed(Flic2Packets.getBatteryLevel)
    }

    /// One notification from the button.
    public mutating func receive(_ frame: [UInt8]) -> [Output] {
        if case .ended = state { return [] }
        if case .idle = state { return [] }
        guard let first = frame.first else { return end(.frame(.truncated(0))) }
        let header = Flic2FrameHeader(byte: first)
        // Another app's logical connection on the same button: not ours to read.
        if (header.connectionID != 0 && header.connectionID != connectionID && !header.newlyAssigned)
            || (header.newlyAssigned && connectionID != 0) {
            return []
        }
        switch reassembler.receive(frame) {
        case .failure(let problem): return end(.frame(problem))
        case .success(nil): return []
        case .success(let packet?): return handle(packet)
        }
    }

    private mutating func handle(_ packet: Flic2Packet) -> [Output] {
        let bytes = packet.bytes
        switch state {
        case .idle, .ended:
            return []
        case .waitFullVerify1(let tmpID):
            return fullVerify1(bytes, packet.header, tmpID: tmpID)
        case .waitFullVerify2(let fullKeys):
            // Connection 0 carries other apps' verify traffic (their refusals, "no slots"): only a refusal is ours.
            if packet.header.connectionID == 0, bytes[0] != Flic2Opcode.FromButton.fullVerifyFailResponse.rawValue { return [] }
            return fullVerify2(bytes, fullKeys)
        case .waitQuickVerify(let tmpID, let clientRandom, let pairing):
            return quickVerify(bytes, packet.header, tmpID: tmpID, clientRandom: clientRandom, pairing: pairing)
        case .established:
            // Connection 0 is not a verified session's: other apps' verify traffic, never ours to act on or to die of.
            guard packet.header.connectionID != 0 else { return [] }
            guard let body = verified(bytes) else { return end(.badMAC(opcode: bytes[0])) }
            return established(body)
        }
    }

    private mutating func fullVerify1(_ bytes: [UInt8], _ header: Flic2FrameHeader, tmpID: UInt32) -> [Output] {
        switch bytes[0] {
        case Flic2Opcode.FromButton.noLogicalConnectionSlotsInd.rawValue:
            return Self.lists(bytes, tmpID) ? end(.tooManyApps) : []
        case Flic2Opcode.FromButton.fullVerifyResponse1.rawValue:
            guard let response = Flic2Packets.FullVerifyResponse1(bytes) else {
                return end(.malformed("FullVerifyResponse1 of \(bytes.count) bytes"))
            }
            guard response.tmpID == tmpID else { return [] }  // another app's pairing attempt
            connectionID = header.connectionID
            let expected = Array(address.bytes.reversed())
            guard response.address == expected, response.addressType == 0 else {
                let named = response.address.reversed().map { HexBytes.string([$0], uppercase: true) }.joined(separator: ":")
                return end(.addressMismatch(certificate: response.addressType == 0 ? named : "\(named) (random)"))
            }
            guard let variant = Flic2KeySchedule.signatureVariant(crypto, signature: response.signature,
                                                                  message: response.signedMessage, factoryKey: factoryKey) else {
                return end(.badCertificate)
            }
            let ours = crypto.x25519KeyPair()
            guard let shared = crypto.x25519(privateKey: ours.privateKey, peerPublicKey: response.publicKey) else {
                return end(.badCertificate)
            }
            let clientRandom = crypto.randomBytes(8)
            let secret = Flic2KeySchedule.fullVerifySecret(crypto, sharedSecret: shared, variant: variant,
                                                           buttonRandom: response.buttonRandom, clientRandom: clientRandom,
                                                           flags: Flic2Packets.fullVerifyRequest2Flags)
            let fullKeys = Flic2KeySchedule.fullVerifyKeys(crypto, secret: secret)
            keys = ChaskeyKeys(key: fullKeys.sessionKey)
            state = .waitFullVerify2(keys: fullKeys)
            return frames(Flic2Packets.fullVerifyRequest2(publicKey: ours.publicKey, clientRandom: clientRandom,
                                                          verifier: fullKeys.verifier))
        default:
            return []
        }
    }

    private mutating func fullVerify2(_ bytes: [UInt8], _ fullKeys: Flic2KeySchedule.FullVerifyKeys) -> [Output] {
        switch bytes[0] {
        case Flic2Opcode.FromButton.fullVerifyFailResponse.rawValue:
            let reason = bytes.count > 1 ? bytes[1] : 0xFF
            return end(reason == 1 ? .notInPublicMode : reason == 0 ? .verifierRefused : .malformed("full verify failed with reason \(reason)"))
        default:
            // Keys are agreed: whatever else comes on our connection must carry a valid MAC, and be the answer.
            guard let body = verified(bytes) else { return end(.badMAC(opcode: bytes[0])) }
            guard let response = Flic2Packets.FullVerifyResponse2(body) else {
                return end(.malformed("FullVerifyResponse2 of \(bytes.count) bytes"))
            }
            state = .established
            progress = Flic2EventProgress()
            let info = Flic2ButtonInfo(name: response.name, serialNumber: response.serialNumber,
                                       firmwareVersion: response.firmwareVersion,
                                       batteryMillivolts: Flic2Packets.batteryMillivolts(response.batteryLevel))
            return [.paired(fullKeys.pairing, info), .battery(millivolts: info.batteryMillivolts)] + initEvents()
        }
    }

    private mutating func quickVerify(_ bytes: [UInt8], _ header: Flic2FrameHeader, tmpID: UInt32, clientRandom: [UInt8],
                                      pairing: Flic2Pairing) -> [Output] {
        switch bytes[0] {
        case Flic2Opcode.FromButton.noLogicalConnectionSlotsInd.rawValue:
            return Self.lists(bytes, tmpID) ? end(.tooManyApps) : []
        case Flic2Opcode.FromButton.quickVerifyNegativeResponse.rawValue:
            var r = Flic2Reader(bytes)
            guard r.u32() == tmpID else { return [] }
            return end(.pairingUnknown)
        case Flic2Opcode.FromButton.quickVerifyResponse.rawValue:
            guard bytes.count > Flic2Packets.macLength,
                  let response = Flic2Packets.QuickVerifyResponse(Array(bytes.dropLast(Flic2Packets.macLength))) else {
                return end(.malformed("QuickVerifyResponse of \(bytes.count) bytes"))
            }
            guard response.tmpID == tmpID else { return [] }
            guard let sessionKey = Flic2KeySchedule.quickVerifySessionKey(
                pairingKey: pairing.key, clientRandom: clientRandom, flags: Flic2Packets.quickVerifyRequestFlags,
                buttonRandom: response.buttonRandom) else { return end(.storedPairingUnusable) }
            connectionID = header.connectionID
            keys = ChaskeyKeys(key: sessionKey)
            guard verified(bytes) != nil else { return end(.badMAC(opcode: bytes[0])) }
            state = .established
            return [.verified] + initEvents()
        default:
            return []
        }
    }

    private mutating func established(_ body: [UInt8]) -> [Output] {
        switch body[0] {
        case Flic2Opcode.FromButton.initButtonEventsResponseWithBootID.rawValue,
             Flic2Opcode.FromButton.initButtonEventsResponseWithoutBootID.rawValue:
            guard let response = Flic2Packets.InitButtonEventsResponse(body) else {
                return end(.malformed("InitButtonEventsResponse of \(body.count) bytes"))
            }
            initTimestamp = response.timestamp
            if let boot = response.newBootID, boot != progress.bootID {
                // The button restarted: its counter starts again.
                progress = Flic2EventProgress(bootID: boot, eventCount: response.eventCount)
                return [.progress(progress)]
            }
            return []
        case Flic2Opcode.FromButton.buttonEventNotification.rawValue:
            guard let notification = Flic2Packets.ButtonEventNotification(body) else {
                return end(.malformed("ButtonEventNotification of \(body.count) bytes"))
            }
            var outputs: [Output] = []
            var acknowledge = false
            for (item, count) in zip(notification.items, notification.eventCounts) {
                if item.encoded == 2 || item.gesture == .single || item.gesture == .double { acknowledge = true }
                // Acted on already (a reconnect replaying a queued event): counted once.
                guard count > progress.eventCount else { continue }
                progress.eventCount = count
                guard let gesture = item.gesture else { continue }
                var age: TimeInterval = 0
                if item.wasQueued {
                    // Fail closed: a queued event whose age cannot be worked out is old (never a dose, never an
                    // alarm's answer), not new.
                    if let now = initTimestamp, now >= item.timestamp {
                        age = TimeInterval(now - item.timestamp) / 32768
                    } else {
                        age = Self.unknownQueuedAge
                    }
                }
                outputs.append(.gesture(gesture, eventCount: count, age: age, queued: item.wasQueued))
            }
            outputs.append(.progress(progress))
            if acknowledge { outputs += signed(Flic2Packets.ackButtonEvents(eventCount: progress.eventCount)) }
            return outputs
        case Flic2Opcode.FromButton.pingRequest.rawValue:
            return signed(Flic2Packets.pingResponse([]))
        case Flic2Opcode.FromButton.getBatteryLevelResponse.rawValue:
            guard let raw = Flic2Packets.batteryLevel(body) else { return end(.malformed("battery answer of \(body.count) bytes")) }
            return [.battery(millivolts: Flic2Packets.batteryMillivolts(raw))]
        case Flic2Opcode.FromButton.disconnectedVerifiedLinkInd.rawValue:
            return end(.disconnectedByButton(reason: body.count > 1 ? body[1] : 0xFF))
        default:
            return []
        }
    }

    /// Whether a NoLogicalConnectionSlotsInd names our attempt (it lists the refused attempts' tmp ids).
    private static func lists(_ bytes: [UInt8], _ tmpID: UInt32) -> Bool {
        var r = Flic2Reader(bytes)
        while let id = r.u32() {
            if id == tmpID { return true }
        }
        return false
    }

    private mutating func initEvents() -> [Output] {
        signed(Flic2Packets.initButtonEvents(eventCount: progress.eventCount, bootID: progress.bootID))
    }

    /// The packet without its MAC when the MAC is the next one from the button; the counter moves either way.
    private mutating func verified(_ bytes: [UInt8]) -> [UInt8]? {
        guard let keys, bytes.count > Flic2Packets.macLength else { return nil }
        let body = Array(bytes.dropLast(Flic2Packets.macLength))
        let expected = Flic2KeySchedule.mac(body, keys: keys, direction: .fromButton, counter: rxCounter)
        rxCounter += 1
        var difference: UInt8 = 0
        for (a, b) in zip(expected, bytes.suffix(Flic2Packets.macLength)) { difference |= a ^ b }
        return difference == 0 ? body : nil
    }

    private mutating func signed(_ packet: [UInt8]) -> [Output] {
        guard let keys else { return [] }
        let mac = Flic2KeySchedule.mac(packet, keys: keys, direction: .toButton, counter: txCounter)
        txCounter += 1
        return frames(packet + mac)
    }

    private func frames(_ packet: [UInt8]) -> [Output] {
        Flic2Frame.split(packet, connectionID: connectionID, mtu: mtu).map(Output.write)
    }

    private mutating func end(_ failure: Flic2Failure) -> [Output] {
        state = .ended
        keys = nil
        return [.ended(failure)]
    }
}

/// How far a button's events were acted on: the boot id it reported and the last event count.
public struct Flic2EventProgress: Sendable, Equatable, Hashable, Codable {
    public var bootID: UInt32
    public var eventCount: UInt32

    public init(bootID: UInt32 = 0, eventCount: UInt32 = 0) {
        self.bootID = bootID
        self.eventCount = eventCount
    }
}

/// What the button says of itself at pairing (its name and serial are the button's text: escape them to show).
public struct Flic2ButtonInfo: Sendable, Equatable {
    public var name: [UInt8]
    public var serialNumber: [UInt8]
    public var firmwareVersion: UInt32
    public var batteryMillivolts: Int

    public init(name: [UInt8], serialNumber: [UInt8], firmwareVersion: UInt32, batteryMillivolts: Int) {
        self.name = name
        self.serialNumber = serialNumber
        self.firmwareVersion = firmwareVersion
        self.batteryMillivolts = batteryMillivolts
    }
}

/// Why a Flic 2 session ended, one line each.
public enum Flic2Failure: Error, Sendable, Equatable, CustomStringConvertible {
    case notInPublicMode
    case verifierRefused
    case badCertificate
    case addressMismatch(certificate: String)
    case tooManyApps
    case pairingUnknown
    case storedPairingUnusable
    case badMAC(opcode: UInt8)
    case malformed(String)
    case frame(Flic2FrameError)
    case disconnectedByButton(reason: UInt8)
    case timeout

    public var description: String {
        switch self {
        case .notInPublicMode: "the button is not in pairing mode (a Flic 2 paired with a phone or hub refuses others until then): hold it for 7 seconds until it flashes, then try again"
        case .verifierRefused: "verify failed: the button refused our key exchange"
        case .badCertificate: "verify failed: the button's certificate is not signed by Flic (not a genuine Flic 2)"
        case .addressMismatch(let named): "verify failed: the button's certificate is for \(named), not the device we connected to"
        case .tooManyApps: "the button is connected to too many apps: disconnect one (or remove an old pairing) and try again"
        case .pairingUnknown: "the button no longer knows this pairing (it was reset or paired elsewhere): add it again"
        case .storedPairingUnusable: "the stored pairing cannot be used: add the button again"
        case .badMAC(let opcode): "a packet (opcode \(opcode)) failed its MAC: forged, replayed or out of order"
        case .malformed(let what): "a malformed packet: \(what)"
        case .frame(let problem): "a bad frame: \(problem)"
        case .disconnectedByButton(let reason): "the button ended the session (reason \(reason))"
        case .timeout: "no answer from the button in time"
        }
    }
}
