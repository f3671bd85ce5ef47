import DoseTapCore
import DoseTapCrypto
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// AES-CCM (DoseTapCrypto) against published known-answer vectors and against OpenSSL.
@Suite("AES-CCM")
struct CCMTests {
    struct Vector: CustomStringConvertible {
        var name: String
        var key, nonce, aad, plaintext, ciphertext, tag: [UInt8]
        var description: String { name }
    }

    static func vectors() throws -> [Vector] {
        let file = try ButtonFixtures.json("ccm-vectors.json")
        return (file["vectors"] as? [[String: String]] ?? []).map { v in
            let aad = v["aad"] == "pattern:00..ff x256"
                ? Array(repeating: Array(0...255).map(UInt8.init), count: 256).flatMap { $0 }
                : bytes(v["aad"]!)
            return Vector(name: v["name"]!, key: bytes(v["key"]!), nonce: bytes(v["nonce"]!), aad: aad,
                          plaintext: bytes(v["plaintext"]!), ciphertext: bytes(v["ciphertext"]!), tag: bytes(v["tag"]!))
        }
    }

    @Test("the fixture holds all 24 RFC 3610 packet vectors and the NIST SP 800-38C examples")
    func coverage() throws {
        let names = try Self.vectors().map(\.name)
        #expect(names.filter { $0.hasPrefix("RFC 3610") }.count == 24)
        #expect(names.filter { $0.hasPrefix("NIST SP 800-38C") }.count == 4)
    }

    @Test("seal gives the published ciphertext and tag; open gives the plaintext back",
          arguments: try CCMTests.vectors())
    func knownAnswers(_ v: Vector) throws {
        let ccm = try AESCCM(key: v.key, tagLength: v.tag.count)
        let sealed = try ccm.seal(v.plaintext, nonce: v.nonce, associatedData: v.aad)
        #expect(hex(sealed.ciphertext) == hex(v.ciphertext))
        #expect(hex(sealed.tag) == hex(v.tag))
        #expect(try ccm.open(v.ciphertext, tag: v.tag, nonce: v.nonce, associatedData: v.aad) == v.plaintext)
    }

    @Test("any changed bit of ciphertext, tag, nonce or associated data fails authentication",
          arguments: try CCMTests.vectors().filter { $0.aad.count < 1000 })
    func tamper(_ v: Vector) throws {
        let ccm = try AESCCM(key: v.key, tagLength: v.tag.count)
        func fails(_ c: [UInt8], _ t: [UInt8], _ n: [UInt8], _ a: [UInt8]) -> Bool {
            (try? ccm.open(c, tag: t, nonce: n, associatedData: a)) == nil
        }
        for i in 0..<v.ciphertext.count { var c = v.ciphertext; c[i] ^= 0x01; #expect(fails(c, v.tag, v.nonce, v.aad)) }
        for i in 0..<v.tag.count { var t = v.tag; t[i] ^= 0x80; #expect(fails(v.ciphertext, t, v.nonce, v.aad)) }
        var n = v.nonce; n[n.count - 1] ^= 0x01
        #expect(fails(v.ciphertext, v.tag, n, v.aad))
        if !v.aad.isEmpty { var a = v.aad; a[0] ^= 0x01; #expect(fails(v.ciphertext, v.tag, v.nonce, a)) }
        #expect(fails(v.ciphertext, Array(v.tag.dropLast()), v.nonce, v.aad))
    }

    @Test("parameters outside RFC 3610 are refused with a reason")
    func parameters() throws {
        let key = [UInt8](repeating: 1, count: 16)
        #expect(throws: AESCCMError.keySize(15)) { try AESCCM(key: Array(key.dropLast()), tagLength: 4) }
        for m in [0, 2, 3, 5, 18] { #expect(throws: AESCCMError.tagLength(m)) { try AESCCM(key: key, tagLength: m) } }
        let ccm = try AESCCM(key: key, tagLength: 4)
        #expect(throws: AESCCMError.nonceLength(6)) { try ccm.seal([1], nonce: [UInt8](repeating: 0, count: 6)) }
        #expect(throws: AESCCMError.nonceLength(14)) { try ccm.seal([1], nonce: [UInt8](repeating: 0, count: 14)) }
        // A 13-byte nonce leaves L = 2: messages up to 65,535 bytes.
        #expect(throws: AESCCMError.messageTooLong(65_536)) {
            try ccm.seal([UInt8](repeating: 0, count: 65_536), nonce: [UInt8](repeating: 0, count: 13))
        }
        #expect(AESCCMError.authenticationFailure.description.contains("tag"))
    }

    @Test("BTHome bindkeys: 32 hex digits or nothing")
    func bindkeys() throws {
        #expect(BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db932") != nil)
        #expect(BTHomeBindkey(hex: "231D39C1D7CC1AB1AEE224CD096DB932") != nil)
        #expect(BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db93") == nil)
        #expect(BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db9321") == nil)
        #expect(BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db93g") == nil)
        #expect(BTHomeBindkey(hex: "") == nil)
        #expect(throws: AESCCMError.keySize(32)) { try BTHomeBindkey(bytes: [UInt8](repeating: 0, count: 32)) }
    }

    @Test("seal/open round trip for any key, nonce length, tag length, data and associated data")
    func roundTrip() async {
        await propertyCheck(count: 300, input: Gen.uint8().array(of: 16), Gen.int(in: 7...13), Gen.int(in: 2...8),
                            Gen.uint8().array(of: 0...70), Gen.uint8().array(of: 0...40)) { key, nonceLength, halfTag, plaintext, aad in
            let ccm = try AESCCM(key: key, tagLength: 2 * halfTag)
            let nonce = Array(key.prefix(nonceLength))
            let sealed = try ccm.seal(plaintext, nonce: nonce, associatedData: aad)
            #expect(sealed.ciphertext.count == plaintext.count)
            #expect(sealed.tag.count == 2 * halfTag)
            #expect(try ccm.open(sealed.ciphertext, tag: sealed.tag, nonce: nonce, associatedData: aad) == plaintext)
        }
    }

    /// Differential: random keys, nonces, tag lengths, messages and associated data sealed by us and
    /// by OpenSSL (the `cryptography` package in the reference venv). Fixed seed.
    @Test("DIFFERENTIAL: AES-CCM matches OpenSSL on 600 random inputs (seed 0xCC3610)")
    func againstOpenSSL() async throws {
        var rng = SplitMix64(seed: 0xCC3610)
        var requests: [[String: Any]] = []
        var ours: [String] = []
        for id in 0..<600 {
            let key = rng.bytes(rng.pick([16, 16, 16, 24, 32]))
            let nonce = rng.bytes(rng.int(7...13))
            let tagLength = 2 * rng.int(2...8)
            let plaintext = rng.bytes(rng.pick([0, 1, 2, 5, 15, 16, 17, 31, 32, 33, rng.int(0...200)]))
            let aad = rng.bytes(rng.pick([0, 0, 1, 14, 16, 30, rng.int(0...100)]))
            let sealed = try AESCCM(key: key, tagLength: tagLength).seal(plaintext, nonce: nonce, associatedData: aad)
            ours.append(hex(sealed.ciphertext + sealed.tag))
            requests.append(["op": "ccm", "id": id, "key": hex(key), "nonce": hex(nonce), "aad": hex(aad),
                             "plaintext": hex(plaintext), "tag_length": tagLength])
        }
        let theirs = try await Reference.run(requests)
        for (i, answer) in theirs.enumerated() {
            #expect(answer["sealed"] as? String == ours[i], "request \(i): \(requests[i])")
        }
    }
}
