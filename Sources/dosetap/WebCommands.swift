import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapWeb
import Foundation

struct WebCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "The local web dashboard: pair a browser or a phone.",
        subcommands: [Link.self, Open.self]
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

    struct Open: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open the dashboard in this machine's browser, already paired ($BROWSER, else xdg-open).")

        @OptionGroup var location: LocationOptions

        func run() throws {
            let (url, _) = try pairingLink(location: location, host: nil, loopback: true)
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
                process.arguments = Array(argv.dropFirst()) + [url]
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
