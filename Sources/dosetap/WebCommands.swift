import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapWeb
import Foundation

struct WebCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "The local web dashboard: pair a browser or a phone.",
        subcommands: [Link.self, Open.self, Revoke.self]
    )
}

extension WebCommand {
    /// The link that pairs one browser: `http://HOST:PORT/pair?code=…`, valid once, for 10 minutes.
    static func pairingLink(location: some Locating, host: String?, loopback: Bool) throws -> (url: String, note: String?) {
        let configuration = try failing { try AgentConfiguration.load(from: location.paths.configFile) }
        guard let address = configuration.webListen.first(where: { !loopback || $0.isLoopback || $0.isWildcard }) else {
            throw CLIError(configuration.webListen.isEmpty
                ? "the dashboard listens on no TCP address ([web] listen = [] in \(location.paths.configFile.path)): use its Unix socket"
                : "the dashboard does not listen on this machine's loopback ([web] listen in \(location.paths.configFile.path))")
        }
        let secret = try failing { try WebSecret.loadOrCreate(dataDirectory: location.paths.dataDirectory) }
        let code = WebTokens(secret: secret).pairingCode(now: Date())
        var note: String?
        var shownHost = address.host
        if let host {
            shownHost = host
        } else if loopback {
            shownHost = address.isIPv6 ? "::1" : "127.0.0.1"
        } else if address.isWildcard {
            if let lan = NetworkAddresses.firstLAN(ipv6: address.isIPv6) {
                shownHost = lan
            } else {
                shownHost = address.isIPv6 ? "::1" : "127.0.0.1"
                note = "No network address found: the link works on this machine only."
            }
        } else if address.isLoopback {
            note = "The dashboard listens on \(address) only: a phone cannot reach this link. To open it to the LAN, set [web] listen = [\"0.0.0.0:\(address.port)\"] in config.toml (see docs/web.md)."
        }
        let hostPart = shownHost.contains(":") ? "[\(shownHost)]" : shownHost
        return ("http://\(hostPart):\(address.port)/pair?code=\(code)", note)
    }

    struct Link: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "link",
            abstract: "Print a one-time link (and a QR code) that pairs a browser; it works once, within 10 minutes.")

        @Option(help: "The host name or address to put in the link (default: the [web] listen address, or this machine's LAN address when it listens on every interface).")
        var host: String?

        @Flag(help: "Do not print the QR code.")
        var noQR = false

        @OptionGroup var location: LocationOptions

        func run() throws {
            if let host, host.isEmpty || host.contains(where: { $0.isWhitespace || "/?#@".contains($0) }) {
                throw ValidationError("--host must be a host name or an address, not '\(DisplayText.escaped(host))'")
            }
            let (url, note) = try pairingLink(location: location, host: host, loopback: false)
            printLine("Open this link within 10 minutes to pair a browser (it works once):")
            printLine(url)
            if !noQR {
                let qr = try failing { try QRCode(text: url) }
                printLine("")
                printLine(qr.terminalText(ansi: isatty(STDOUT_FILENO) == 1))
            }
            if let note { printLine(note) }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Sign every browser out at once (after a lost phone or a stolen cookie): a new web secret.",
            discussion: """
                Every session and every pairing code not yet used stop working at once, in the running agent too (no \
                restart). Pair again with dosetap web link or dosetap web open.
                """)

        @OptionGroup var location: DataOptions

        func run() throws {
            try failing { try WebSecret.revoke(dataDirectory: location.paths.dataDirectory) }
            printLine("Signed every browser out: each must pair again (dosetap web link, or dosetap web open on this machine).")
        }
    }

    struct Open: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "open",
            abstract: "Open the dashboard in this machine's browser, already paired ($BROWSER, else xdg-open).",
            discussion: """
                The browser is handed a page only you can read (in $XDG_RUNTIME_DIR/dosetap, mode 0600) that leads it \
                to the one-time pairing link; the link itself never appears on a command line, which every user \
                of the machine can read in /proc.
                """)

        @OptionGroup var location: LocationOptions

        func run() throws {
            let (url, _) = try pairingLink(location: location, host: nil, loopback: true)
            let page = try failing { try PairingPage.write(url: url) }
            let environment = ProcessInfo.processInfo.environment
            var candidates: [[String]] = []
            if let browser = environment["BROWSER"], !browser.isEmpty {
                candidates += browser.split(separator: ":").map { $0.split(separator: " ").map(String.init) }
            }
            candidates.append(["xdg-open"])
            for argv in candidates where !argv.isEmpty {
                guard let executable = findExecutable(argv[0]) else { continue }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = Array(argv.dropFirst()) + [page.absoluteString]
                do {
                    try process.run()
                    process.waitUntilExit()
                    if process.terminationStatus == 0 {
                        printLine("Opened the dashboard in a browser.")
                        return
                    }
                } catch {
                    continue
                }
            }
            printLine("No browser could be started: open this link within 10 minutes (it works once):")
            printLine(url)
        }

        func findExecutable(_ name: String) -> String? {
            if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
            for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
                let path = "\(dir)/\(name)"
                if access(path, X_OK) == 0 { return path }
            }
            return nil
        }
    }
}

/// This machine's addresses, for a link a phone on the LAN can open.
enum NetworkAddresses {
    static func firstLAN(ipv6: Bool) -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0,
                  entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == (ipv6 ? AF_INET6 : AF_INET) else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if ipv6, text.hasPrefix("fe80") { continue }
            return text
        }
        return nil
    }
}

/// The page `web open` hands the browser (#25 §5): a file only this user can read, that sends the browser on to
/// the pairing link. On the browser's command line (world-readable in `/proc/PID/cmdline`) a link that pairs by
/// itself was redeemed first by another local user; a file path pairs nothing.
enum PairingPage {
    /// Older pages than this are removed (their code expired anyway).
    static let lifetime: TimeInterval = 10 * 60

    /// Writes the page into a folder only this user may enter and returns its `file://` URL.
    static func write(url: String, now: Date = Date()) throws -> URL {
        let folder = try privateFolder()
        removeStale(in: folder, now: now)
        var random = [UInt8](repeating: 0, count: 12)
        for i in random.indices { random[i] = UInt8.random(in: 0...255) }
        let name = "pair-" + random.map { String(format: "%02x", $0) }.joined() + ".html"
        let path = folder.appendingPathComponent(name).path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError("cannot write the pairing page \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let escaped = url.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0;url=\(escaped)"><title>DoseTap</title></head>
            <body><p><a href="\(escaped)">Open the DoseTap dashboard</a></p></body></html>

            """
        let bytes = Array(html.utf8)
        guard fchmod(fd, 0o600) == 0, bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            unlink(path)
            throw CLIError("cannot write the pairing page \(path): \(String(cString: strerror(errno)))")
        }
        return URL(fileURLWithPath: path)
    }

    /// `$XDG_RUNTIME_DIR/dosetap` (a tmpfs of this user's, gone at logout), else a folder of our own in the
    /// temporary directory; created 0700, and refused when it is not ours or others may enter it.
    static func privateFolder() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        var base = environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        if let candidate = base {
            var info = stat()
            if stat(candidate, &info) != 0 || info.st_uid != getuid() || info.st_mode & 0o077 != 0 { base = nil }
        }
        let folder = base.map { "\($0)/dosetap" } ?? "\(NSTemporaryDirectory())/dosetap-\(getuid())"
        if mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw CLIError("cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
            throw CLIError("\(folder) is not a folder of yours: the pairing page is not written there")
        }
        if info.st_mode & 0o077 != 0, chmod(folder, 0o700) != 0 {
            throw CLIError("\(folder) is open to others and cannot be closed: the pairing page is not written there")
        }
        return URL(fileURLWithPath: folder, isDirectory: true)
    }

    static func removeStale(in folder: URL, now: Date) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix("pair-") && name.hasSuffix(".html") {
            let path = folder.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if now.timeIntervalSince1970 - Double(info.st_mtim.tv_sec) > lifetime { unlink(path) }
        }
    }
}
