import DoseTapCore
import Foundation
import TOMLKit

/// `[household]`: how backups name the household, and this machine's name among its agents.
enum HouseholdSection: ConfigSection {
    static let name = "household"
    static let keys: Set<String> = ["name", "device"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        if let value = table["name"] {
            guard let name = value.string, !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 100 else {
                throw ConfigurationError("\(source): household.name must be a few words (at most 100 characters)")
            }
            config.householdName = name
        }
        if let value = table["device"] {
            guard let name = value.string, let device = try? BackupTarget(parsing: "device:" + name), case .device(let valid) = device else {
                throw ConfigurationError("\(source): household.device must be a name of letters, digits, - _ and . (at most 64)")
            }
            config.deviceName = valid
        }
    }
}
