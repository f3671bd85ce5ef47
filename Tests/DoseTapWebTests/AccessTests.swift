import DoseTapCore
import DoseTapTesting
@testable import DoseTapWeb
import Foundation
import Testing

let t0 = Date(timeIntervalSince1970: 1_790_000_000)

@Suite("Web access: pairing codes, sessions, CSRF")
struct AccessTests {
    let secret = WebSecret(bytes: Array(repeating: 7, count: 32))

    @Test("a pairing code is valid until 10 minutes after its issue, not at 10 minutes (fake clock)")
    func pairingExpiry() throws {
        let tokens = WebTokens(secret: secret)
        let clock = FakeClock(t0)
        let early = tokens.pairingCode(now: clock.now())
        let late = tokens.pairingCode(now: clock.now())
        let desk = PairingDesk(tokens: tokens)
        clock.advance(by: 599)
        #expect(throws: Never.self) { _ = try desk.redeem(early, now: clock.now()) }
        clock.advance(by: 1) // 600 s after the issue
        #expect(throws: WebTokens.PairingRefusal.expired) { _ = try desk.redeem(late, now: clock.now()) }
        // The expiry is stored rounded up to the second: a code issued mid-second still lasts ≥ 600 s.
        let midSecond = Date(timeIntervalSince1970: 1_790_000_000.4)
        let code = tokens.pairingCode(now: midSecond)
        #expect(throws: Never.self) { _ = try PairingDesk(tokens: tokens).redeem(code, now: midSecond.addingTimeInterval(599.9)) }
        #expect(throws: WebTokens.PairingRefusal.expired) { _ = try PairingDesk(tokens: tokens).redeem(code, now: midSecond.addingTimeInterval(601)) }
    }

    @Test("a code redeemed before a restart of the agent stays used after it (web-redeemed, 0600); expired entries are dropped")
    func pairingSurvivesRestart() throws {
        let tokens = WebTokens(secret: secret)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-redeemed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let code = tokens.pairingCode(now: t0)
        _ = try PairingDesk(tokens: tokens, dataDirectory: dir).redeem(code, now: t0)
        let file = dir.appendingPathComponent(PairingDesk.fileName)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // A new agent (a new desk over the same folder) refuses the replay within the 10 minutes.
        #expect(throws: WebTokens.PairingRefusal.used) {
            _ = try PairingDesk(tokens: tokens, dataDirectory: dir).redeem(code, now: t0.addingTimeInterval(60))
        }
        // Without the record (the old behaviour) the replay would have worked: the record is what stops it.
        #expect(throws: Never.self) { _ = try PairingDesk(tokens: tokens).redeem(code, now: t0.addingTimeInterval(60)) }
        // A later redemption rewrites the record without the expired entries.
        let later = tokens.pairingCode(now: t0.addingTimeInterval(700))
        _ = try PairingDesk(tokens: tokens, dataDirectory: dir).redeem(later, now: t0.addingTimeInterval(700))
        #expect(try String(contentsOf: file, encoding: .utf8).split(separator: "\n").count == 1)
        // Garbage in the record is skipped, not fatal.
        try "zz 12\nnot a line\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: Never.self) { _ = try PairingDesk(tokens: tokens, dataDirectory: dir).redeem(tokens.pairingCode(now: t0), now: t0) }
        // A folder that cannot be written: the code is refused (a restart would forget it), in one line.
        let missing = dir.appendingPathComponent("gone")
        #expect(throws: WebTokens.PairingRefusal.unrecorded) {
            _ = try PairingDesk(tokens: tokens, dataDirectory: missing).redeem(tokens.pairingCode(now: t0), now: t0)
        }
    }

    @Test("a pairing code works once; a forged, truncated or foreign code is refused in one line")
    func pairingOnce() throws {
        let tokens = WebTokens(secret: secret)
        let desk = PairingDesk(tokens: tokens)
        let code = tokens.pairingCode(now: t0)
        let session = try desk.redeem(code, now: t0)
        #expect(tokens.session(session, now: t0) != nil)
        #expect(throws: WebTokens.PairingRefusal.used) { _ = try desk.redeem(code, now: t0.addingTimeInterval(1)) }
        var bytes = Array(code.utf8)
        bytes[3] = bytes[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for bad in [String(decoding: bytes, as: UTF8.self), String(code.dropLast(2)), "", "<script>", String(repeating: "A", count: 5000)] {
            #expect(throws: WebTokens.PairingRefusal.malformed) { _ = try desk.redeem(bad, now: t0) }
        }
        let foreign = WebTokens(secret: WebSecret(bytes: Array(repeating: 8, count: 32))).pairingCode(now: t0)
        #expect(throws: WebTokens.PairingRefusal.malformed) { _ = try desk.redeem(foreign, now: t0) }
        for refusal in [WebTokens.PairingRefusal.malformed, .expired, .used] {
            #expect(!refusal.description.contains("\n") && refusal.description.contains("dosetap web link"))
        }
    }

    @Test("a session lasts 30 days and is bound to the secret; its CSRF token is its own")
    func sessions() {
        let tokens = WebTokens(secret: secret)
        let cookie = tokens.newSession(now: t0)
        let id = tokens.session(cookie, now: t0)
        #expect(id != nil)
        #expect(tokens.session(cookie, now: t0.addingTimeInterval(30 * 86400 - 1)) == id)
        #expect(tokens.session(cookie, now: t0.addingTimeInterval(30 * 86400)) == nil)
        #expect(WebTokens(secret: WebSecret(bytes: Array(repeating: 9, count: 32))).session(cookie, now: t0) == nil)
        let other = tokens.session(tokens.newSession(now: t0), now: t0)!
        let token = tokens.csrfToken(for: id!)
        #expect(tokens.csrfValid(token, for: id!))
        #expect(!tokens.csrfValid(token, for: other))
        #expect(!tokens.csrfValid(nil, for: id!))
        #expect(!tokens.csrfValid("", for: id!))
    }

    @Test("the secret file: created 0600 once, read back, and refused when others can read it")
    func secretFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-web-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try WebSecret.loadOrCreate(dataDirectory: dir)
        let again = try WebSecret.loadOrCreate(dataDirectory: dir)
        let code = WebTokens(secret: first).pairingCode(now: t0)
        #expect(throws: Never.self) { _ = try PairingDesk(tokens: WebTokens(secret: again)).redeem(code, now: t0) }
        let path = dir.appendingPathComponent(WebSecret.fileName).path
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        chmod(path, 0o644)
        #expect(throws: WebSecret.LoadError.self) { _ = try WebSecret.loadOrCreate(dataDirectory: dir) }
        chmod(path, 0o600)
        try "not hex\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: WebSecret.LoadError.self) { _ = try WebSecret.loadOrCreate(dataDirectory: dir) }
    }

    @Test("only a Unix-socket peer of our own uid is trusted; TCP, loopback included, never")
    func peers() {
        #expect(WebPeer.unix(uid: 1000).isTrustedLocal(ownUID: 1000))
        #expect(!WebPeer.unix(uid: 1001).isTrustedLocal(ownUID: 1000))
        #expect(!WebPeer.unix(uid: nil).isTrustedLocal(ownUID: 1000))
        #expect(!WebPeer.tcp(address: "127.0.0.1").isTrustedLocal(ownUID: 1000))
        #expect(WebPeer.tcp(address: "127.0.0.1").clientKey != WebPeer.tcp(address: "127.0.0.2").clientKey)
    }
}

@Suite("Web rate limit: 60/min served, then queued, > 200/min refused for 5 minutes")
struct RateLimiterTests {
    @Test("60 at once are served, the 61st waits one second, the next one more")
    func burst() {
        var limiter = RateLimiter()
        for _ in 0..<60 { #expect(limiter.admit("a", at: t0) == .serve) }
        #expect(limiter.admit("a", at: t0) == .wait(until: t0.addingTimeInterval(1)))
        #expect(limiter.admit("a", at: t0) == .wait(until: t0.addingTimeInterval(2)))
        // Another client is not affected.
        #expect(limiter.admit("b", at: t0) == .serve)
    }

    @Test("one request a second is never queued")
    func steady() {
        var limiter = RateLimiter()
        for i in 0..<600 { #expect(limiter.admit("a", at: t0.addingTimeInterval(Double(i))) == .serve) }
    }

    @Test("the 200th request in a minute is queued, the 201st refused for 5 minutes and logged once")
    func refusal() {
        var limiter = RateLimiter()
        for i in 0..<200 {
            let decision = limiter.admit("a", at: t0.addingTimeInterval(Double(i) * 0.25))
            if case .refused = decision { Issue.record("refused at request \(i + 1)") }
        }
        let at = t0.addingTimeInterval(50)
        #expect(limiter.admit("a", at: at) == .refused(until: at.addingTimeInterval(300), first: true))
        #expect(limiter.admit("a", at: at.addingTimeInterval(1)) == .refused(until: at.addingTimeInterval(300), first: false))
        #expect(limiter.admit("a", at: at.addingTimeInterval(299.9)) == .refused(until: at.addingTimeInterval(300), first: false))
        #expect(limiter.admit("a", at: at.addingTimeInterval(300)) == .serve)
        #expect(limiter.admit("b", at: at) == .serve)
    }

    /// #26 §5: every address a stranger uses adds a client; inside the minute nothing was idle enough to prune.
    @Test("20,000 clients in one minute: at most clientsKept followed; a blocked client stays blocked; the owner is served")
    func boundedClients() {
        var limiter = RateLimiter()
        for i in 0..<201 { _ = limiter.admit("flooder", at: t0.addingTimeInterval(Double(i) * 0.01)) }
        #expect(limiter.admit("flooder", at: t0.addingTimeInterval(3)) == .refused(until: t0.addingTimeInterval(2 + 300), first: false))
        for n in 0..<20_000 {
            #expect(limiter.admit("stranger-\(n)", at: t0.addingTimeInterval(3 + Double(n) * 0.002)) == .serve)
            if n % 1000 == 0 { #expect(limiter.clientCount <= RateLimiter.clientsKept) }
        }
        #expect(limiter.clientCount <= RateLimiter.clientsKept)
        let later = t0.addingTimeInterval(50)
        if case .refused = limiter.admit("flooder", at: later) {} else { Issue.record("the blocked client was forgotten") }
        #expect(limiter.admit("owner", at: later) == .serve)
    }

    @Test("requests older than a minute do not count toward the 200")
    func window() {
        var limiter = RateLimiter()
        for i in 0..<200 { _ = limiter.admit("a", at: t0.addingTimeInterval(Double(i) * 0.3)) } // 0…59.7 s
        // 60.0 s: the first one (at 0 s) left the window, so this is the 200th in the last minute.
        if case .refused = limiter.admit("a", at: t0.addingTimeInterval(60)) { Issue.record("refused with 200 in the window") }
        if case .refused = limiter.admit("a", at: t0.addingTimeInterval(60.05)) {} else { Issue.record("201 in the window not refused") }
    }
}

@Suite("QR codes")
struct QRCodeTests {
    @Test("versions grow with the text; finder patterns, timing and the dark module are in place")
    func structure() throws {
        let short = try QRCode(text: "http://127.0.0.1:8765/")
        #expect(short.version == 2 && short.size == 25)
        let link = try QRCode(text: "http://192.168.100.200:8765/pair?code=" + String(repeating: "x", count: 32))
        #expect(link.version == 5)
        for code in [short, link] {
            let n = code.size
            for (ox, oy) in [(0, 0), (n - 7, 0), (0, n - 7)] {
                for y in 0..<7 {
                    for x in 0..<7 {
                        let d = max(abs(x - 3), abs(y - 3))
                        #expect(code.modules[oy + y][ox + x] == (d != 2), "finder at \(ox),\(oy)")
                    }
                }
            }
            for i in 8..<(n - 8) { #expect(code.modules[6][i] == (i % 2 == 0) && code.modules[i][6] == (i % 2 == 0)) }
            #expect(code.modules[n - 8][8])
        }
        #expect(throws: QRCode.TooLong.self) { _ = try QRCode(bytes: Array(repeating: 65, count: 214)) }
        #expect(try QRCode(bytes: Array(repeating: 65, count: 213)).version == 10)
    }

    @Test("the format bits read back as level M and the chosen mask (BCH-checked)")
    func formatBits() throws {
        for mask in 0..<8 {
            let code = try QRCode(bytes: Array("DoseTap".utf8), forcedMask: mask)
            var bits = 0
            for i in 0...5 { bits |= (code.modules[i][8] ? 1 : 0) << i }
            bits |= (code.modules[7][8] ? 1 : 0) << 6
            bits |= (code.modules[8][8] ? 1 : 0) << 7
            bits |= (code.modules[8][7] ? 1 : 0) << 8
            for i in 9..<15 { bits |= (code.modules[8][14 - i] ? 1 : 0) << i }
            let data = (bits ^ 0x5412) >> 10
            #expect(data == mask, "level M (00) and mask \(mask)")
        }
    }

    @Test("Reed–Solomon: the known ECC of the standard's example (1-M, \"01234567\")")
    func reedSolomon() {
        // ISO/IEC 18004 Annex I: version 1-M, numeric "01234567", data codewords and their 10 ECC codewords.
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        let ecc = ReedSolomon.remainder(data, divisor: ReedSolomon.divisor(degree: 10))
        #expect(ecc == [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    @Test("the terminal text has a quiet zone and two module rows per line")
    func terminal() throws {
        let code = try QRCode(text: "x")
        let lines = code.terminalText(ansi: false).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == (code.size + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == code.size + 8 })
        #expect(lines[0].allSatisfy { $0 == " " })
    }
}
