import DoseTapCore
import Foundation
import TOMLKit

/// `[alarm] time`: the daily alarm config.toml once held, imported as alarm `config` (docs/configuration.md).
enum AlarmSection: ConfigSection {
    static let name = "alarm"
    static let keys: Set<String> = ["time"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["time"] {
            guard let text = value.string else { throw ConfigurationError("\(source): alarm.time must be a string like \"06:30\"") }
            do {
                config.alarm = try TimeOfDay(parsing: text)
            } catch {
                throw ConfigurationError("\(source): alarm.time: \(error)")
            }
        }
    }
}
