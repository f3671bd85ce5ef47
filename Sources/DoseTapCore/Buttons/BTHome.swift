import Foundation

/// Opens BTHome's AES-128-CCM (4-byte MIC, no associated data). Core has no cryptography of its
/// own; `DoseTapCrypto.BTHomeBindkey` implements this from a 16-byte bindkey.
public protocol BTHomeDecryptor: Sendable {
    /// The plaintext, or nil when the MIC does not match.
    func open(ciphertext: [UInt8], mic: [UInt8], nonce: [UInt8]) -> [UInt8]?
}

/// BTHome v2 advertisements (https://bthome.io): service data under UUID 0xFCD2 whose first byte is
/// the device information, then objects (id, data) in ascending id order; an encrypted advert ends
/// with a 4-byte counter and a 4-byte MIC.
///
/// `parse` is stateless: the rules that need memory (packet-id dedup, counters) live in
/// `BTHomeDeviceState`, which is what a receiver should call.
public enum BTHome {
    /// The 128-bit form BlueZ uses as the key of `Device1.ServiceData`.
    public static let serviceUUID = "0000fcd2-0000-1000-8000-00805f9b34fb"
    public static let uuid16: UInt16 = 0xFCD2
    /// Encrypted adverts: counter (4) and MIC (4) after the ciphertext.
    public static let counterLength = 4
    public static let micLength = 4

    /// The AES-CCM nonce: MAC (6, display order) ‖ UUID16 little endian (D2 FC) ‖ device-info byte ‖
    /// counter (4, as on the air). 13 bytes.
    public static func nonce(address: BTHomeAddress, deviceInfo: UInt8, counter: some Collection<UInt8>) -> [UInt8] {
        precondition(counter.count == counterLength, "the BTHome counter is 4 bytes")
        return address.bytes + [UInt8(uuid16 & 0xFF), UInt8(uuid16 >> 8), deviceInfo] + Array(counter)
    }

    /// Parses one advert's service data (the bytes under `serviceUUID`, device-info byte first).
    ///
    /// - Parameters:
    ///   - address: the advertiser's address as BlueZ reports it; it is the nonce's MAC unless the
    ///     advert carries its own (device-info bit 1).
    ///   - decryptor: the device's bindkey, if the user gave one. With a key, plaintext adverts are
    ///     refused (`.downgrade`); without one, encrypted adverts are (`.encryptedWithoutKey`).
    ///
    /// Checks run in bthome-ble's order, except that an encrypted advert's MIC is verified before
    /// anyone looks at its counter (that is `BTHomeDeviceState`'s job, after this).
    public static func parse(_ serviceData: some Collection<UInt8>, address: BTHomeAddress,
                             decryptor: (any BTHomeDecryptor)?) -> Result<BTHomeAdvert, BTHomeRejection> {
        let data = Array(serviceData)
        guard let first = data.first else { return .failure(.truncated("no service data")) }
        let info = BTHomeDeviceInfo(rawValue: first)
        if decryptor != nil && !info.isEncrypted { return .failure(.downgrade) }
        guard info.version == 2 else { return .failure(.badVersion(info.version)) }

        let payloadStart = info.hasEmbeddedAddress ? 7 : 1
        let payload = data.count > payloadStart ? Array(data[payloadStart...]) : []
        let embedded = info.hasEmbeddedAddress && data.count >= 7
            ? BTHomeAddress(bytes: data[1..<7].reversed()) : nil

        var objectBytes = payload
        var counter: UInt32?
        if info.isEncrypted {
            guard let decryptor else { return .failure(.encryptedWithoutKey) }
            // Room for at least one object (id + 1 byte), the counter and the MIC.
            guard payload.count >= 2 + counterLength + micLength else {
                return .failure(.truncated("an encrypted advert needs at least 2 bytes of objects, a 4-byte counter and a 4-byte MIC; it has \(payload.count) bytes after the header"))
            }
            let micStart = payload.count - micLength
            let counterStart = micStart - counterLength
            let counterBytes = Array(payload[counterStart..<micStart])
            let nonce = nonce(address: embedded ?? address, deviceInfo: first, counter: counterBytes)
            guard let plaintext = decryptor.open(ciphertext: Array(payload[..<counterStart]),
                                                 mic: Array(payload[micStart...]), nonce: nonce) else {
                return .failure(.micMismatch)
            }
            objectBytes = plaintext
            counter = counterBytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }

        let parsed = parseObjects(objectBytes)
        guard !parsed.objects.isEmpty else {
            switch parsed.stop {
            case .unknownObjectID(let id, let offset): return .failure(.unknownObjectID(id, offset: offset))
            case .truncatedObject(let id, let offset): return .failure(.truncated("object 0x\(hex2(id, uppercase: true)) at byte \(offset) is cut short"))
            case nil: return .failure(.noObjects)
            }
        }
        return .success(BTHomeAdvert(deviceInfo: info, objects: parsed.objects, encryptionCounter: counter,
                                     embeddedAddress: embedded, stop: parsed.stop, outOfOrder: parsed.outOfOrder))
    }

    /// Reads objects until the bytes end, an unknown id, or an object cut short. Objects with a
    /// length byte of zero (text, raw) and text that is not UTF-8 are skipped, as in bthome-ble.
    public static func parseObjects(_ bytes: [UInt8]) -> (objects: [BTHomeObject], stop: BTHomeParseStop?, outOfOrder: Bool) {
        var objects: [BTHomeObject] = []
        var offset = 0
        var previousID: UInt8 = 0
        var outOfOrder = false
        while offset < bytes.count {
            let id = bytes[offset]
            if id < previousID { outOfOrder = true }
            guard let spec = BTHomeObjectTable.spec(id) else {
                return (objects, .unknownObjectID(id, offset: offset), outOfOrder)
            }
            previousID = id
            let dataStart: Int
            let length: Int
            if spec.isVariableLength {
                guard offset + 1 < bytes.count else { return (objects, .truncatedObject(id, offset: offset), outOfOrder) }
                let lengthByte = Int(bytes[offset + 1])
                length = spec.format.isCommand ? 1 + (lengthByte & 0x1F) : lengthByte
                dataStart = offset + 2
            } else {
                length = spec.length
                dataStart = offset + 1
            }
            let next = dataStart + length
            if length == 0 { offset = next; continue }
            guard next <= bytes.count else { return (objects, .truncatedObject(id, offset: offset), outOfOrder) }
            if let value = decode(spec, Array(bytes[dataStart..<next])) {
                objects.append(BTHomeObject(id: id, name: spec.name, unit: spec.unit, value: value, offset: offset))
            }
            offset = next
        }
        return (objects, nil, outOfOrder)
    }

    static func decode(_ spec: BTHomeObjectSpec, _ bytes: [UInt8]) -> BTHomeValue? {
        switch spec.format {
        case .unsigned(let factor, let decimals):
            let raw = bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return .number(scale(Double(raw), factor, decimals))
        case .signed(let factor, let decimals):
            var raw = bytes.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let bits = bytes.count * 8
            if bits < 64, raw & (Int64(1) << (bits - 1)) != 0 { raw -= Int64(1) << bits }
            return .number(scale(Double(raw), factor, decimals))
        case .binary:
            return .flag(bytes.contains { $0 != 0 })
        case .button:
            return .button(BTHomeButtonEvent(code: bytes[0]))
        case .dimmer, .command, .raw:
            return .bytes(bytes)
        case .text:
            return String(validating: bytes, as: UTF8.self).map(BTHomeValue.text)
        case .timestamp:
            let seconds = bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return .timestamp(Date(timeIntervalSince1970: TimeInterval(seconds)))
        case .firmware4:
            return .text("\(bytes[3]).\(bytes[2]).\(bytes[1]).\(bytes[0])")
        case .firmware3:
            return .text("\(bytes[2]).\(bytes[1]).\(bytes[0])")
        }
    }

    /// value × factor, rounded to the factor's decimals (0.01 → 2 places), as the spec's examples do.
    /// The rounding is decided on the exact binary value of the product, as bthome-ble's Python
    /// `round(x, n)` does (−109 × 0.35 is −38.149999… and rounds to −38.1, not −38.2); C's printf
    /// rounds the same way, so it does the work.
    static func scale(_ raw: Double, _ factor: Double, _ decimals: Int) -> Double {
        guard factor != 1 else { return raw }
        let product = raw * factor
        return Double(String(format: "%.\(decimals)f", product)) ?? product
    }
}

extension BTHomeObjectSpec.Format {
    var isCommand: Bool {
        if case .command = self { return true }
        return false
    }
}
