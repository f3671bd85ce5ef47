import Foundation

/// The six MAC bytes a BTHome nonce uses, in the order BlueZ writes an address ("A4:C1:38:8D:18:B2"),
/// most significant first. This is also the order the BTHome nonce uses (bthome.io/encryption:
/// MAC `5448E68F80A5` for the device `54:48:E6:8F:80:A5`), the reverse of the over-the-air order.
/// Any six bytes (an address embedded in an advert is data, decrypted as it is); text goes through
/// `BluetoothAddress`, the one address parser.
public struct BTHomeAddress: Hashable, Sendable, CustomStringConvertible {
    /// The six bytes, display order.
    public let bytes: [UInt8]

    /// A checked device address.
    public init(_ address: BluetoothAddress) {
        self.bytes = address.bytes
    }

    /// Parses text with `BluetoothAddress` (colons or dashes, any case, a device's address); nil for
    /// anything else.
    public init?(_ text: String) {
        guard let address = BluetoothAddress(text) else { return nil }
        self.init(address)
    }

    /// Six bytes in display order; nil unless there are exactly six.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 6 else { return nil }
        self.bytes = Array(bytes)
    }

    public var description: String { bytes.map { hex2($0, uppercase: true) }.joined(separator: ":") }
}

/// The BTHome device-information byte, the first byte of the service data.
public struct BTHomeDeviceInfo: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0: the objects are AES-CCM encrypted (counter and MIC follow them).
    public var isEncrypted: Bool { rawValue & 0x01 != 0 }
    /// Bit 1: reserved in the v2 spec; bthome-ble reads it as "the device's MAC follows, reversed"
    /// (6 bytes before the objects). Honoured the same way here.
    public var hasEmbeddedAddress: Bool { rawValue & 0x02 != 0 }
    /// Bit 2: the device advertises on triggers (a button press), not at a regular interval.
    public var isTriggerBased: Bool { rawValue & 0x04 != 0 }
    /// Bits 5–7: the BTHome version; only 2 is accepted.
    public var version: UInt8 { rawValue >> 5 }

    public var description: String { "0x" + hex2(rawValue, uppercase: true) }
}

/// Object 0x3A, one per button. Codes of the BTHome v2 spec, names as bthome-ble fires them.
public enum BTHomeButtonEvent: Hashable, Sendable, CustomStringConvertible {
    /// `00`: nothing happened (a periodic beacon); never an action.
    case none
    case press
    case doublePress
    case triplePress
    case longPress
    case longDoublePress
    case longTriplePress
    /// `80`: the button is being held (repeats while held).
    case holdPress
    /// `81`: released after a hold (bthome-ble ≥ 3.21 fires it).
    case holdRelease
    /// Any other code: kept, but never an action (bthome-ble fires nothing for it).
    case unknown(UInt8)

    public init(code: UInt8) {
        switch code {
        case 0x00: self = .none
        case 0x01: self = .press
        case 0x02: self = .doublePress
        case 0x03: self = .triplePress
        case 0x04: self = .longPress
        case 0x05: self = .longDoublePress
        case 0x06: self = .longTriplePress
        case 0x80: self = .holdPress
        case 0x81: self = .holdRelease
        default: self = .unknown(code)
        }
    }

    public var code: UInt8 {
        switch self {
        case .none: 0x00
        case .press: 0x01
        case .doublePress: 0x02
        case .triplePress: 0x03
        case .longPress: 0x04
        case .longDoublePress: 0x05
        case .longTriplePress: 0x06
        case .holdPress: 0x80
        case .holdRelease: 0x81
        case .unknown(let code): code
        }
    }

    /// The event type name bthome-ble (and Home Assistant) use: "press", "double_press", ...
    public var name: String {
        switch self {
        case .none: "none"
        case .press: "press"
        case .doublePress: "double_press"
        case .triplePress: "triple_press"
        case .longPress: "long_press"
        case .longDoublePress: "long_double_press"
        case .longTriplePress: "long_triple_press"
        case .holdPress: "hold_press"
        case .holdRelease: "hold_release"
        case .unknown(let code): "unknown_0x" + hex2(code, uppercase: true)
        }
    }

    /// True when something happened on the button: every known code except `00`.
    public var isEvent: Bool {
        switch self {
        case .none, .unknown: false
        default: true
        }
    }

    public var description: String { name }
}

/// The decoded value of one object.
public enum BTHomeValue: Hashable, Sendable {
    /// A measurement, already scaled by the spec's factor (25.06 for `02 CA 09`).
    case number(Double)
    /// A binary sensor (any non-zero byte is true).
    case flag(Bool)
    /// Text (0x53) or a firmware version (0xF1, 0xF2) as "4.2.1.0".
    case text(String)
    /// Raw bytes (0x54), a command (0x3B: opcode and arguments) or a dimmer event (0x3C: event, steps).
    case bytes([UInt8])
    case button(BTHomeButtonEvent)
    /// Object 0x50, seconds since 1970 (UTC).
    case timestamp(Date)
}

/// One decoded object of an advert.
public struct BTHomeObject: Hashable, Sendable {
    /// The object id (0x02 temperature, 0x3A button, ...).
    public let id: UInt8
    /// bthome-ble's name for it ("temperature", "battery", "button", "opening", ...).
    public let name: String
    public let unit: String?
    public let value: BTHomeValue
    /// Where the object starts in the (decrypted) object bytes.
    public let offset: Int

    public init(id: UInt8, name: String, unit: String?, value: BTHomeValue, offset: Int) {
        self.id = id
        self.name = name
        self.unit = unit
        self.value = value
        self.offset = offset
    }
}

/// Why object parsing ended before the last byte. The objects before that point are kept (as
/// bthome-ble does): a receiver cannot skip an object whose length it does not know.
public enum BTHomeParseStop: Hashable, Sendable, CustomStringConvertible {
    case unknownObjectID(UInt8, offset: Int)
    case truncatedObject(UInt8, offset: Int)

    public var description: String {
        switch self {
        case .unknownObjectID(let id, let offset): "unknown object id 0x\(hex2(id, uppercase: true)) at byte \(offset)"
        case .truncatedObject(let id, let offset): "object 0x\(hex2(id, uppercase: true)) at byte \(offset) is cut short"
        }
    }
}

/// One parsed (and, if needed, decrypted and authenticated) BTHome v2 advert.
public struct BTHomeAdvert: Hashable, Sendable {
    public let deviceInfo: BTHomeDeviceInfo
    /// Every decoded object, in advert order.
    public let objects: [BTHomeObject]
    /// The AES-CCM counter of an encrypted advert (little endian on the air).
    public let encryptionCounter: UInt32?
    /// The MAC carried in the advert when device-info bit 1 is set.
    public let embeddedAddress: BTHomeAddress?
    /// Set when parsing stopped early; the objects before it are in `objects`.
    public let stop: BTHomeParseStop?
    /// The device did not send its object ids in ascending order (parsed anyway, as bthome-ble does).
    public let outOfOrder: Bool

    public init(deviceInfo: BTHomeDeviceInfo, objects: [BTHomeObject], encryptionCounter: UInt32?,
                embeddedAddress: BTHomeAddress?, stop: BTHomeParseStop?, outOfOrder: Bool) {
        self.deviceInfo = deviceInfo
        self.objects = objects
        self.encryptionCounter = encryptionCounter
        self.embeddedAddress = embeddedAddress
        self.stop = stop
        self.outOfOrder = outOfOrder
    }

    /// Object 0x00 (the first one).
    public var packetID: UInt8? {
        for object in objects where object.id == 0x00 { if case .number(let n) = object.value { return UInt8(n) } }
        return nil
    }

    /// Object 0x01, battery in percent (the first one).
    public var battery: UInt8? {
        for object in objects where object.id == 0x01 { if case .number(let n) = object.value { return UInt8(n) } }
        return nil
    }

    /// Every 0x3A object by button index: 0 for the first in the advert, 1 for the second, ...
    /// (bthome-ble names them "button" when there is one, "button_1", "button_2", ... otherwise).
    /// Includes `.none` (nothing happened on that button).
    public var buttons: [Int: BTHomeButtonEvent] {
        var result: [Int: BTHomeButtonEvent] = [:]
        for object in objects where object.id == 0x3A {
            if case .button(let event) = object.value { result[result.count] = event }
        }
        return result
    }

    /// The buttons on which something happened: what a receiver acts on.
    public var events: [Int: BTHomeButtonEvent] { buttons.filter { $0.value.isEvent } }
}

/// Why an advert was refused. `description` is the one-line reason for the log; `cause` is a stable
/// key for "log once per cause, not once per packet".
public enum BTHomeRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// Too short: no service data, an encrypted advert without room for objects, counter and MIC, or
    /// the first object cut short.
    case truncated(String)
    /// Device-info bits 5–7 are not 2.
    case badVersion(UInt8)
    /// The first object has an id this parser does not know, so nothing could be read.
    case unknownObjectID(UInt8, offset: Int)
    /// Nothing to read: no objects after the header, or none that decode.
    case noObjects
    /// The advert is encrypted and no bindkey is set for this device.
    case encryptedWithoutKey
    /// The MIC does not match: a wrong bindkey, a corrupted or a forged advert.
    case micMismatch
    /// An authentic advert whose encryption counter is below the last accepted one: a replay (or a
    /// device whose counter restarted; re-adding the button accepts it again).
    case replayedCounter(UInt32, last: UInt32)
    /// A plaintext advert from a device that has a bindkey: refused so nobody can downgrade it.
    case downgrade

    public var cause: String {
        switch self {
        case .truncated: "truncated"
        case .badVersion: "bad_version"
        case .unknownObjectID: "unknown_object_id"
        case .noObjects: "no_objects"
        case .encryptedWithoutKey: "encrypted_without_key"
        case .micMismatch: "mic_mismatch"
        case .replayedCounter: "replayed_counter"
        case .downgrade: "downgrade"
        }
    }

    public var description: String {
        switch self {
        case .truncated(let detail): "truncated BTHome advert: \(detail)"
        case .badVersion(let version): "not BTHome v2: the device-info byte says version \(version)"
        case .unknownObjectID(let id, let offset): "unknown BTHome object id 0x\(hex2(id, uppercase: true)) at byte \(offset); nothing readable before it"
        case .noObjects: "BTHome advert without readable objects"
        case .encryptedWithoutKey: "encrypted BTHome advert but no bindkey is set for this button"
        case .micMismatch: "BTHome MIC mismatch: wrong bindkey, or a corrupted or forged advert"
        case .replayedCounter(let counter, let last): "replayed BTHome advert: encryption counter \(counter) is below the last accepted \(last)"
        case .downgrade: "plaintext BTHome advert from a button that has a bindkey (downgrade refused)"
        }
    }
}

func hex2(_ byte: UInt8, uppercase: Bool = false) -> String {
    let digits: [Character] = uppercase ? Array("0123456789ABCDEF") : Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
