import Crypto
import DoseTapLinux
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The per-install secret of the dashboard: 32 random bytes in `web-secret` beside the database (mode
/// 0600). Pairing codes, session cookies and CSRF tokens are signed with it, so the command line
/// (`dosetap web link`) and the agent agree without talking to each other.
///
/// Loaded from its folder, it follows the file (#25 §6): `dosetap web revoke` replaces it and every session
/// ends at once, in the running agent too; a deleted file is made anew (and also signs everyone out) rather
/// than leaving the agent on the old one while `web link` signs with a new one. A file that can no longer be
/// used (made readable by others, garbage) verifies nothing until it is fixed: closed, not the old secret.
public struct WebSecret: Sendable {
    public static let fileName = "web-secret"
    private let fixed: [UInt8]?
    private let follower: Follower?

    public init(bytes: [UInt8]) {
        fixed = bytes
        follower = nil
    }

    private init(follower: Follower) {
        fixed = nil
        self.follower = follower
    }

    /// The bytes now: the fixed ones, or the file's (read again when it changed since the last look).
    var bytes: [UInt8] { fixed ?? follower?.current() ?? [] }

    /// Replaces the folder's secret (`dosetap web revoke`): every pairing code and session signed before no
    /// longer verifies, in the running agent as well.
    public static func revoke(dataDirectory: URL) throws(LoadError) {
        do {
            try InstallSecret.replace(dataDirectory: dataDirectory, fileName: fileName)
        } catch {
            throw LoadError(description: error.description)
        }
    }

    /// The file, looked at (one `stat`) whenever the secret is used; read again when its identity changed.
    final class Follower: Sendable {
        struct Seen: Equatable {
            var device: UInt64
            var inode: UInt64
            var modified: Int64
            var size: Int64
            /// Mode and owner, and the inode's change time: a `chmod 644` in place changes neither the inode nor
            /// the contents, and must end every session all the same (#51).
            var mode: UInt32
            var owner: UInt32
            var changed: Int64
        }

        let directory: URL
        private let state: Mutex<(seen: Seen?, bytes: [UInt8])>

        init(directory: URL, bytes: [UInt8]) {
            self.directory = directory
            state = Mutex((Self.look(directory), bytes))
        }

        static func look(_ directory: URL) -> Seen? {
            var info = stat()
            guard stat(directory.appendingPathComponent(WebSecret.fileName).path, &info) == 0 else { return nil }
            return Seen(device: UInt64(info.st_dev), inode: UInt64(info.st_ino),
                        modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), size: Int64(info.st_size),
                        mode: UInt32(info.st_mode), owner: UInt32(info.st_uid),
                        changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
        }

        func current() -> [UInt8] {
            let now = Self.look(directory)
            if let known = state.withLock({ $0.seen == now && now != nil ? $0.bytes : nil }) { return known }
            // Changed, replaced or deleted: read it again (made anew when deleted).
            let bytes: [UInt8]
            do {
                bytes = try InstallSecret.loadOrCreate(dataDirectory: directory, fileName: WebSecret.fileName, kind: "DoseTap web secret",
                                                       deleting: "sign every browser out")
            } catch {
                // Unusable: nothing verifies (a fresh random key, never written, for this look only).
                var generator = SystemRandomNumberGenerator()
                return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            let seen = Self.look(directory)
            state.withLock { $0 = (seen, bytes) }
            return bytes
        }
    }

    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The secret of the data folder, created (with the folder) on first use. A secret file that others
    /// may read, or that is not 64 hex digits, is refused in one line: it is never silently replaced.
    public static func loadOrCreate(dataDirectory: URL) throws(LoadError) -> WebSecret {
        // The same rules as the exports' install secret: one loader for every such 32-byte file.
        do {
            let bytes = try InstallSecret.loadOrCreate(dataDirectory: dataDirectory, fileName: fileName,
                                                       kind: "DoseTap web secret", deleting: "sign every browser out")
            return WebSecret(follower: Follower(directory: dataDirectory, bytes: bytes))
        } catch {
            throw LoadError(description: error.description)
        }
    }

    func mac(_ label: String, _ data: [UInt8]) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: bytes))
        hmac.update(data: Array(label.utf8) + [0])
        hmac.update(data: data)
        return Array(hmac.finalize())
    }
}

/// Constant-time comparison of two byte strings.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in a.indices { difference |= a[i] ^ b[i] }
    return difference == 0
}

/// Base64url without padding (RFC 4648 §5), by hand: it runs on every request (the session cookie, the CSRF
/// token), and Foundation's base64 plus three `replacingOccurrences` cost more than the HMAC.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        default: break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a base64url text without padding, or nil for anything else (another character, a length
    /// no encoding has, leftover bits that are not zero).
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count <= 512, utf8.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in utf8 {
            guard let value = sextet(byte) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (as Foundation's strict decoder requires).
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    private static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
