import Crypto
import DoseTapLinux
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
        // The same rules as the exports' install secret: one loader for every such 32-byte file.
        do {
            return WebSecret(bytes: try InstallSecret.loadOrCreate(dataDirectory: dataDirectory, fileName: fileName,
                                                                   kind: "DoseTap web secret", deleting: "sign every browser out"))
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
