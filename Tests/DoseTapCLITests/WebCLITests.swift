import Foundation
import Testing

@Suite("dosetap web")
struct WebCLITests {
    @Test("web link: the pairing link on the loopback default, a QR code of it, and the note that a phone cannot reach it")
    func link() async throws {
        let cli = try CLI()
        let r = try await cli.run(["web", "link"])
        #expect(r.exitCode == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "Open this link within 10 minutes to pair a browser (it works once):")
        let url = lines[1]
        #expect(url.hasPrefix("http://127.0.0.1:8765/pair?code=") && url.count == "http://127.0.0.1:8765/pair?code=".count + 32)
        #expect(r.out.contains("█") && r.out.contains("▀"))
        #expect(!r.out.contains("\u{1b}")) // not a terminal: no colours
        #expect(r.out.contains("a phone cannot reach this link"))
        // The secret was made, private to its owner; a second link is another code.
        let secret = cli.dataDirectory.appendingPathComponent("web-secret").path
        #expect((try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int) == 0o600)
        let again = try await cli.run(["web", "link", "--no-qr"])
        #expect(again.exitCode == 0 && !again.out.contains("█"))
        #expect(again.out.split(separator: "\n")[1] != url)
    }

    @Test("web link: --host, the LAN listener, no TCP listener, and a bad --host, each in one line")
    func options() async throws {
        let cli = try CLI()
        try cli.writeConfig("[web]\nlisten = [\"0.0.0.0:9000\"]\n")
        let lan = try await cli.run(["web", "link", "--no-qr"])
        #expect(lan.exitCode == 0)
        #expect(lan.out.contains(":9000/pair?code=") && !lan.out.contains("a phone cannot reach"))
        let named = try await cli.run(["web", "link", "--no-qr", "--host", "bedside.local"])
        #expect(named.out.contains("http://bedside.local:9000/pair?code="))
        let bad = try await cli.run(["web", "link", "--host", "a/b"])
        #expect(bad.exitCode == 64 && bad.err == "dosetap: --host must be a host name or an address, not 'a/b'\n")
        try cli.writeConfig("[web]\nlisten = []\n")
        let none = try await cli.run(["web", "link"])
        #expect(none.exitCode == 1 && none.err.hasPrefix("dosetap: the dashboard listens on no TCP address") && none.err.filter { $0 == "\n" }.count == 1)
        try cli.writeConfig("[web]\nlisten = [\"localhost:1\"]\n")
        let invalid = try await cli.run(["web", "link"])
        #expect(invalid.exitCode == 1 && invalid.err.contains("is not an IPv4 address"))
    }

    @Test("web open: the browser of $BROWSER gets the loopback link; without one the link is printed")
    func open() async throws {
        let cli = try CLI()
        let script = cli.home.appendingPathComponent("browser.sh")
        try "#!/bin/sh\necho \"$1\" > \"\(cli.home.path)/opened\"\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let r = try await cli.run(["web", "open"], env: ["BROWSER": script.path])
        #expect(r.exitCode == 0 && r.out == "Opened the dashboard in a browser.\n")
        let opened = try String(contentsOf: cli.home.appendingPathComponent("opened"), encoding: .utf8)
        #expect(opened.hasPrefix("http://127.0.0.1:8765/pair?code="))
        let none = try await cli.run(["web", "open"], env: ["BROWSER": "/nonexistent/browser", "PATH": "/nonexistent"])
        #expect(none.exitCode == 0 && none.out.contains("No browser could be started") && none.out.contains("/pair?code="))
    }
}
