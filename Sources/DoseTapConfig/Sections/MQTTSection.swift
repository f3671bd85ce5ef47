import DoseTapCore
import Foundation
import TOMLKit

/// `[mqtt]`: the household's broker.
enum MQTTSection: ConfigSection {
    static let name = "mqtt"
    static let keys: Set<String> = ["url", "username", "password_file", "ca_file"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        config.mqtt = try MQTTSettings.parse(table, source: source)
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
