import DoseTapCore
import Foundation
import TOMLKit

/// `[web]`: the dashboard's TCP addresses and its per-client rate limit.
enum WebSection: ConfigSection {
    static let name = "web"
    static let keys: Set<String> = ["listen", "rate_burst", "rate_refuse_above"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["listen"] {
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
        for (key, path) in [("rate_burst", \AgentConfiguration.webRateBurst), ("rate_refuse_above", \AgentConfiguration.webRateRefuseAbove)] {
            guard let value = table[key] else { continue }
            guard let n = value.int, AgentConfiguration.webRateRange.contains(n) else {
                throw ConfigurationError("\(source): web.\(key) must be a whole number from 1 to 100000000")
            }
            config[keyPath: path] = n
        }
        guard config.webRateBurst <= config.webRateRefuseAbove else {
            throw ConfigurationError("\(source): web.rate_burst (\(config.webRateBurst)) must not be above web.rate_refuse_above (\(config.webRateRefuseAbove))")
        }
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
