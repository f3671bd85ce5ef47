import DoseTapCore
import Foundation
import TOMLKit

/// `[battery] poll_seconds`: how often the battery is sampled while it discharges.
enum BatterySection: ConfigSection {
    static let name = "battery"
    static let keys: Set<String> = ["poll_seconds"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["poll_seconds"] {
            guard let seconds = value.int, AgentConfiguration.pollRange.contains(seconds) else {
                throw ConfigurationError("\(source): battery.poll_seconds must be a whole number from \(AgentConfiguration.pollRange.lowerBound) to \(AgentConfiguration.pollRange.upperBound)")
            }
            config.pollSeconds = seconds
        }
    }
}
