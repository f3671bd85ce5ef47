/// Chaskey (Mouha et al., "Chaskey: An Efficient MAC Algorithm for 32-bit Microcontrollers", SAC 2014), written
/// from the published algorithm: a 128-bit key K, the subkeys K1 = 2·K and K2 = 2·K1 in GF(2¹²⁸) (x¹²⁸ + x⁷ + x² + x + 1,
/// little-endian words), and the ARX permutation π applied after each 16-byte block; the last block is XORed with K1
/// when whole, or padded with 0x01 0x00… and XORed with K2, before π, and the same subkey after it.
///
/// `rounds` is the permutation's number of rounds: 8 for the original Chaskey, 12 for Chaskey-12 and 16 for
/// **Chaskey-LTS**, which Flic 2 uses. Checked against the reference implementation's published vectors for 8 and 12
/// rounds (Tests/DoseTapButtonTests/Flic2CryptoTests.swift) and, for 16, against Flic's own client.
public struct ChaskeyKeys: Sendable, Equatable {
    public let k: SIMD4<UInt32>
    public let k1: SIMD4<UInt32>
    public let k2: SIMD4<UInt32>

    /// The subkeys of a 16-byte key (nil when it is not 16 bytes).
    public init?(key: some Collection<UInt8>) {
        guard key.count == 16 else { return nil }
        let words = Chaskey.words(Array(key), at: 0)
        k = words
        k1 = Chaskey.timesTwo(words)
        k2 = Chaskey.timesTwo(k1)
    }

    /// From the key's four little-endian words (the reference vectors give keys this way).
    public init(words: SIMD4<UInt32>) {
        k = words
        k1 = Chaskey.timesTwo(words)
        k2 = Chaskey.timesTwo(k1)
    }
}

public enum Chaskey {
    /// Chaskey-LTS's number of rounds.
    public static let ltsRounds = 16

    /// The 16-byte tag of `message` (any length, empty included).
    public static func mac(_ message: some Collection<UInt8>, keys: ChaskeyKeys, rounds: Int = ltsRounds) -> [UInt8] {
        let m = Array(message)
        var v = keys.k
        var offset = 0
        // Every block but the last goes through π with nothing else.
        while m.count - offset > 16 {
            v ^= words(m, at: offset)
            permute(&v, rounds: rounds)
            offset += 16
        }
        let last: SIMD4<UInt32>
        let subkey: SIMD4<UInt32>
        if !m.isEmpty, m.count - offset == 16 {
            last = words(m, at: offset)
            subkey = keys.k1
        } else {
            var padded = [UInt8](repeating: 0, count: 16)
            padded.replaceSubrange(0..<(m.count - offset), with: m[offset...])
            padded[m.count - offset] = 0x01
            last = words(padded, at: 0)
            subkey = keys.k2
        }
        v ^= last ^ subkey
        permute(&v, rounds: rounds)
        v ^= subkey
        return bytes(v)
    }

    /// One round of π, repeated.
    static func permute(_ v: inout SIMD4<UInt32>, rounds: Int) {
        for _ in 0..<rounds {
            v[0] &+= v[1]; v[1] = rotl(v[1], 5); v[1] ^= v[0]; v[0] = rotl(v[0], 16)
            v[2] &+= v[3]; v[3] = rotl(v[3], 8); v[3] ^= v[2]
            v[0] &+= v[3]; v[3] = rotl(v[3], 13); v[3] ^= v[0]
            v[2] &+= v[1]; v[1] = rotl(v[1], 7); v[1] ^= v[2]; v[2] = rotl(v[2], 16)
        }
    }

    @inline(__always) static func rotl(_ x: UInt32, _ b: UInt32) -> UInt32 { (x << b) | (x >> (32 - b)) }

    /// Multiplication by x in GF(2¹²⁸), on four little-endian words.
    static func timesTwo(_ v: SIMD4<UInt32>) -> SIMD4<UInt32> {
        SIMD4(
            (v[0] << 1) ^ (v[3] >> 31 == 1 ? 0x87 : 0),
            (v[1] << 1) | (v[0] >> 31),
            (v[2] << 1) | (v[1] >> 31),
            (v[3] << 1) | (v[2] >> 31)
        )
    }

    static func words(_ bytes: [UInt8], at offset: Int) -> SIMD4<UInt32> {
        var v = SIMD4<UInt32>()
        for w in 0..<4 {
            var word: UInt32 = 0
            for b in 0..<4 { word |= UInt32(bytes[offset + w * 4 + b]) << (8 * UInt32(b)) }
            v[w] = word
        }
        return v
    }

    static func bytes(_ v: SIMD4<UInt32>) -> [UInt8] {
        (0..<16).map { UInt8(truncatingIfNeeded: v[$0 / 4] >> (8 * UInt32($0 % 4))) }
    }
}
