import DoseTapCore
import Foundation
import TOMLKit

/// `[phone]`: the account that places `phone:` calls.
enum PhoneSection: ConfigSection {
    static let name = "phone"
    static let keys: Set<String> = ["url", "account", "token_file", "from", "household_numbers"]

    static func read(_ table: TOMLTable, into config: inout AgentConfiguration, source: String) throws(ConfigurationError) {
        config.phone = try PhoneSettings.parse(table, source: source)
    }
}

/// `[phone]` of config.toml: a Twilio-compatible REST API that places the automated backup calls.
/// ```toml
/// [phone]
/// url = "https://api.twilio.com"      # the API's base URL
/// account = "AC0123…"                 # the account SID
/// token_file = "/home/jen/.config/dosetap/twilio-token"   # the auth token, chmod 600
/// from = "+15550001111"               # the calling number
/// household_numbers = ["+15551234567"] # numbers this account may call for another device's alarm (default none)
/// ```
public struct PhoneSettings: Sendable, Equatable {
    public var url: String
    public var account: String
    public var tokenFile: String
    public var from: String
    /// In E.164: the only numbers this device calls when it backs up another device's alarm (its own alarms'
    /// phone targets are always called).
    public var householdNumbers: [String]

    public init(url: String, account: String, tokenFile: String, from: String, householdNumbers: [String] = []) {
        self.url = url
        self.account = account
        self.tokenFile = tokenFile
        self.from = from
        self.householdNumbers = householdNumbers
    }

    static func parse(_ table: TOMLTable, source: String) throws(ConfigurationError) -> PhoneSettings {
        guard let url = table["url"]?.string, let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "https" || scheme == "http", parsed.host?.isEmpty == false else {
            throw ConfigurationError("\(source): phone.url must be the API's http(s) base URL, such as https://api.twilio.com")
        }
        guard let account = table["account"]?.string, !account.isEmpty, account.count <= 64,
              account.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) else {
            throw ConfigurationError("\(source): phone.account must be the account SID (letters and digits)")
        }
        let token = try secretFile(table["token_file"]?.string, key: "phone.token_file", source: source)
        guard let fromText = table["from"]?.string, let from = try? BackupTarget(parsing: "phone:" + fromText), case .phone(let number) = from else {
            throw ConfigurationError("\(source): phone.from must be the calling number, such as +15550001111")
        }
        var numbers: [String] = []
        if let value = table["household_numbers"] {
            guard let list = value.array, list.count <= 32 else {
                throw ConfigurationError("\(source): phone.household_numbers must be a list of numbers such as [\"+15551234567\"] (at most 32)")
            }
            for item in list {
                guard let text = item.string, let target = try? BackupTarget(parsing: "phone:" + text), case .phone(let allowed) = target else {
                    throw ConfigurationError("\(source): phone.household_numbers: every item must be a phone number such as \"+15551234567\"")
                }
                if !numbers.contains(allowed) { numbers.append(allowed) }
            }
        }
        return PhoneSettings(url: url.hasSuffix("/") ? String(url.dropLast()) : url, account: account, tokenFile: token, from: number,
                             householdNumbers: numbers)
    }
}
