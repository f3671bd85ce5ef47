import TOMLKit

/// One `[section]` of config.toml: its name, the keys it takes, and how it is read into the configuration.
/// A section is a file of its own; the known-keys check is derived from `ConfigSections.all`.
protocol ConfigSection: Sendable {
    static var name: String { get }
    static var keys: Set<String> { get }
    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError)
}

enum ConfigSections {
    /// Every section, in the order they are read (the first problem found is the one reported).
    static var all: [any ConfigSection.Type] {
        [
            AlarmSection.self, BatterySection.self, HouseholdSection.self, MQTTSection.self, HomeAssistantSection.self,
            PushSection.self, PhoneSection.self, WebSection.self, AlertsSection.self,
        ]
    }

    /// The keys each section takes: anything else in config.toml is an error naming it.
    static let known: [String: Set<String>] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.keys) })
}
