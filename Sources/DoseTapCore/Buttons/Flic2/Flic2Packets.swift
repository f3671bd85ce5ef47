/// The Flic 2 packets DoseTap sends and reads (facts from the "Flic 2 Protocol Specification"; every field
/// little-endian). Decoders check lengths and never trap: a short packet is `nil`, and the session ends.
public enum Flic2Opcode {
    /// To the button.
    public enum ToButton: UInt8 {
        case fullVerifyRequest1 = 0
        case fullVerifyRequest2WithoutAppToken = 2
        case fullVerifyAbortInd = 3
        case quickVerifyRequest = 5
        case forceBtDisconnectInd = 6
        case pingResponse = 14
        case ackButtonEventsInd = 16
        case getBatteryLevelRequest = 20
        case initButtonEventsLightRequest = 23
    }

    /// From the button.
    public enum FromButton: UInt8 {
        case fullVerifyResponse1 = 0
        case fullVerifyResponse2 = 1
        case noLogicalConnectionSlotsInd = 2
        case fullVerifyFailResponse = 3
        case quickVerifyNegativeResponse = 6
        case quickVerifyResponse = 8
        case disconnectedVerifiedLinkInd = 9
        case initButtonEventsResponseWithBootID = 10
        case initButtonEventsResponseWithoutBootID = 11
        case buttonEventNotification = 12
        case pingRequest = 15
        case getBatteryLevelResponse = 20
    }
}

/// Reads little-endian fields from a packet; any read past the end makes the whole decode nil.
struct Flic2Reader {
    let bytes: [UInt8]
    var offset: Int

    init(_ bytes: [UInt8], from offset: Int = 1) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ n: Int) -> [UInt8]? {
        guard n >= 0, remaining >= n else { return nil }
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    mutating func uint(_ n: Int) -> UInt64? {
        take(n).map { $0.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
    }

    mutating func u8() -> UInt8? { take(1)?[0] }
    mutating func u16() -> UInt16? { uint(2).map { UInt16($0) } }
    mutating func u32() -> UInt32? { uint(4).map { UInt32($0) } }
}

/// Builds a packet field by field (one statement each: long `+` chains are slow to type-check).
struct Flic2Writer {
    private(set) var bytes: [UInt8]

    init(_ opcode: UInt8) { bytes = [opcode] }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func uint(_ value: UInt64, _ count: Int) { bytes += flic2LittleEndian(value, count) }
    mutating func append(_ more: [UInt8]) { bytes += more }
    /// `more`, cut or padded with zeros to `count` bytes.
    mutating func fixed(_ more: [UInt8], _ count: Int) {
        bytes += more.prefix(count)
        if more.count < count { bytes += [UInt8](repeating: 0, count: count - more.count) }
    }
}

func flic2LittleEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

public enum Flic2Packets {
    public static let signatureLength = 64
    public static let macLength = 5

    // MARK: To the button

    public static func fullVerifyRequest1(tmpID: UInt32) -> [UInt8] {
        [Flic2Opcode.ToButton.fullVerifyRequest1.rawValue] + flic2LittleEndian(UInt64(tmpID), 4)
    }

    /// Flags: signature variant 0, encryption variant 0, no app token (the byte the key schedule also takes).
    public static let fullVerifyRequest2Flags: UInt8 = 0

    public static func fullVerifyRequest2(publicKey: [UInt8], clientRandom: [UInt8], verifier: [UInt8]) -> [UInt8] {
        var w = Flic2Writer(Flic2Opcode.ToButton.fullVerifyRequest2WithoutAppToken.rawValue)
        w.append(publicKey)
        w.append(clientRandom)
        w.u8(fullVerifyRequest2Flags)
        w.append(verifier)
        return w.bytes
    }

    public static let quickVerifyRequestFlags: UInt8 = 0

    public static func quickVerifyRequest(clientRandom: [UInt8], tmpID: UInt32, pairingID: UInt32) -> [UInt8] {
        var w = Flic2Writer(Flic2Opcode.ToButton.quickVerifyRequest.rawValue)
        w.append(clientRandom)
        w.u8(quickVerifyRequestFlags)
        w.uint(UInt64(tmpID), 4)
        w.uint(UInt64(pairingID), 4)
        return w.bytes
    }

    /// Asks for button events after `eventCount` of boot `bootID`; queued ones (at most 31, of any age) come first.
    /// The auto-disconnect time 511 means never.
    public static func initButtonEvents(eventCount: UInt32, bootID: UInt32, maxQueuedPackets: UInt8 = 31,
                                        maxQueuedAge: UInt32 = 0xFFFFF) -> [UInt8] {
        let queued: UInt64 = UInt64(maxQueuedPackets & 0x1F) << 9
        let age: UInt64 = UInt64(maxQueuedAge & 0xFFFFF) << 14
        var w = Flic2Writer(Flic2Opcode.ToButton.initButtonEventsLightRequest.rawValue)
        w.uint(UInt64(eventCount), 4)
        w.uint(UInt64(bootID), 4)
        w.uint(511 | queued | age, 5)
        return w.bytes
    }

    public static func ackButtonEvents(eventCount: UInt32) -> [UInt8] {
        [Flic2Opcode.ToButton.ackButtonEventsInd.rawValue] + flic2LittleEndian(UInt64(eventCount), 4)
    }

    public static func pingResponse(_ ping: [UInt8]) -> [UInt8] {
        [Flic2Opcode.ToButton.pingResponse.rawValue] + ping
    }

    public static let getBatteryLevel: [UInt8] = [Flic2Opcode.ToButton.getBatteryLevelRequest.rawValue]

    // MARK: From the button

    public struct FullVerifyResponse1: Sendable, Equatable {
        public var tmpID: UInt32
        public var signature: [UInt8]
        /// Little-endian, as on the air (01:02:03:04:05:06 is 06 05 04 03 02 01).
        public var address: [UInt8]
        public var addressType: UInt8
        public var publicKey: [UInt8]
        public var buttonRandom: [UInt8]
        public var isInPublicMode: Bool

        /// What the factory signed: address, address type and the button's X25519 key (39 bytes).
        public var signedMessage: [UInt8] { address + [addressType] + publicKey }

        public init(tmpID: UInt32, signature: [UInt8], address: [UInt8], addressType: UInt8, publicKey: [UInt8],
                    buttonRandom: [UInt8], isInPublicMode: Bool) {
            self.tmpID = tmpID
            self.signature = signature
            self.address = address
            self.addressType = addressType
            self.publicKey = publicKey
            self.buttonRandom = buttonRandom
            self.isInPublicMode = isInPublicMode
        }

        public static let length = 1 + 4 + 64 + 6 + 1 + 32 + 8 + 1

        public init?(_ packet: [UInt8]) {
            var r = Flic2Reader(packet)
            guard packet.first == Flic2Opcode.FromButton.fullVerifyResponse1.rawValue,
                  let tmpID = r.u32(), let signature = r.take(64), let address = r.take(6), let addressType = r.u8(),
                  let publicKey = r.take(32), let buttonRandom = r.take(8), let flags = r.u8() else { return nil }
            self.init(tmpID: tmpID, signature: signature, address: address, addressType: addressType, publicKey: publicKey,
                      buttonRandom: buttonRandom, isInPublicMode: flags & 0x02 != 0)
        }

        public var encoded: [UInt8] {
            var w = Flic2Writer(Flic2Opcode.FromButton.fullVerifyResponse1.rawValue)
            w.uint(UInt64(tmpID), 4)
            w.append(signature)
            w.append(address)
            w.u8(addressType)
            w.append(publicKey)
            w.append(buttonRandom)
            w.u8(isInPublicMode ? 0x02 : 0)
            return w.bytes
        }
    }

    /// The button's facts after a full verify (its MAC already checked and removed).
    public struct FullVerifyResponse2: Sendable, Equatable {
        public var buttonUUID: [UInt8]
        public var name: [UInt8]
        public var firmwareVersion: UInt32
        public var batteryLevel: UInt16
        public var serialNumber: [UInt8]

        public init(buttonUUID: [UInt8], name: [UInt8], firmwareVersion: UInt32, batteryLevel: UInt16, serialNumber: [UInt8]) {
            self.buttonUUID = buttonUUID
            self.name = name
            self.firmwareVersion = firmwareVersion
            self.batteryLevel = batteryLevel
            self.serialNumber = serialNumber
        }

        public static let length = 1 + 1 + 16 + 1 + 23 + 4 + 2 + 11

        public init?(_ packet: [UInt8]) {
            var r = Flic2Reader(packet)
            guard packet.first == Flic2Opcode.FromButton.fullVerifyResponse2.rawValue, r.u8() != nil,
                  let uuid = r.take(16), let nameLength = r.u8(), let nameField = r.take(23), let firmware = r.u32(),
                  let battery = r.u16(), let serial = r.take(11) else { return nil }
            self.init(buttonUUID: uuid, name: Array(nameField.prefix(Int(min(nameLength, 23)))), firmwareVersion: firmware,
                      batteryLevel: battery, serialNumber: Array(serial.prefix { $0 != 0 }))
        }

        public var encoded: [UInt8] {
            var w = Flic2Writer(Flic2Opcode.FromButton.fullVerifyResponse2.rawValue)
            w.u8(0x01)
            w.fixed(buttonUUID, 16)
            w.u8(UInt8(min(name.count, 23)))
            w.fixed(name, 23)
            w.uint(UInt64(firmwareVersion), 4)
            w.uint(UInt64(batteryLevel), 2)
            w.fixed(serialNumber, 11)
            return w.bytes
        }
    }

    public struct QuickVerifyResponse: Sendable, Equatable {
        public var buttonRandom: [UInt8]
        public var tmpID: UInt32

        public init(buttonRandom: [UInt8], tmpID: UInt32) {
            self.buttonRandom = buttonRandom
            self.tmpID = tmpID
        }

        public init?(_ packet: [UInt8]) {
            var r = Flic2Reader(packet)
            guard packet.first == Flic2Opcode.FromButton.quickVerifyResponse.rawValue, let random = r.take(8),
                  let tmpID = r.u32(), r.u8() != nil else { return nil }
            self.init(buttonRandom: random, tmpID: tmpID)
        }

        public var encoded: [UInt8] {
            var w = Flic2Writer(Flic2Opcode.FromButton.quickVerifyResponse.rawValue)
            w.append(buttonRandom)
            w.uint(UInt64(tmpID), 4)
            w.u8(0)
            return w.bytes
        }
    }

    public struct InitButtonEventsResponse: Sendable, Equatable {
        public var hasQueuedEvents: Bool
        /// The button's clock when it answered, in 1/32768 s.
        public var timestamp: UInt64
        public var eventCount: UInt32
        /// Set when the button booted since the boot id it was given.
        public var newBootID: UInt32?

        public init(hasQueuedEvents: Bool, timestamp: UInt64, eventCount: UInt32, newBootID: UInt32?) {
            self.hasQueuedEvents = hasQueuedEvents
            self.timestamp = timestamp
            self.eventCount = eventCount
            self.newBootID = newBootID
        }

        public init?(_ packet: [UInt8]) {
            var r = Flic2Reader(packet)
            let withBoot = packet.first == Flic2Opcode.FromButton.initButtonEventsResponseWithBootID.rawValue
            guard withBoot || packet.first == Flic2Opcode.FromButton.initButtonEventsResponseWithoutBootID.rawValue,
                  let bits = r.uint(6), let eventCount = r.u32() else { return nil }
            var boot: UInt32?
            if withBoot {
                guard let id = r.u32() else { return nil }
                boot = id
            }
            self.init(hasQueuedEvents: bits & 1 != 0, timestamp: (bits >> 1) & 0x7FFF_FFFF_FFFF, eventCount: eventCount,
                      newBootID: boot)
        }

        public var encoded: [UInt8] {
            let opcode = newBootID == nil ? Flic2Opcode.FromButton.initButtonEventsResponseWithoutBootID
                : Flic2Opcode.FromButton.initButtonEventsResponseWithBootID
            var w = Flic2Writer(opcode.rawValue)
            let stamp: UInt64 = (timestamp & 0x7FFF_FFFF_FFFF) << 1
            w.uint(stamp | (hasQueuedEvents ? 1 : 0), 6)
            w.uint(UInt64(eventCount), 4)
            if let newBootID { w.uint(UInt64(newBootID), 4) }
            return w.bytes
        }
    }

    /// One event of a button-event notification (7 bytes: a 48-bit timestamp, then the encoded event and flags).
    public struct EventItem: Sendable, Equatable {
        /// The button's clock at the event, in 1/32768 s.
        public var timestamp: UInt64
        /// 0 up, 1 down, 2 single-click timeout, 3 hold; with bit 3 set an up that says what it was (bit 1 a click,
        /// bit 0 the second of a double, bit 2 after a hold); 7 a hold during the second press of a double.
        public var encoded: UInt8
        public var wasQueued: Bool
        public var wasQueuedLast: Bool

        public init(timestamp: UInt64, encoded: UInt8, wasQueued: Bool = false, wasQueuedLast: Bool = false) {
            self.timestamp = timestamp
            self.encoded = encoded & 0x0F
            self.wasQueued = wasQueued
            self.wasQueuedLast = wasQueuedLast
        }

        /// The gesture the button classified, if this event completes one (single, double, hold).
        public var gesture: ButtonGesture? {
            switch encoded {
            case 2, 10: .single
            case 11, 15: .double
            case 3: .hold
            default: nil
            }
        }

        /// The low two bits of the event counter this event moves it to (1 down, 2 hold, 3 up, 0 click timeout).
        var kind: UInt8 { encoded >> 3 != 0 ? 0 : encoded & 3 }
    }

    public struct ButtonEventNotification: Sendable, Equatable {
        /// The event counter after the last item.
        public var pressCounter: UInt32
        public var items: [EventItem]

        public init(pressCounter: UInt32, items: [EventItem]) {
            self.pressCounter = pressCounter
            self.items = items
        }

        public init?(_ packet: [UInt8]) {
            var r = Flic2Reader(packet)
            guard packet.first == Flic2Opcode.FromButton.buttonEventNotification.rawValue, let counter = r.u32(),
                  r.remaining > 0, r.remaining % 7 == 0 else { return nil }
            var items: [EventItem] = []
            while r.remaining > 0 {
                guard let time = r.uint(6), let flags = r.u8() else { return nil }
                items.append(EventItem(timestamp: time, encoded: flags & 0x0F, wasQueued: flags & 0x10 != 0,
                                       wasQueuedLast: flags & 0x20 != 0))
            }
            self.init(pressCounter: counter, items: items)
        }

        public var encoded: [UInt8] {
            var w = Flic2Writer(Flic2Opcode.FromButton.buttonEventNotification.rawValue)
            w.uint(UInt64(pressCounter), 4)
            for item in items {
                w.uint(item.timestamp & 0xFFFF_FFFF_FFFF, 6)
                let queued: UInt8 = item.wasQueued ? 0x10 : 0
                let last: UInt8 = item.wasQueuedLast ? 0x20 : 0
                w.u8(item.encoded | queued | last)
            }
            return w.bytes
        }

        /// Each item's event count, worked back from the counter after the last: each press moves the counter
        /// through down (…1), hold (…2), up (…3) and click timeout (…0), skipping the steps that did not happen.
        public var eventCounts: [UInt32] {
            guard !items.isEmpty else { return [] }
            var counts = [UInt32](repeating: 0, count: items.count)
            var ec = pressCounter
            counts[items.count - 1] = ec
            for i in stride(from: items.count - 2, through: 0, by: -1) {
                let item = items[i]
                switch ec % 4 {
                case 0, 2: ec &-= 1
                case 1: ec &-= item.kind == 2 ? 1 : 2
                default: ec &-= item.kind == 3 ? 1 : 2
                }
                counts[i] = ec
            }
            return counts
        }
    }

    /// The battery: a 10-bit reading of a 3.6 V reference.
    public static func batteryMillivolts(_ raw: UInt16) -> Int { (Int(raw) * 3600 + 512) / 1024 }

    public static func batteryLevel(_ packet: [UInt8]) -> UInt16? {
        var r = Flic2Reader(packet)
        guard packet.first == Flic2Opcode.FromButton.getBatteryLevelResponse.rawValue else { return nil }
        return r.u16()
    }
}
