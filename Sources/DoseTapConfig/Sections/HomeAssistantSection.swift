import DoseTapCore
import Foundation
import TOMLKit

/// `[home_assistant]`: MQTT discovery over the household broker.
enum HomeAssistantSection: ConfigSection {
    static let name = "home_assistant"
    static let keys: Set<String> = ["enabled", "discovery_prefix", "buttons"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        config.homeAssistant = try HomeAssistantSettings.parse(table, source: source)
    }
}

/// A Home Assistant button (docs/home-assistant.md). Anyone who may publish on the broker can press it.
public enum HomeAssistantButton: String, Sendable, Equatable, Hashable, CaseIterable, Comparable {
    /// Take the next dose (Dose 1 or Dose 2), refused like any other input.
    case take
    /// Snooze the ringing alarm, or else tonight's Dose 2 reminder.
    case snooze
    /// Stop the ringing alarm.
    case stop

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// `[home_assistant]` of config.toml: MQTT discovery over the household broker (`[mqtt]`).
/// ```toml
/// [home_assistant]
/// enabled = true
/// discovery_prefix = "homeassistant"   # Home Assistant's discovery prefix (its default)
/// buttons = ["stop"]                   # which of "take", "snooze", "stop" to expose; none by default
/// ```
public struct HomeAssistantSettings: Sendable, Equatable {
    public var enabled: Bool
    public var discoveryPrefix: String
    public var buttons: Set<HomeAssistantButton>

    public static let defaultPrefix = "homeassistant"
    public static let maximumPrefix = 64

    public init(enabled: Bool = false, discoveryPrefix: String = defaultPrefix, buttons: Set<HomeAssistantButton> = []) {
        self.enabled = enabled
        self.discoveryPrefix = discoveryPrefix
        self.buttons = buttons
    }

    /// A discovery prefix: 1…64 ASCII letters, digits, `_` and `-`, in levels separated by single `/`. No
    /// wildcard (`+`, `#`), no space or control character, no empty level.
    public static func validPrefix(_ text: String) -> String? {
        guard !text.isEmpty else { return "is empty" }
        guard text.utf8.count <= maximumPrefix else { return "is longer than \(maximumPrefix) characters" }
        if text.contains("+") || text.contains("#") { return "contains an MQTT wildcard (+ or #)" }
        for scalar in text.unicodeScalars {
            guard scalar.isASCII else { return "is not ASCII" }
            let ok = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "_" || scalar == "-" || scalar == "/"
            guard ok else { return "may hold only letters, digits, _ - and /" }
        }
        if text.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "has an empty level (a leading, trailing or double /)"
        }
        return nil
    }

    static func parse(_ table: TOMLTable, source: String) throws(ConfigurationError) -> HomeAssistantSettings {
        var settings = HomeAssistantSettings()
        if let value = table["enabled"] {
            guard let flag = value.bool else { throw ConfigurationError("\(source): home_assistant.enabled must be true or false") }
            settings.enabled = flag
        }
        if let value = table["discovery_prefix"] {
            guard let text = value.string else {
                throw ConfigurationError("\(source): home_assistant.discovery_prefix must be a string such as \"homeassistant\"")
            }
            if let problem = validPrefix(text) {
                throw ConfigurationError("\(source): home_assistant.discovery_prefix '\(DisplayText.escaped(text, maxLength: 80))' \(problem)")
            }
            settings.discoveryPrefix = text
        }
        if let value = table["buttons"] {
            guard let list = value.array, list.count <= HomeAssistantButton.allCases.count * 2 else {
                throw ConfigurationError("\(source): home_assistant.buttons must be a list such as [\"stop\"] (take, snooze, stop)")
            }
            for item in list {
                guard let text = item.string, let button = HomeAssistantButton(rawValue: text) else {
                    let shown = item.string.map { DisplayText.escaped($0, maxLength: 40) } ?? "a value that is not a string"
                    throw ConfigurationError("\(source): home_assistant.buttons: '\(shown)' is not one of take, snooze, stop")
                }
                settings.buttons.insert(button)
            }
        }
        return settings
    }
}
