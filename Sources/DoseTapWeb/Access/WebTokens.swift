import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Pairing codes, session cookies and CSRF tokens, all signed with the install's `WebSecret`.
///
/// - A pairing code (`dosetap web link`) is valid for 10 minutes from its issue, and once: the agent
///   remembers the codes it redeemed until they expire.
/// - A session (the cookie a paired browser keeps) lasts 30 days; it is signed, so it survives a restart
///   of the agent, and deleting `web-secret` ends every session.
/// - The CSRF token of a session is derived from it: every state-changing request carries it.
public struct WebTokens: Sendable {
    public static let pairingValidity: TimeInterval = 600
    public static let sessionLifetime: TimeInterval = 30 * 24 * 3600

    let secret: WebSecret

    public init(secret: WebSecret) { self.secret = secret }

    // MARK: Pairing codes

    /// A new pairing code: 4 bytes of expiry (Unix seconds), 8 random bytes, 12 bytes of signature.
    public func pairingCode(now: Date) -> String {
        let expiry = UInt32(clamping: Int64((now.timeIntervalSince1970 + Self.pairingValidity).rounded(.up)))
        var body = withUnsafeBytes(of: expiry.bigEndian) { Array($0) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<8 { body.append(UInt8.random(in: 0...255, using: &generator)) }
        return Base64URL.encode(body + secret.mac("pair", body).prefix(12))
    }

    public enum PairingRefusal: Error, Equatable, CustomStringConvertible {
        case malformed, expired, used
        /// The redeemed code could not be written down (the data folder is full or read-only): refused,
        /// since a restart would forget it.
        case unrecorded
        public var description: String {
            switch self {
            case .unrecorded: "this pairing code cannot be recorded as used (the data folder cannot be written): try again"
            case .malformed: "this is not a pairing code of this DoseTap: run dosetap web link for a new one"
            case .expired: "this pairing code has expired (codes are valid for 10 minutes): run dosetap web link for a new one"
            case .used: "this pairing code was already used: run dosetap web link for a new one"
            }
        }
    }

    /// The code's nonce and expiry when it is ours and not expired at `now`.
    func checkPairingCode(_ code: String, now: Date) throws(PairingRefusal) -> (nonce: [UInt8], expiry: Date) {
        guard let bytes = Base64URL.decode(code), bytes.count == 24 else { throw .malformed }
        let body = Array(bytes[0..<12])
        guard constantTimeEqual(Array(secret.mac("pair", body).prefix(12)), Array(bytes[12...])) else { throw .malformed }
        let expirySeconds = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let expiry = Date(timeIntervalSince1970: TimeInterval(expirySeconds))
        guard now < expiry else { throw .expired }
        return (Array(body[4...]), expiry)
    }

    // MARK: Sessions

    /// A new session cookie value: 4 bytes of issue time, 16 random bytes of id, 16 bytes of signature.
    public func newSession(now: Date) -> String {
        let issued = UInt32(clamping: Int64(now.timeIntervalSince1970))
        var body = withUnsafeBytes(of: issued.bigEndian) { Array($0) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<16 { body.append(UInt8.random(in: 0...255, using: &generator)) }
        return Base64URL.encode(body + secret.mac("session", body).prefix(16))
    }

    /// The session's id when the cookie is ours and not older than 30 days (nor issued in the future).
    public func session(_ cookie: String, now: Date) -> String? {
        guard let bytes = Base64URL.decode(cookie), bytes.count == 36 else { return nil }
        let body = Array(bytes[0..<20])
        guard constantTimeEqual(Array(secret.mac("session", body).prefix(16)), Array(bytes[20...])) else { return nil }
        let issued = TimeInterval(bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        let age = now.timeIntervalSince1970 - issued
        guard age < Self.sessionLifetime, age > -300 else { return nil }
        return Base64URL.encode(Array(body[4...]))
    }

    /// The CSRF token of a session (or of a local peer, "unix:UID").
    public func csrfToken(for session: String) -> String {
        Base64URL.encode(Array(secret.mac("csrf", Array(session.utf8)).prefix(16)))
    }

    public func csrfValid(_ token: String?, for session: String) -> Bool {
        guard let token else { return false }
        return constantTimeEqual(Array(token.utf8), Array(csrfToken(for: session).utf8))
    }
}

/// Redeems pairing codes once each: remembers the redeemed codes until they expire — in memory and, with
/// a data folder, in `web-redeemed` beside the database (mode 0600), so a code redeemed just before a
/// restart of the agent cannot be redeemed again after it. (The command line issues codes without the
/// agent, so a code cannot be bound to one run of the agent; the record is what makes it once-only.)
public final class PairingDesk: Sendable {
    public static let fileName = "web-redeemed"
    private let tokens: WebTokens
    private let file: URL?
    private let redeemed: Mutex<[[UInt8]: Date]>

    /// - Parameter dataDirectory: where `web-redeemed` is kept; nil: in memory only.
    public init(tokens: WebTokens, dataDirectory: URL? = nil) {
        self.tokens = tokens
        file = dataDirectory?.appendingPathComponent(Self.fileName)
        redeemed = Mutex(file.map(Self.load) ?? [:])
    }

    /// A new session cookie for a valid, unused code; else why not.
    public func redeem(_ code: String, now: Date) throws(WebTokens.PairingRefusal) -> String {
        let (nonce, expiry) = try tokens.checkPairingCode(code, now: now)
        let file = self.file
        let outcome = redeemed.withLock { used -> WebTokens.PairingRefusal? in
            var next = used.filter { $0.value > now }
            guard next[nonce] == nil else { return .used }
            next[nonce] = expiry
            if let file, !Self.save(next, to: file) { return .unrecorded }
            used = next
            return nil
        }
        if let outcome { throw outcome }
        return tokens.newSession(now: now)
    }

    /// Lines of "nonce-hex expiry-unix-seconds"; an unreadable or garbled line is skipped.
    static func load(_ file: URL) -> [[UInt8]: Date] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [:] }
        var out: [[UInt8]: Date] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let seconds = Int64(parts[1]), parts[0].count == 16 else { continue }
            var nonce: [UInt8] = []
            var index = parts[0].startIndex
            while index < parts[0].endIndex {
                let next = parts[0].index(index, offsetBy: 2)
                guard let byte = UInt8(parts[0][index..<next], radix: 16) else { break }
                nonce.append(byte)
                index = next
            }
            guard nonce.count == 8 else { continue }
            out[nonce] = Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        return out
    }

    /// Written whole to a temporary file, then renamed over the record (mode 0600).
    static func save(_ used: [[UInt8]: Date], to file: URL) -> Bool {
        let text = used.map { nonce, expiry in
            nonce.map { String(format: "%02x", $0) }.joined() + " \(Int64(expiry.timeIntervalSince1970))\n"
        }.joined()
        let temporary = file.path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            return false
        }
        return rename(temporary, file.path) == 0
    }
}
