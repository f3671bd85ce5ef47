/// The cryptography Flic 2 needs from a library (DoseTapCrypto gives swift-crypto's): the core only composes it.
public protocol Flic2Crypto: Sendable {
    /// Standard Ed25519 verification (RFC 8032).
    func ed25519Verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool
    /// A fresh X25519 key pair (private, public), 32 bytes each.
    func x25519KeyPair() -> (privateKey: [UInt8], publicKey: [UInt8])
    /// The X25519 shared secret, nil when the peer's key is not usable (a low-order point).
    func x25519(privateKey: [UInt8], peerPublicKey: [UInt8]) -> [UInt8]?
    func sha256(_ data: [UInt8]) -> [UInt8]
    func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8]
    func randomBytes(_ count: Int) -> [UInt8]
}

/// What a full verify leaves with the app: the pairing's identifier and its 16-byte key (kept like a bindkey).
public struct Flic2Pairing: Sendable, Equatable, Hashable {
    public var identifier: UInt32
    public var key: [UInt8]

    public init(identifier: UInt32, key: [UInt8]) {
        self.identifier = identifier
        self.key = key
    }

    /// The 20 bytes the key schedule gave (identifier little-endian, then the key), as 40 hex digits.
    public var hex: String { HexBytes.string(flic2LittleEndian(UInt64(identifier), 4) + key) }

    public init(hex: String) throws(HexBytes.Invalid) {
        let bytes = try HexBytes.parse(hex, count: 20)
        identifier = bytes[0..<4].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        key = Array(bytes[4...])
    }
}

/// Flic 2's key schedule (facts from the protocol specification), on top of `Flic2Crypto` and Chaskey-LTS.
public enum Flic2KeySchedule {
    /// Flic's factory key: every genuine Flic 2 carries a certificate signed with it.
    public static let factoryPublicKey: [UInt8] = [
        0xD3, 0x3F, 0x24, 0x40, 0xDD, 0x54, 0xB3, 0x1B, 0x2E, 0x1D, 0xCF, 0x40, 0x13, 0x2E, 0xFA, 0x41,
        0xD8, 0xF8, 0xA7, 0x47, 0x41, 0x68, 0xDF, 0x40, 0x08, 0xF5, 0xA9, 0x5F, 0xB3, 0xB0, 0xD0, 0x22,
    ]

    /// Which of the four signature variants verifies: the button overwrites the low two bits of the signature's
    /// byte 32 (the lowest byte of S), and the variant that makes the signature valid is an input of the key
    /// schedule. Nil when none does.
    public static func signatureVariant(_ crypto: some Flic2Crypto, signature: [UInt8], message: [UInt8],
                                        factoryKey: [UInt8]) -> UInt8? {
        guard signature.count == 64, factoryKey.count == 32 else { return nil }
        for variant in UInt8(0)..<4 {
            var candidate = signature
            candidate[32] = (candidate[32] & 0xFC) | variant
            if crypto.ed25519Verify(signature: candidate, message: message, publicKey: factoryKey) { return variant }
        }
        return nil
    }

    /// SHA-256(shared secret ‖ variant ‖ button random ‖ client random ‖ request-2 flags).
    public static func fullVerifySecret(_ crypto: some Flic2Crypto, sharedSecret: [UInt8], variant: UInt8,
                                        buttonRandom: [UInt8], clientRandom: [UInt8], flags: UInt8) -> [UInt8] {
        var input = sharedSecret
        input.append(variant)
        input += buttonRandom
        input += clientRandom
        input.append(flags)
        return crypto.sha256(input)
    }

    public struct FullVerifyKeys: Sendable, Equatable {
        /// HMAC(secret, "AT"), first 16 bytes: proves to the button that we hold the secret.
        public var verifier: [UInt8]
        /// HMAC(secret, "SK"), first 16 bytes: this session's Chaskey-LTS key.
        public var sessionKey: [UInt8]
        /// HMAC(secret, "PK"), first 20 bytes: the pairing.
        public var pairing: Flic2Pairing
    }

    public static func fullVerifyKeys(_ crypto: some Flic2Crypto, secret: [UInt8]) -> FullVerifyKeys {
        let pk = crypto.hmacSHA256(key: secret, data: Array("PK".utf8))
        let identifier = pk[0..<4].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        return FullVerifyKeys(verifier: Array(crypto.hmacSHA256(key: secret, data: Array("AT".utf8)).prefix(16)),
                              sessionKey: Array(crypto.hmacSHA256(key: secret, data: Array("SK".utf8)).prefix(16)),
                              pairing: Flic2Pairing(identifier: identifier, key: Array(pk[4..<20])))
    }

    /// A quick verify's session key: Chaskey-LTS under the pairing key of client random (7) ‖ request flags ‖
    /// button random (8), one 16-byte block.
    public static func quickVerifySessionKey(pairingKey: [UInt8], clientRandom: [UInt8], flags: UInt8,
                                             buttonRandom: [UInt8]) -> [UInt8]? {
        guard clientRandom.count == 7, buttonRandom.count == 8, let keys = ChaskeyKeys(key: pairingKey) else { return nil }
        var block = clientRandom
        block.append(flags)
        block += buttonRandom
        return Chaskey.mac(block, keys: keys)
    }

    /// Who sent a packet: the MAC differs by direction, so a packet cannot be reflected back.
    public enum Direction: UInt32, Sendable {
        case fromButton = 0
        case toButton = 1
    }

    /// A packet's 5-byte MAC: Chaskey-LTS of counter (64 bits) ‖ direction (32) ‖ zero (32) ‖ packet, truncated.
    /// Each direction counts its packets from 0, so a replayed, dropped or reordered packet does not verify.
    public static func mac(_ packet: [UInt8], keys: ChaskeyKeys, direction: Direction, counter: UInt64) -> [UInt8] {
        var message = flic2LittleEndian(counter, 8)
        message += flic2LittleEndian(UInt64(direction.rawValue), 4)
        message += [0, 0, 0, 0]
        message += packet
        return Array(Chaskey.mac(message, keys: keys).prefix(Flic2Packets.macLength))
    }
}
