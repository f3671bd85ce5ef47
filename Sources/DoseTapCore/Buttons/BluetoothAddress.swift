/// A Bluetooth device address, the one parser for every address DoseTap reads: from the command
/// line, the database, BlueZ, sysfs and udev.
///
/// Accepted text: six pairs of ASCII hex digits separated by colons or by dashes
/// (`AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`), nothing else. The canonical form (`description`) is
/// upper case with colons, as BlueZ writes it. Refused, because no button can have them:
/// - the all-zero address (what sysfs and drivers report when there is none),
/// - the broadcast address `FF:FF:FF:FF:FF:FF`,
/// - multicast (group) addresses: the lowest bit of the first octet set. A BLE *random static*
///   address sets the two highest bits of that octet and randomises the rest, so for it that bit is
///   not a group bit: cheap iTags and camera shutters (`FF:FF:10:0E:8A:2C`) have such addresses and
///   are accepted.
public struct BluetoothAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The six bytes in display order (most significant first).
    public let bytes: [UInt8]

    /// Why a text or six bytes are not a usable address; `description` is one line.
    public enum Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        case syntax
        case allZero
        case broadcast
        case multicast

        public var description: String {
            switch self {
            case .syntax: "expected six pairs of hex digits like AA:BB:CC:DD:EE:FF"
            case .allZero: "the all-zero address is not a device"
            case .broadcast: "FF:FF:FF:FF:FF:FF is the broadcast address, not a device"
            case .multicast: "a multicast (group) address is not a device: the lowest bit of its first byte is set"
            }
        }
    }

    /// Parses and checks an address; throws the reason it is not one.
    public init(parsing text: some StringProtocol) throws(Invalid) {
        guard let bytes = Self.sixBytes(text) else { throw .syntax }
        try self.init(checking: bytes)
    }

    /// The syntax alone: six ASCII hex pairs, all colons or all dashes.
    private static func sixBytes(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 17 else { return nil }
        let separator = utf8[2]
        guard separator == UInt8(ascii: ":") || separator == UInt8(ascii: "-") else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(6)
        for index in 0..<6 {
            let start = index * 3
            if index > 0 { guard utf8[start - 1] == separator else { return nil } }
            guard let high = HexBytes.value(ofASCIIHexDigit: utf8[start]),
                  let low = HexBytes.value(ofASCIIHexDigit: utf8[start + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The canonical spelling of a well-formed address even when it is refused (all-zero, broadcast,
    /// multicast): only to find a row an older version stored, so it can be removed. Never to accept one.
    public static func canonicalSpelling(_ text: some StringProtocol) -> String? {
        sixBytes(text).map { $0.map { HexBytes.string([$0], uppercase: true) }.joined(separator: ":") }
    }

    /// Parses and checks an address; nil when it is not one.
    public init?(_ text: some StringProtocol) {
        guard let address = try? BluetoothAddress(parsing: text) else { return nil }
        self = address
    }

    /// Six bytes in display order, checked like a parsed address.
    public init(checking bytes: some Collection<UInt8>) throws(Invalid) {
        let bytes = Array(bytes)
        guard bytes.count == 6 else { throw .syntax }
        if bytes.allSatisfy({ $0 == 0 }) { throw .allZero }
        if bytes.allSatisfy({ $0 == 0xFF }) { throw .broadcast }
        if bytes[0] & 0x01 != 0, bytes[0] & 0xC0 != 0xC0 { throw .multicast }
        self.bytes = bytes
    }

    /// Canonical text: `A4:C1:38:8D:18:B2`.
    public var description: String { bytes.map { HexBytes.string([$0], uppercase: true) }.joined(separator: ":") }

    /// `text` in canonical form, or nil when it is not an address.
    public static func canonical(_ text: some StringProtocol) -> String? {
        BluetoothAddress(text)?.description
    }

    public static func < (a: BluetoothAddress, b: BluetoothAddress) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
