// AES-CCM (RFC 3610, NIST SP 800-38C) for BTHome v2 encrypted advertisements
// (see Sources/DoseTapCore/Buttons). swift-crypto has no public CCM; this builds it from the one-block
// AES permutation of _CryptoExtras: CBC-MAC over B0 ‖ encoded AAD ‖ message, then CTR with A1, A2, …
// for the message and A0 for the tag.
import Crypto
import DoseTapCore
import Foundation
import _CryptoExtras

public enum AESCCMError: Error, Hashable, Sendable, CustomStringConvertible {
    case keySize(Int)
    case tagLength(Int)
    case nonceLength(Int)
    case messageTooLong(Int)
    case authenticationFailure

    public var description: String {
        switch self {
        case .keySize(let n): "AES-CCM: a key is 16, 24 or 32 bytes, not \(n)"
        case .tagLength(let n): "AES-CCM: the tag is 4, 6, 8, 10, 12, 14 or 16 bytes, not \(n)"
        case .nonceLength(let n): "AES-CCM: the nonce is 7 to 13 bytes, not \(n)"
        case .messageTooLong(let n): "AES-CCM: a \(n)-byte message does not fit this nonce's length field"
        case .authenticationFailure: "AES-CCM: the tag does not match"
        }
    }
}

/// AES-CCM with a fixed key and tag length (M). The nonce length N (7…13) sets the length field
/// L = 15 − N.
public struct AESCCM: Sendable {
    public let tagLength: Int
    /// The key's bytes: swift-crypto's `SymmetricKey` is not `Sendable` on Linux, so one is made per
    /// operation.
    private let keyBytes: [UInt8]

    public init(key: some Collection<UInt8>, tagLength: Int) throws(AESCCMError) {
        guard [16, 24, 32].contains(key.count) else { throw .keySize(key.count) }
        guard (4...16).contains(tagLength), tagLength % 2 == 0 else { throw .tagLength(tagLength) }
        self.keyBytes = Array(key)
        self.tagLength = tagLength
    }

    /// Encrypts and authenticates: the ciphertext (as long as the plaintext) and the tag.
    public func seal(_ plaintext: [UInt8], nonce: [UInt8], associatedData: [UInt8] = []) throws(AESCCMError)
        -> (ciphertext: [UInt8], tag: [UInt8]) {
        try check(nonce: nonce, messageLength: plaintext.count)
        let engine = Engine(key: SymmetricKey(data: keyBytes), tagLength: tagLength)
        let mac = engine.cbcMAC(plaintext, nonce: nonce, associatedData: associatedData)
        let ciphertext = engine.ctr(plaintext, nonce: nonce)
        let s0 = engine.block(engine.counterBlock(nonce: nonce, index: 0))
        return (ciphertext, (0..<tagLength).map { mac[$0] ^ s0[$0] })
    }

    /// Decrypts and verifies; throws `.authenticationFailure` (and returns nothing) on a wrong tag.
    public func open(_ ciphertext: [UInt8], tag: [UInt8], nonce: [UInt8], associatedData: [UInt8] = []) throws(AESCCMError)
        -> [UInt8] {
        try check(nonce: nonce, messageLength: ciphertext.count)
        guard tag.count == tagLength else { throw .authenticationFailure }
        let engine = Engine(key: SymmetricKey(data: keyBytes), tagLength: tagLength)
        let plaintext = engine.ctr(ciphertext, nonce: nonce)
        let mac = engine.cbcMAC(plaintext, nonce: nonce, associatedData: associatedData)
        let s0 = engine.block(engine.counterBlock(nonce: nonce, index: 0))
        var difference: UInt8 = 0
        for i in 0..<tagLength { difference |= (mac[i] ^ s0[i]) ^ tag[i] }
        guard difference == 0 else { throw .authenticationFailure }
        return plaintext
    }

    private func check(nonce: [UInt8], messageLength: Int) throws(AESCCMError) {
        guard (7...13).contains(nonce.count) else { throw .nonceLength(nonce.count) }
        let lengthField = 15 - nonce.count
        if lengthField < 8, UInt64(messageLength) >= UInt64(1) << (8 * lengthField) {
            throw .messageTooLong(messageLength)
        }
    }
}

/// One operation's AES state.
private struct Engine {
    let key: SymmetricKey
    let tagLength: Int

    /// One AES block in the encryption direction.
    func block(_ input: [UInt8]) -> [UInt8] {
        var output = input
        // Cannot fail: the block is 16 bytes and the key size was checked in init.
        try! AES.permute(&output, key: key)
        return output
    }

    /// A_i = flags(L − 1) ‖ nonce ‖ i (L bytes, big endian).
    func counterBlock(nonce: [UInt8], index: UInt64) -> [UInt8] {
        let lengthField = 15 - nonce.count
        var a = [UInt8(lengthField - 1)] + nonce
        for shift in stride(from: 8 * (lengthField - 1), through: 0, by: -8) {
            a.append(UInt8(truncatingIfNeeded: index >> UInt64(shift)))
        }
        return a
    }

    func ctr(_ input: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var output = [UInt8]()
        output.reserveCapacity(input.count)
        var index: UInt64 = 1
        var start = 0
        while start < input.count {
            let keystream = block(counterBlock(nonce: nonce, index: index))
            let end = min(start + 16, input.count)
            for i in start..<end { output.append(input[i] ^ keystream[i - start]) }
            start = end
            index += 1
        }
        return output
    }

    /// The unencrypted CBC-MAC T (16 bytes; the tag is its first M bytes, XORed with S0).
    func cbcMAC(_ message: [UInt8], nonce: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        let lengthField = 15 - nonce.count
        let flags = UInt8(associatedData.isEmpty ? 0 : 0x40) | UInt8(((tagLength - 2) / 2) << 3) | UInt8(lengthField - 1)
        var b0 = [flags] + nonce
        let length = UInt64(message.count)
        for shift in stride(from: 8 * (lengthField - 1), through: 0, by: -8) {
            b0.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
        }
        var x = block(b0)

        func absorb(_ bytes: [UInt8]) {
            var start = 0
            while start < bytes.count {
                var chunk = [UInt8](repeating: 0, count: 16)
                let end = min(start + 16, bytes.count)
                for i in start..<end { chunk[i - start] = bytes[i] }
                for i in 0..<16 { chunk[i] ^= x[i] }
                x = block(chunk)
                start = end
            }
        }

        if !associatedData.isEmpty {
            let a = UInt64(associatedData.count)
            var encoded: [UInt8]
            if a < 0xFF00 {
                encoded = [UInt8(a >> 8), UInt8(a & 0xFF)]
            } else if a <= UInt64(UInt32.max) {
                encoded = [0xFF, 0xFE] + (0..<4).reversed().map { UInt8(truncatingIfNeeded: a >> UInt64(8 * $0)) }
            } else {
                encoded = [0xFF, 0xFF] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: a >> UInt64(8 * $0)) }
            }
            encoded += associatedData
            absorb(encoded) // zero-padded to a whole block by absorb
        }
        absorb(message)
        return x
    }
}

/// A BTHome bindkey (16 bytes, given as 32 hex digits): AES-128-CCM with a 4-byte MIC and no
/// associated data, as BTHome v2 uses it.
public struct BTHomeBindkey: BTHomeDecryptor, Sendable {
    private let ccm: AESCCM

    public init(bytes: some Collection<UInt8>) throws(AESCCMError) {
        guard bytes.count == 16 else { throw .keySize(bytes.count) }
        ccm = try AESCCM(key: bytes, tagLength: BTHome.micLength)
    }

    /// 32 ASCII hex digits (any case), read by Core's one hex parser (`HexBytes`); nil for anything else.
    public init?(hex: String) {
        guard let bytes = HexBytes.parseOrNil(hex, count: 16), let key = try? BTHomeBindkey(bytes: bytes) else { return nil }
        self = key
    }

    public func open(ciphertext: [UInt8], mic: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        try? ccm.open(ciphertext, tag: mic, nonce: nonce)
    }

    /// Builds the service data of an encrypted advert (device-info byte, ciphertext, counter, MIC)
    /// from plaintext objects: what a BTHome device sends. For tests, fixtures and simulators.
    public func seal(objects: [UInt8], address: BTHomeAddress, counter: UInt32, deviceInfo: UInt8 = 0x41) -> [UInt8] {
        let counterBytes = (0..<4).map { UInt8(truncatingIfNeeded: counter >> UInt32(8 * $0)) }
        let embedded = BTHomeDeviceInfo(rawValue: deviceInfo).hasEmbeddedAddress
        let nonce = BTHome.nonce(address: address, deviceInfo: deviceInfo, counter: counterBytes)
        // Cannot fail: the nonce is 13 bytes and an advert is far shorter than 64 KiB.
        let sealed = try! ccm.seal(objects, nonce: nonce)
        let header = [deviceInfo] + (embedded ? address.bytes.reversed() : [])
        return header + sealed.ciphertext + counterBytes + sealed.tag
    }
}
