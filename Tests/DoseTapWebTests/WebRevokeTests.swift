import DoseTapCore
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import Testing

/// #25 §6: deleting `web-secret`, as the docs advised after a stolen cookie, left old sessions working until a
/// restart and broke `web link` meanwhile. The agent's secret follows the file; `dosetap web revoke` replaces it.
@Suite("Web access: signing everyone out takes effect at once")
struct WebRevokeTests {
    func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-revoke-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }

    @Test("revoke: the running agent's sessions end at once, and a link made afterwards pairs without a restart")
    func revoke() throws {
        let dir = try folder()
        let agent = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let session = agent.newSession(now: t0)
        #expect(agent.session(session, now: t0) != nil)
        let csrf = agent.csrfToken(for: session)
        let oldCode = agent.pairingCode(now: t0)

        try WebSecret.revoke(dataDirectory: dir)
        #expect(agent.session(session, now: t0) == nil, "the stolen cookie is dead in the agent already")
        #expect(!agent.csrfValid(csrf, for: session))
        #expect(throws: WebTokens.PairingRefusal.malformed) { _ = try agent.checkPairingCode(oldCode, now: t0) }
        // `dosetap web link` after it (a process of its own) signs with what the agent now checks.
        let cli = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let code = cli.pairingCode(now: t0)
        #expect(throws: Never.self) { _ = try agent.checkPairingCode(code, now: t0) }
        var info = stat()
        #expect(stat(dir.appendingPathComponent(WebSecret.fileName).path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("a deleted web-secret: old sessions end, and the agent and web link agree on the new one")
    func deleted() throws {
        let dir = try folder()
        let agent = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let session = agent.newSession(now: t0)
        try FileManager.default.removeItem(at: dir.appendingPathComponent(WebSecret.fileName))
        let cli = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let code = cli.pairingCode(now: t0)
        #expect(agent.session(session, now: t0) == nil)
        #expect(throws: Never.self) { _ = try agent.checkPairingCode(code, now: t0) }
    }

    @Test("a web-secret made readable by others verifies nothing (closed), until it is fixed")
    func unusable() throws {
        let dir = try folder()
        let agent = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let session = agent.newSession(now: t0)
        let path = dir.appendingPathComponent(WebSecret.fileName).path
        // A new file (another inode), readable by all.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try FileManager.default.removeItem(atPath: path)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        #expect(agent.session(session, now: t0) == nil)
        chmod(path, 0o600)
        #expect(agent.session(session, now: t0) != nil, "the same secret, safe again")
    }

    @Test("chmod 644 of the same web-secret (same inode, same contents) ends every session at once; 600 again, they verify (#51)")
    func chmodInPlace() throws {
        let dir = try folder()
        let agent = WebTokens(secret: try WebSecret.loadOrCreate(dataDirectory: dir))
        let session = agent.newSession(now: t0)
        let path = dir.appendingPathComponent(WebSecret.fileName).path
        #expect(agent.session(session, now: t0) != nil)
        chmod(path, 0o644)
        #expect(agent.session(session, now: t0) == nil, "a secret readable by others still verified")
        chmod(path, 0o640)
        #expect(agent.session(session, now: t0) == nil, "a secret readable by the group still verified")
        chmod(path, 0o600)
        #expect(agent.session(session, now: t0) != nil)
    }
}
