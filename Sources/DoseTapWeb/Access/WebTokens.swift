import Foundation
import Synchronization

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
        public var description: String {
            switch self {
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

/// Redeems pairing codes once each: remembers the redeemed codes until they expire.
public final class PairingDesk: Sendable {
    private let tokens: WebTokens
    private let redeemed = Mutex<[[UInt8]: Date]>([:])

    public init(tokens: WebTokens) { self.tokens = tokens }

    /// A new session cookie for a valid, unused code; else why not.
    public func redeem(_ code: String, now: Date) throws(WebTokens.PairingRefusal) -> String {
        let (nonce, expiry) = try tokens.checkPairingCode(code, now: now)
        let fresh = redeemed.withLock { used -> Bool in
            used = used.filter { $0.value > now }
            guard used[nonce] == nil else { return false }
            used[nonce] = expiry
            return true
        }
        guard fresh else { throw .used }
        return tokens.newSession(now: now)
    }
}
