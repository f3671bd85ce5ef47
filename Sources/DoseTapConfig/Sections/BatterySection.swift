import DoseTapCore
import Foundation
import TOMLKit

/// `[battery] poll_seconds`: how often the battery is sampled while it discharges; `guard`: what happens at an alarm's
/// deadline when the machine is still awake on its battery ("sleep", "nudge" or "off"; docs/alarms.md).
enum BatterySection: ConfigSection {
    static let name = "battery"
    static let keys: Set<String> = ["poll_seconds", "guard"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["poll_seconds"] {
            guard let seconds = value.int, AgentConfiguration.pollRange.contains(seconds) else {
                throw ConfigurationError("\(source): battery.poll_seconds must be a whole number from \(AgentConfiguration.pollRange.lowerBound) to \(AgentConfiguration.pollRange.upperBound)")
            }
            config.pollSeconds = seconds
        }
        if let value = table["guard"] {
            let choices = SleepGuardMode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            guard let text = value.string, let mode = SleepGuardMode(rawValue: text) else {
                throw ConfigurationError("\(source): battery.guard must be one of \(choices)")
            }
            config.sleepGuard = mode
        }
    }
}
