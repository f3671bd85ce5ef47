import DoseTapCore
import Foundation
import TOMLKit

/// `[[alerts.command]]`: usage-alert sources fed by programs.
enum AlertsSection: ConfigSection {
    static let name = "alerts"
    static let keys: Set<String> = ["command"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["command"] {
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
    }
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
