// libFuzzer target: the BTHome decryptor (DoseTapCrypto's AES-128-CCM and `BTHomeBindkey`) and the
// encrypted path of `BTHome.parse`. The first input byte picks a mode:
//   0 mod 4: the rest is an encrypted advert's service data, opened with a fixed bindkey;
//   1 mod 4: the rest is plaintext objects, sealed with the fixed bindkey under a fuzzed counter, then
//            parsed: it must open, and give back the same counter (round trip through the nonce);
//   2 mod 4: raw AES-CCM with a fuzzed key size, tag length, nonce and associated data: seal then open
//            must round-trip, and a flipped tag bit must fail;
//   3 mod 4: raw AES-CCM open of fuzzed ciphertext and tag (must not crash; any answer is fine).
import DoseTapCore
import DoseTapCrypto
import DoseTapFuzzSupport
import Foundation

private let address = BTHomeAddress("54:48:E6:8F:80:A5")!
private let bindkey = BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db932")!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBTHomeDecrypt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.byte() % 4 {
    case 0:
        let serviceData = input.rest()
        switch BTHome.parse(serviceData, address: address, decryptor: bindkey) {
        case .success(let advert):
            fuzzCheck(advert.encryptionCounter != nil, "an advert opened with a key has a counter")
        case .failure(let rejection):
            _ = rejection.description
        }
        var state = BTHomeDeviceState(address: address, decryptor: bindkey)
        _ = state.receive(serviceData, at: Date(timeIntervalSince1970: 1_700_000_000))
    case 1:
        let counter = UInt32(truncatingIfNeeded: input.uint(4))
        let info = input.byte() & 0x47 | 0x41 // version 2, encrypted; bits 1 (address) and 2 (trigger) fuzzed
        let objects = input.rest()
        let sealed = bindkey.seal(objects: objects, address: address, counter: counter, deviceInfo: info)
        switch BTHome.parse(sealed, address: address, decryptor: bindkey) {
        case .success(let advert):
            fuzzCheck(advert.encryptionCounter == counter, "the counter survives the round trip")
            fuzzCheck(advert.deviceInfo.rawValue == info, "the device info survives the round trip")
            if info & 0x02 != 0 { fuzzCheck(advert.embeddedAddress == address, "the embedded address survives") }
        case .failure(let rejection):
            fuzzCheck(rejection != .micMismatch, "a sealed advert opens with its own key (\(objects))")
        }
    case 2:
        let keySize = [16, 24, 32][Int(input.byte() % 3)]
        let tagLength = 4 + 2 * Int(input.byte() % 7)
        let nonceLength = 7 + Int(input.byte() % 7)
        let aadLength = Int(input.byte())
        let key = padded(input.take(keySize), keySize)
        let nonce = padded(input.take(nonceLength), nonceLength)
        let aad = input.take(aadLength)
        let plaintext = input.rest()
        guard let ccm = try? AESCCM(key: key, tagLength: tagLength) else {
            fuzzCheck(false, "a valid key size and tag length are accepted")
            return 0
        }
        do {
            let sealed = try ccm.seal(plaintext, nonce: nonce, associatedData: aad)
            fuzzCheck(sealed.ciphertext.count == plaintext.count && sealed.tag.count == tagLength, "CCM output sizes")
            let opened = try ccm.open(sealed.ciphertext, tag: sealed.tag, nonce: nonce, associatedData: aad)
            fuzzCheck(opened == plaintext, "CCM round trip")
            var forged = sealed.tag
            forged[Int(aadLength) % tagLength] ^= 0x01
            fuzzCheck((try? ccm.open(sealed.ciphertext, tag: forged, nonce: nonce, associatedData: aad)) == nil,
                      "a flipped tag bit is refused")
        } catch {
            let tooLong = (error as? AESCCMError) == .messageTooLong(plaintext.count)
            fuzzCheck(tooLong && nonceLength == 13 && plaintext.count >= 1 << 16, "CCM with valid parameters failed: \(error)")
        }
    default:
        let keySize = Int(input.byte() % 40)
        let tagLength = Int(input.byte() % 20)
        let nonceLength = Int(input.byte() % 16)
        let key = padded(input.take(keySize), keySize)
        let nonce = padded(input.take(nonceLength), nonceLength)
        let tag = input.take(tagLength)
        let ciphertext = input.rest()
        if let ccm = try? AESCCM(key: key, tagLength: tagLength) {
            _ = try? ccm.open(ciphertext, tag: tag, nonce: nonce)
        }
        _ = try? BTHomeBindkey(bytes: key)
        _ = bindkey.open(ciphertext: ciphertext, mic: tag, nonce: nonce)
    }
    return 0
}

private func padded(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
    bytes + [UInt8](repeating: 0xA5, count: count - bytes.count)
}
