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

    @Test("web open: the browser of $BROWSER gets a page only the user can read that leads to the loopback link; without one the link is printed")
    func open() async throws {
        let cli = try CLI()
        let script = cli.home.appendingPathComponent("browser.sh")
        try "#!/bin/sh\necho \"$*\" > \"\(cli.home.path)/opened\"\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let r = try await cli.run(["web", "open"], env: ["BROWSER": script.path, "XDG_RUNTIME_DIR": runtime.path])
        #expect(r.exitCode == 0 && r.out == "Opened the dashboard in a browser.\n", "\(r.err)")
        let opened = try String(contentsOf: cli.home.appendingPathComponent("opened"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // #25 §5: the code was on the browser's command line, readable in /proc by every local user.
        #expect(!opened.contains("code="), "\(opened)")
        #expect(opened.hasPrefix("file://\(runtime.path)/dosetap/pair-") && opened.hasSuffix(".html"), "\(opened)")
        let page = try #require(URL(string: opened))
        var info = stat()
        #expect(stat(page.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(page.deletingLastPathComponent().path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(html.contains("http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:8765/pair?code="))
        // A runtime folder others may enter is not used.
        let open = cli.home.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        chmod(open.path, 0o777)
        _ = try await cli.run(["web", "open"], env: ["BROWSER": script.path, "XDG_RUNTIME_DIR": open.path])
        let second = try String(contentsOf: cli.home.appendingPathComponent("opened"), encoding: .utf8)
        #expect(!second.contains(open.path) && !second.contains("code="), "\(second)")
        let none = try await cli.run(["web", "open"], env: ["BROWSER": "/nonexistent/browser", "PATH": "/nonexistent", "XDG_RUNTIME_DIR": runtime.path])
        #expect(none.exitCode == 0 && none.out.contains("No browser could be started") && none.out.contains("/pair?code="))
    }

    @Test("web revoke: a new web-secret (0600), said in one line")
    func revoke() async throws {
        let cli = try CLI()
        _ = try await cli.run(["web", "link", "--no-qr"])
        let file = cli.dataDirectory.appendingPathComponent("web-secret")
        let before = try String(contentsOf: file, encoding: .utf8)
        let r = try await cli.run(["web", "revoke"])
        #expect(r.exitCode == 0 && r.out == "Signed every browser out: each must pair again (dosetap web link, or dosetap web open on this machine).\n",
                "\(r.err)")
        let after = try String(contentsOf: file, encoding: .utf8)
        #expect(after != before && after.count == 65)
        var info = stat()
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }
}
