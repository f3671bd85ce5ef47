import Crypto

/// HMAC-SHA256 (swift-crypto) for the per-install hashes of the exports: stable short names for button
/// addresses and names in an anonymised log, the install's part of a calendar's UIDs.
public enum KeyedHash {
    /// HMAC-SHA256 of `domain ‖ 0x00 ‖ value` under `key`, the first `bytes` bytes in lower-case hex.
    public static func hex(key: [UInt8], domain: String, value: String, bytes: Int = 4) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: key))
        hmac.update(data: Array(domain.utf8) + [0])
        hmac.update(data: Array(value.utf8))
        let digest = Array(hmac.finalize())
        return digest.prefix(max(1, min(bytes, digest.count))).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }
}
