import Foundation

/// What became of one advert from a known BTHome device.
public enum BTHomeReception: Hashable, Sendable {
    /// New and authentic (or plaintext from a device without a bindkey): act on `advert.events`,
    /// record `advert.battery`.
    case accepted(BTHomeAdvert)
    /// A repeat of something already accepted (devices send every advert several times): ignore
    /// silently, it is not a problem.
    case duplicate(BTHomeDuplicate)
    /// Refused: log once per `rejection.cause`.
    case rejected(BTHomeRejection)
}

public enum BTHomeDuplicate: Hashable, Sendable, CustomStringConvertible {
    /// The packet id is not 1…63 ahead of the last one and the device spoke less than 4 s ago.
    case packetID(UInt8, last: UInt8)
    /// Byte-for-byte an encrypted advert already seen under the current counter: a retransmission (or
    /// a replay of it), never acted on twice, however late it comes.
    case retransmission(counter: UInt32)

    public var description: String {
        switch self {
        case .packetID(let id, let last): "duplicate BTHome packet id \(id) (last \(last))"
        case .retransmission(let counter): "retransmitted BTHome advert (counter \(counter))"
        }
    }
}

/// The memory a receiver keeps per BTHome device, as a value: feed it every advert of that address
/// with the time it was received, and it says which ones are new.
///
/// Rules (see docs/bthome.md):
/// - **Packet id (0x00)**: while the device has spoken within the last 4 s, a packet id is new only
///   when it is 1…63 ahead of the last accepted one (mod 256); anything else is a duplicate or an
///   older packet. After more than 4 s of silence any packet id is accepted. "Spoken" means any
///   advert that passed parsing and authentication, duplicates included, so a device repeating
///   one packet never gets it accepted twice.
/// - **Encryption counter**: once an authentic encrypted advert was accepted, a lower counter is a
///   replay and is refused (`resetEncryptionCounter()` after the user re-adds a button whose counter
///   restarted); the same counter with the same bytes is a retransmission; the same counter with
///   other bytes is allowed (Shelly and pvvx firmware send several adverts under one counter).
/// - **Bindkey**: with a decryptor, plaintext adverts are refused (`.downgrade`).
/// - **Beacons**: `3A 00` is `.none`, never an event, so a periodic beacon cannot re-fire a press.
/// - **Time** comes in as a value; it may come from any clock, but should not jump (a clock that
///   steps backwards keeps the 4-s window open until the device speaks again).
public struct BTHomeDeviceState: Sendable {
    /// How long a device must be silent before any packet id is accepted again.
    public static let silence: TimeInterval = 4
    /// How far ahead (mod 256) a new packet id may be while the device keeps talking.
    public static let packetWindow: ClosedRange<Int> = 1...63

    public let address: BTHomeAddress
    /// The device's bindkey; set it when the user adds one (the counter memory is kept).
    public var decryptor: (any BTHomeDecryptor)?

    /// The packet id of the last accepted advert that carried one.
    public private(set) var lastPacketID: UInt8?
    /// When the device last spoke (an accepted or duplicate advert).
    public private(set) var lastHeard: Date?
    /// The encryption counter of the last accepted encrypted advert.
    public private(set) var lastCounter: UInt32?
    /// The distinct adverts seen under `lastCounter` (a few; a device sends one or two).
    private var seenAtLastCounter: [[UInt8]] = []
    private static let seenLimit = 16

    public init(address: BTHomeAddress, decryptor: (any BTHomeDecryptor)? = nil) {
        self.address = address
        self.decryptor = decryptor
    }

    /// Forgets the last encryption counter, so the next authentic advert is accepted whatever its
    /// counter (for a button whose counter restarted, after the user re-adds it).
    public mutating func resetEncryptionCounter() {
        lastCounter = nil
        seenAtLastCounter = []
    }

    /// Decides one advert. `serviceData` is the value under `BTHome.serviceUUID`.
    public mutating func receive(_ serviceData: some Collection<UInt8>, at time: Date) -> BTHomeReception {
        let data = Array(serviceData)
        let advert: BTHomeAdvert
        switch BTHome.parse(data, address: address, decryptor: decryptor) {
        case .failure(let rejection): return .rejected(rejection)
        case .success(let parsed): advert = parsed
        }

        if let counter = advert.encryptionCounter, let last = lastCounter {
            if counter < last { return .rejected(.replayedCounter(counter, last: last)) }
            if counter == last, seenAtLastCounter.contains(data) {
                lastHeard = time
                return .duplicate(.retransmission(counter: counter))
            }
        }

        if let id = advert.packetID, let last = lastPacketID, let heard = lastHeard,
           time.timeIntervalSince(heard) <= Self.silence {
            let ahead = (Int(id) - Int(last) + 256) % 256
            if !Self.packetWindow.contains(ahead) {
                lastHeard = time
                noteCounter(advert, data)
                return .duplicate(.packetID(id, last: last))
            }
        }

        lastHeard = time
        if let id = advert.packetID { lastPacketID = id }
        noteCounter(advert, data)
        return .accepted(advert)
    }

    /// Counters only move forward, and only on authentic adverts.
    private mutating func noteCounter(_ advert: BTHomeAdvert, _ data: [UInt8]) {
        guard let counter = advert.encryptionCounter else { return }
        if let last = lastCounter, counter < last { return }
        if counter != lastCounter {
            lastCounter = counter
            seenAtLastCounter = [data]
        } else if !seenAtLastCounter.contains(data) {
            seenAtLastCounter.append(data)
            if seenAtLastCounter.count > Self.seenLimit { seenAtLastCounter.removeFirst() }
        }
    }
}
