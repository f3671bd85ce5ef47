import DoseTapCore
import Foundation
import TOMLKit

/// A configuration problem, in one line: which file, which key, what is wrong.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    /// Control characters (a line break in a quoted value or key) are escaped: the error is one line.
    public init(_ description: String) { self.description = TOMLSubset.oneLine(description) }
}

/// `config.toml`. Every key is optional; a missing file means the defaults (a file that exists but cannot
/// be read is an error, never the defaults).
///
/// ```toml
/// [alarm]
/// time = "06:30"        # warn when the battery will not last until then
///
/// [battery]
/// poll_seconds = 60     # how often to sample while discharging (60…3600)
///
/// [[alerts.command]]    # a usage-alert source fed by a program (as many as wanted)
/// name = "ups"
/// command = ["upsc", "ups@localhost", "battery.charge"]   # argv, never a shell; prints % remaining
/// interval = 300        # seconds between runs (≥ 60)
/// timeout = 10          # killed after this many seconds (1…60): unreadable
/// ```
public struct AgentConfiguration: Sendable, Equatable {
    public var alarm: TimeOfDay?
    public var pollSeconds: Int
    public var alertCommands: [AlertCommandSource]
    /// `[household] name`: how backups name the household ("Jen's family").
    public var householdName: String?
    /// `[household] device`: this machine's name among the household's agents (default: the host name).
    public var deviceName: String?
    /// `[mqtt]`: the household's broker, when one is configured.
    public var mqtt: MQTTSettings?
    /// `[push] token_file`: an ntfy access token for `push:` targets on a protected server.
    public var pushTokenFile: String?
    /// `[push] server`: the only server (`https://ntfy.example.org`) the push token is sent to; required with a token.
    public var pushServer: String?
    /// `[phone]`: the Twilio-compatible account that places `phone:` calls.
    public var phone: PhoneSettings?
    /// `[web] listen`: the TCP addresses of the dashboard (#14); the Unix socket is always there.
    public var webListen: [WebListenAddress] = [WebListenAddress.defaultLoopback]
    /// `[home_assistant]`: MQTT discovery over the household broker (off unless `enabled = true`).
    public var homeAssistant = HomeAssistantSettings()
    /// `[web] rate_burst`: requests a minute a dashboard client is served at once (60, the patient app's rule).
    public var webRateBurst = 60
    /// `[web] rate_refuse_above`: more requests than this in a minute and the client is refused for 5 minutes
    /// (200). Raised only to measure the dashboard under load (docs/performance.md).
    public var webRateRefuseAbove = 200
    public static let webRateRange = 1...100_000_000

    public static let pollRange = 60...3600

    public init(alarm: TimeOfDay? = nil, pollSeconds: Int = 60, alertCommands: [AlertCommandSource] = [],
                householdName: String? = nil, deviceName: String? = nil, mqtt: MQTTSettings? = nil) {
        self.alarm = alarm
        self.pollSeconds = pollSeconds
        self.alertCommands = alertCommands
        self.householdName = householdName
        self.deviceName = deviceName
        self.mqtt = mqtt
    }

    /// This machine's name in the household: `[household] device`, else the host name.
    public var device: String {
        if let deviceName { return deviceName }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The largest config.toml read (a few lines are expected).
    public static let maxFileSize = 1 << 20

    /// Reads `file`. Only "there is no such file" (the path and every directory above it exist up to a
    /// missing name, and no symlink on the way dangles) means the defaults; anything else (a dangling
    /// symlink, a symlink loop, no permission, a directory, a device, a FIFO) is an error naming the path
    /// and the cause.
    public static func load(from file: URL) throws(ConfigurationError) -> AgentConfiguration {
        let path = file.path
        var info = stat()
        if lstat(path, &info) != 0 {
            let error = errno
            guard error == ENOENT else { throw ConfigurationError("\(path): cannot read: \(describe(error))") }
            if let dangling = danglingAncestor(of: path) {
                throw ConfigurationError("\(path): cannot read: \(dangling) is a symlink to nothing")
            }
            return AgentConfiguration()
        }
        if info.st_mode & S_IFMT == S_IFLNK, stat(path, &info) != 0 {
            let error = errno
            throw ConfigurationError("\(path): cannot read: " + (error == ENOENT ? "it is a symlink to nothing" : describe(error)))
        }
        guard info.st_mode & S_IFMT != S_IFDIR else { throw ConfigurationError("\(path): cannot read: it is a directory") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigurationError("\(path): cannot read: not a regular file") }

        // O_NONBLOCK: a FIFO swapped in after the check must not hang the agent; fstat checks what was opened.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ConfigurationError("\(path): cannot read: \(describe(errno))") }
        defer { close(fd) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw ConfigurationError("\(path): cannot read: not a regular file")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError("\(path): cannot read: \(describe(errno))")
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= maxFileSize else {
                throw ConfigurationError("\(path): cannot read: larger than \(maxFileSize / 1024) KiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError("\(path): not UTF-8 text")
        }
        return try parse(text, source: path)
    }

    /// The nearest existing ancestor of a missing path, when it is a symlink whose target is missing.
    private static func danglingAncestor(of path: String) -> String? {
        var current = (path as NSString).deletingLastPathComponent
        while !current.isEmpty {
            var info = stat()
            if lstat(current, &info) == 0 {
                var target = stat()
                return info.st_mode & S_IFMT == S_IFLNK && stat(current, &target) != 0 ? current : nil
            }
            let parent = (current as NSString).deletingLastPathComponent
            if parent == current { return nil }
            current = parent
        }
        return nil
    }

    private static func describe(_ error: Int32) -> String {
        switch error {
        case ELOOP: "a symlink loop"
        case EACCES: "permission denied"
        case ENOTDIR: "a directory in its path is not a directory"
        default: String(cString: strerror(error))
        }
    }

    public static func parse(_ text: String, source: String = "config.toml") throws(ConfigurationError) -> AgentConfiguration {
        if let problem = TOMLSubset.problem(in: text) { throw ConfigurationError("\(source): \(problem)") }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError("\(source): \(error.description) at line \(error.source.begin.line)")
        } catch {
            throw ConfigurationError("\(source): \(error)")
        }
        var config = AgentConfiguration()
        let known: [String: Set<String>] = ["alarm": ["time"], "battery": ["poll_seconds"], "alerts": ["command"],
                                            "household": ["name", "device"], "mqtt": ["url", "username", "password_file", "ca_file"],
                                            "push": ["token_file", "server"], "phone": ["url", "account", "token_file", "from", "household_numbers"],
                                            "web": ["listen", "rate_burst", "rate_refuse_above"], "home_assistant": ["enabled", "discovery_prefix", "buttons"]]
        for key in table.keys {
            guard let allowed = known[key] else { throw ConfigurationError("\(source): unknown section '\(key)'") }
            guard let section = table[key]?.table else {
                throw ConfigurationError("\(source): '\(key)' must be a table ([\(key)])")
            }
            for sub in section.keys where !allowed.contains(sub) {
                throw ConfigurationError("\(source): unknown key '\(key).\(sub)'")
            }
        }
        if let alarm = table["alarm"]?.table, let value = alarm["time"] {
            guard let text = value.string else { throw ConfigurationError("\(source): alarm.time must be a string like \"06:30\"") }
            do {
                config.alarm = try TimeOfDay(parsing: text)
            } catch {
                throw ConfigurationError("\(source): alarm.time: \(error)")
            }
        }
        if let battery = table["battery"]?.table, let value = battery["poll_seconds"] {
            guard let seconds = value.int, pollRange.contains(seconds) else {
                throw ConfigurationError("\(source): battery.poll_seconds must be a whole number from \(pollRange.lowerBound) to \(pollRange.upperBound)")
            }
            config.pollSeconds = seconds
        }
        if let household = table["household"]?.table {
            if let value = household["name"] {
                guard let name = value.string, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 100 else {
                    throw ConfigurationError("\(source): household.name must be a few words (at most 100 characters)")
                }
                config.householdName = name
            }
            if let value = household["device"] {
                guard let name = value.string, let device = try? BackupTarget(parsing: "device:" + name), case .device(let valid) = device else {
                    throw ConfigurationError("\(source): household.device must be a name of letters, digits, - _ and . (at most 64)")
                }
                config.deviceName = valid
            }
        }
        if let mqtt = table["mqtt"]?.table {
            config.mqtt = try MQTTSettings.parse(mqtt, source: source)
        }
        if let homeAssistant = table["home_assistant"]?.table {
            config.homeAssistant = try HomeAssistantSettings.parse(homeAssistant, source: source)
        }
        if let push = table["push"]?.table {
            if let value = push["server"] {
                guard let text = value.string, let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(),
                      scheme == "https" || scheme == "http", parts.host?.isEmpty == false, parts.user == nil, parts.password == nil,
                      parts.query == nil, parts.path.isEmpty || parts.path == "/" else {
                    throw ConfigurationError("\(source): push.server must be the ntfy server the token is for, such as https://ntfy.sh")
                }
                config.pushServer = text
            }
            if let value = push["token_file"] {
                config.pushTokenFile = try secretFile(value.string, key: "push.token_file", source: source)
                // A token with no server named would go wherever a plan points: refused.
                guard config.pushServer != nil else {
                    throw ConfigurationError("\(source): push.token_file needs push.server, the only server the token is sent to (such as https://ntfy.sh)")
                }
            }
        }
        if let phone = table["phone"]?.table {
            config.phone = try PhoneSettings.parse(phone, source: source)
        }
        if let web = table["web"]?.table, let value = web["listen"] {
            guard let list = value.array, list.count <= 8 else {
                throw ConfigurationError("\(source): web.listen must be a list such as [\"127.0.0.1:8765\"] (at most 8)")
            }
            var addresses: [WebListenAddress] = []
            for item in list {
                guard let text = item.string else {
                    throw ConfigurationError("\(source): web.listen: every item must be a string such as \"127.0.0.1:8765\"")
                }
                do {
                    let address = try WebListenAddress(parsing: text)
                    if !addresses.contains(address) { addresses.append(address) }
                } catch {
                    throw ConfigurationError("\(source): web.listen: \(error)")
                }
            }
            config.webListen = addresses
        }
        if let web = table["web"]?.table {
            for (key, path) in [("rate_burst", \AgentConfiguration.webRateBurst), ("rate_refuse_above", \AgentConfiguration.webRateRefuseAbove)] {
                guard let value = web[key] else { continue }
                guard let n = value.int, webRateRange.contains(n) else {
                    throw ConfigurationError("\(source): web.\(key) must be a whole number from 1 to 100000000")
                }
                config[keyPath: path] = n
            }
            guard config.webRateBurst <= config.webRateRefuseAbove else {
                throw ConfigurationError("\(source): web.rate_burst (\(config.webRateBurst)) must not be above web.rate_refuse_above (\(config.webRateRefuseAbove))")
            }
        }
        if let alerts = table["alerts"]?.table, let value = alerts["command"] {
            guard let entries = value.array else {
                throw ConfigurationError("\(source): alerts.command must be a list of [[alerts.command]] tables")
            }
            for (index, entry) in entries.enumerated() {
                guard let command = entry.table else {
                    throw ConfigurationError("\(source): alerts.command entry \(index + 1) must be a [[alerts.command]] table")
                }
                let parsed = try AlertCommandSource.parse(command, number: index + 1, source: source)
                if config.alertCommands.contains(where: { $0.name == parsed.name }) {
                    throw ConfigurationError("\(source): [[alerts.command]] name '\(parsed.name)' is used twice")
                }
                config.alertCommands.append(parsed)
            }
        }
        return config
    }
}

/// One TCP address of the web dashboard (`[web] listen`): an IPv4 address or a bracketed IPv6 address, and
/// a port: `127.0.0.1:8765`, `0.0.0.0:8765` (the LAN), `[::1]:8765`. Host names are refused: the address
/// bound is the one written.
public struct WebListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let defaultPort = 8765
    public static let defaultLoopback = WebListenAddress(host: "127.0.0.1", port: defaultPort)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(parsing text: String) throws(ParseError) {
        let shown = DisplayText.escaped(text)
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ParseError(description: "'\(shown)' is not [IPv6]:PORT")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(hostPart), &address) == 1 else {
                throw ParseError(description: "'\(shown)': '\(DisplayText.escaped(String(hostPart)))' is not an IPv6 address")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ParseError(description: "'\(shown)' is not HOST:PORT such as 127.0.0.1:8765")
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            var address = in_addr()
            guard inet_pton(AF_INET, String(hostPart), &address) == 1 else {
                throw ParseError(description: "'\(shown)': '\(DisplayText.escaped(String(hostPart)))' is not an IPv4 address (host names are not accepted)")
            }
        }
        guard portPart.allSatisfy({ $0.isASCII && $0.isNumber }), portPart.count <= 5, let port = Int(portPart), (1...65535).contains(port) else {
            throw ParseError(description: "'\(shown)': the port must be a number from 1 to 65535")
        }
        self.host = String(hostPart)
        self.port = port
    }

    public var isIPv6: Bool { host.contains(":") }
    /// Listening on every interface (0.0.0.0 or ::): the LAN can reach it.
    public var isWildcard: Bool { host == "0.0.0.0" || host == "::" }
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A usage-alert source fed by a program (`[[alerts.command]]`): run every `interval` seconds without a
/// shell; the first number on its standard output is the percentage *remaining*; killed after `timeout`
/// seconds (then, like a failure, it counts as unreadable).
public struct AlertCommandSource: Sendable, Equatable {
    public var name: String
    public var argv: [String]
    public var interval: Int
    public var timeout: Int

    public static let intervalRange = 60...86_400
    public static let timeoutRange = 1...60

    public init(name: String, argv: [String], interval: Int = 300, timeout: Int = 10) {
        self.name = name
        self.argv = argv
        self.interval = interval
        self.timeout = timeout
    }

    static func parse(_ table: TOMLTable, number: Int, source: String) throws(ConfigurationError) -> AlertCommandSource {
        let allowed: Set<String> = ["name", "command", "interval", "timeout"]
        for key in table.keys where !allowed.contains(key) {
            throw ConfigurationError("\(source): [[alerts.command]] \(number): unknown key '\(key)'")
        }
        guard let name = table["name"]?.string, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 64,
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ConfigurationError("\(source): [[alerts.command]] \(number): name must be a few words (at most 64 characters)")
        }
        guard let list = table["command"]?.array, !list.isEmpty, list.count <= 64 else {
            throw ConfigurationError("\(source): [[alerts.command]] '\(name)': command must be a list such as [\"upsc\", \"ups@localhost\", \"battery.charge\"]")
        }
        var argv: [String] = []
        for item in list {
            guard let text = item.string, !text.isEmpty, !text.contains("\u{0}") else {
                throw ConfigurationError("\(source): [[alerts.command]] '\(name)': every item of command must be a non-empty string")
            }
            argv.append(text)
        }
        var command = AlertCommandSource(name: name, argv: argv)
        if let value = table["interval"] {
            guard let seconds = value.int, intervalRange.contains(seconds) else {
                throw ConfigurationError("\(source): [[alerts.command]] '\(name)': interval must be a whole number of seconds from 60 to 86400")
            }
            command.interval = seconds
        }
        if let value = table["timeout"] {
            guard let seconds = value.int, timeoutRange.contains(seconds) else {
                throw ConfigurationError("\(source): [[alerts.command]] '\(name)': timeout must be a whole number of seconds from 1 to 60")
            }
            command.timeout = seconds
        }
        return command
    }

    /// The percentage remaining in a program's output: its first number (digits, with a decimal point),
    /// 0…100; nil when there is none or it is out of range.
    public static func remaining(in output: String) -> Double? {
        // Escape sequences carry digits that are not the percentage (ESC [ 31 m, ESC ] 0;title BEL): left out whole.
        let plain = TerminalText.plain(output).unicodeScalars
        let scalars = plain[...]
        guard let start = scalars.firstIndex(where: { ("0"..."9").contains($0) }) else { return nil }
        do {
            var end = start
            var seenDot = false
            while end < scalars.endIndex, ("0"..."9").contains(scalars[end]) || (scalars[end] == "." && !seenDot) {
                if scalars[end] == "." { seenDot = true }
                end = scalars.index(after: end)
            }
            // A minus sign right before it makes it negative: out of range.
            if start > scalars.startIndex, scalars[scalars.index(before: start)] == "-" { return nil }
            let text = String(String.UnicodeScalarView(scalars[start..<end]))
            guard let value = Double(text.hasSuffix(".") ? String(text.dropLast()) : text), value.isFinite else { return nil }
            return (0...100).contains(value) ? value : nil
        }
    }
}

/// `[mqtt]` of config.toml: the household's broker. The password is never inline: `password_file` names a
/// file only its owner may read.
public struct MQTTSettings: Sendable, Equatable {
    public var url: String
    public var username: String?
    public var passwordFile: String?
    public var caFile: String?

    public init(url: String, username: String? = nil, passwordFile: String? = nil, caFile: String? = nil) {
        self.url = url
        self.username = username
        self.passwordFile = passwordFile
        self.caFile = caFile
    }

    static func parse(_ table: TOMLTable, source: String) throws(ConfigurationError) -> MQTTSettings {
        guard let url = table["url"]?.string, let parsed = URL(string: url), let scheme = parsed.scheme,
              scheme == "mqtt" || scheme == "mqtts", let host = parsed.host, !host.isEmpty else {
            throw ConfigurationError("\(source): mqtt.url must be mqtt://host:1883 or mqtts://host:8883")
        }
        var settings = MQTTSettings(url: url)
        if let value = table["username"] {
            guard let name = value.string, !name.isEmpty else { throw ConfigurationError("\(source): mqtt.username must be a string") }
            settings.username = name
        }
        if let value = table["password_file"] {
            settings.passwordFile = try secretFile(value.string, key: "mqtt.password_file", source: source)
        }
        if let value = table["ca_file"] {
            guard let path = value.string, path.hasPrefix("/") else { throw ConfigurationError("\(source): mqtt.ca_file must be an absolute path") }
            settings.caFile = path
        }
        return settings
    }
}

/// A file holding a secret (a password, a token): an absolute path that only its owner may read. A secret
/// readable by the group or by others refuses the whole configuration with a one-line message.
func secretFile(_ path: String?, key: String, source: String) throws(ConfigurationError) -> String {
    guard let path, path.hasPrefix("/") else { throw ConfigurationError("\(source): \(key) must be an absolute path") }
    var info = stat()
    guard stat(path, &info) == 0 else {
        throw ConfigurationError("\(source): \(key) \(path) cannot be read: \(String(cString: strerror(errno)))")
    }
    guard info.st_mode & 0o077 == 0 else {
        throw ConfigurationError("\(source): \(key) \(path) is readable by others: chmod 600 \(path)")
    }
    return path
}

/// Reads a secret file (its first line, without the newline); nil with the reason when it cannot.
public func readSecret(_ path: String) -> Result<String, ConfigurationError> {
    guard let data = FileManager.default.contents(atPath: path), data.count <= 4096 else {
        return .failure(ConfigurationError("\(path) cannot be read (or is over 4 KiB)"))
    }
    let text = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    guard !text.isEmpty else { return .failure(ConfigurationError("\(path) is empty")) }
    return .success(text)
}

/// `[phone]` of config.toml: a Twilio-compatible REST API that places the automated backup calls.
/// ```toml
/// [phone]
/// url = "https://api.twilio.com"      # the API's base URL
/// account = "AC0123…"                 # the account SID
/// token_file = "/home/jen/.config/dosetap/twilio-token"   # the auth token, chmod 600
/// from = "+15550001111"               # the calling number
/// household_numbers = ["+15551234567"] # numbers this account may call for another device's alarm (default none)
/// ```
public struct PhoneSettings: Sendable, Equatable {
    public var url: String
    public var account: String
    public var tokenFile: String
    public var from: String
    /// In E.164: the only numbers this device calls when it backs up another device's alarm (its own alarms'
    /// phone targets are always called).
    public var householdNumbers: [String]

    public init(url: String, account: String, tokenFile: String, from: String, householdNumbers: [String] = []) {
        self.url = url
        self.account = account
        self.tokenFile = tokenFile
        self.from = from
        self.householdNumbers = householdNumbers
    }

    static func parse(_ table: TOMLTable, source: String) throws(ConfigurationError) -> PhoneSettings {
        guard let url = table["url"]?.string, let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "https" || scheme == "http", parsed.host?.isEmpty == false else {
            throw ConfigurationError("\(source): phone.url must be the API's http(s) base URL, such as https://api.twilio.com")
        }
        guard let account = table["account"]?.string, !account.isEmpty, account.count <= 64,
              account.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) else {
            throw ConfigurationError("\(source): phone.account must be the account SID (letters and digits)")
        }
        let token = try secretFile(table["token_file"]?.string, key: "phone.token_file", source: source)
        guard let fromText = table["from"]?.string, let from = try? BackupTarget(parsing: "phone:" + fromText), case .phone(let number) = from else {
            throw ConfigurationError("\(source): phone.from must be the calling number, such as +15550001111")
        }
        var numbers: [String] = []
        if let value = table["household_numbers"] {
            guard let list = value.array, list.count <= 32 else {
                throw ConfigurationError("\(source): phone.household_numbers must be a list of numbers such as [\"+15551234567\"] (at most 32)")
            }
            for item in list {
                guard let text = item.string, let target = try? BackupTarget(parsing: "phone:" + text), case .phone(let allowed) = target else {
                    throw ConfigurationError("\(source): phone.household_numbers: every item must be a phone number such as \"+15551234567\"")
                }
                if !numbers.contains(allowed) { numbers.append(allowed) }
            }
        }
        return PhoneSettings(url: url.hasSuffix("/") ? String(url.dropLast()) : url, account: account, tokenFile: token, from: number,
                             householdNumbers: numbers)
    }
}
