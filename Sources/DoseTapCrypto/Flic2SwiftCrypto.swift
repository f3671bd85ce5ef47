// Flic 2's public-key and hash primitives from swift-crypto (BoringSSL on Linux): Ed25519 verification of the
// button's certificate, X25519 for the pairing's shared secret, SHA-256 and HMAC-SHA256 for the key schedule.
import Crypto
import DoseTapCore
import Foundation

public struct SwiftCryptoFlic2: Flic2Crypto {
    public init() {}

    public func ed25519Verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    public func x25519KeyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) {
        let key = Curve25519.KeyAgreement.PrivateKey()
        return (Array(key.rawRepresentation), Array(key.publicKey.rawRepresentation))
    }

    public func x25519(privateKey: [UInt8], peerPublicKey: [UInt8]) -> [UInt8]? {
        guard let ours = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey),
              let theirs = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerPublicKey),
              let shared = try? ours.sharedSecretFromKeyAgreement(with: theirs) else { return nil }
        let bytes = shared.withUnsafeBytes { Array($0) }
        // An all-zero secret means a low-order point: nothing secret was agreed.
        return bytes.allSatisfy { $0 == 0 } ? nil : bytes
    }

    public func sha256(_ data: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: data)) }

    public func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    public func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<max(0, count)).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
