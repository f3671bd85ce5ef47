import DoseTapCore
import Foundation
import TOMLKit

/// `[push]`: the ntfy token for `push:` targets, and the only server it is sent to.
enum PushSection: ConfigSection {
    static let name = "push"
    static let keys: Set<String> = ["token_file", "server"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["server"] {
            guard let text = value.string, let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(),
                  scheme == "https" || scheme == "http", parts.host?.isEmpty == false, parts.user == nil, parts.password == nil,
                  parts.query == nil, parts.path.isEmpty || parts.path == "/" else {
                throw ConfigurationError("\(source): push.server must be the ntfy server the token is for, such as https://ntfy.sh")
            }
            config.pushServer = text
        }
        if let value = table["token_file"] {
            config.pushTokenFile = try secretFile(value.string, key: "push.token_file", source: source)
            // A token with no server named would go wherever a plan points: refused.
            guard config.pushServer != nil else {
                throw ConfigurationError("\(source): push.token_file needs push.server, the only server the token is sent to (such as https://ntfy.sh)")
            }
        }
    }
}
