import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The per-install secret of the dashboard: 32 random bytes in `web-secret` beside the database (mode
/// 0600). Pairing codes, session cookies and CSRF tokens are signed with it, so the command line
/// (`dosetap web link`) and the agent agree without talking to each other, and deleting the file signs
/// every browser out.
public struct WebSecret: Sendable {
    public static let fileName = "web-secret"
    private let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The secret of the data folder, created (with the folder) on first use. A secret file that others
    /// may read, or that is not 64 hex digits, is refused in one line: it is never silently replaced.
    public static func loadOrCreate(dataDirectory: URL) throws(LoadError) -> WebSecret {
        let path = dataDirectory.appendingPathComponent(fileName).path
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw LoadError(description: "cannot create \(dataDirectory.path): \(error.localizedDescription)")
        }
        for _ in 0..<2 {
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd >= 0 {
                defer { close(fd) }
                var info = stat()
                guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                    throw LoadError(description: "\(path) is not a regular file")
                }
                guard info.st_mode & 0o077 == 0 else {
                    throw LoadError(description: "\(path) is readable by others: chmod 600 \(path) (or delete it to sign every browser out)")
                }
                var buffer = [UInt8](repeating: 0, count: 256)
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                let text = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
                guard let bytes = hexBytes(text), bytes.count == 32 else {
                    throw LoadError(description: "\(path) is not a DoseTap web secret (64 hex digits): delete it to make a new one")
                }
                return WebSecret(bytes: bytes)
            }
            guard errno == ENOENT else {
                throw LoadError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            // Create it: O_EXCL, so two processes creating it at once agree on the first one's bytes.
            var bytes = [UInt8](repeating: 0, count: 32)
            var generator = SystemRandomNumberGenerator()
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
            let created = open(path + ".new-\(getpid())", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard created >= 0 else {
                throw LoadError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            let text = Array((bytes.map { String(format: "%02x", $0) }.joined() + "\n").utf8)
            let written = text.withUnsafeBytes { write(created, $0.baseAddress, $0.count) }
            fsync(created)
            close(created)
            guard written == text.count else {
                unlink(path + ".new-\(getpid())")
                throw LoadError(description: "cannot write \(path)")
            }
            // link() fails when another process made it first; then read theirs.
            let linked = link(path + ".new-\(getpid())", path)
            unlink(path + ".new-\(getpid())")
            if linked == 0 { return WebSecret(bytes: bytes) }
            guard errno == EEXIST else {
                throw LoadError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        throw LoadError(description: "cannot read \(path)")
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
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

enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.count <= 512, text.utf8.allSatisfy({ $0.isBase64URL }) else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}

private extension UInt8 {
    var isBase64URL: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
}
