import DoseTapCore
import Foundation
import TOMLKit

/// `config.toml`. Every key is optional; a missing file means the defaults (a file that exists but cannot
/// be read is an error, never the defaults).
///
/// ```toml
/// [alarm]
/// time = "06:30"        # warn when the battery will not last until then
///
/// [battery]
/// poll_seconds = 60     # how often to sample while discharging (60…3600)
///
/// [[alerts.command]]    # a usage-alert source fed by a program (as many as wanted)
/// name = "ups"
/// command = ["upsc", "ups@localhost", "battery.charge"]   # argv, never a shell; prints % remaining
/// interval = 300        # seconds between runs (≥ 60)
/// timeout = 10          # killed after this many seconds (1…60): unreadable
/// ```
public struct AgentConfiguration: Sendable, Equatable {
    public var alarm: TimeOfDay?
    public var pollSeconds: Int
    public var alertCommands: [AlertCommandSource]
    /// `[household] name`: how backups name the household ("Jen's family").
    public var householdName: String?
    /// `[household] device`: this machine's name among the household's agents (default: the host name).
    public var deviceName: String?
    /// `[mqtt]`: the household's broker, when one is configured.
    public var mqtt: MQTTSettings?
    /// `[push] token_file`: an ntfy access token for `push:` targets on a protected server.
    public var pushTokenFile: String?
    /// `[push] server`: the only server (`https://ntfy.example.org`) the push token is sent to; required with a token.
    public var pushServer: String?
    /// `[phone]`: the Twilio-compatible account that places `phone:` calls.
    public var phone: PhoneSettings?
    /// `[web] listen`: the TCP addresses of the dashboard (#14); the Unix socket is always there.
    public var webListen: [WebListenAddress] = [WebListenAddress.defaultLoopback]
    /// `[home_assistant]`: MQTT discovery over the household broker (off unless `enabled = true`).
    public var homeAssistant = HomeAssistantSettings()
    /// `[web] rate_burst`: requests a minute a dashboard client is served at once (60, the patient app's rule).
    public var webRateBurst = 60
    /// `[web] rate_refuse_above`: more requests than this in a minute and the client is refused for 5 minutes
    /// (200). Raised only to measure the dashboard under load (docs/performance.md).
    public var webRateRefuseAbove = 200
    public static let webRateRange = 1...100_000_000

    public static let pollRange = 60...3600
    /// `[battery] guard`: what happens at an alarm's deadline when the machine is still awake on its battery (#52 §3).
    public var sleepGuard: SleepGuardMode = .sleep

    public init(alarm: TimeOfDay? = nil, pollSeconds: Int = 60, alertCommands: [AlertCommandSource] = [],
                householdName: String? = nil, deviceName: String? = nil, mqtt: MQTTSettings? = nil) {
        self.alarm = alarm
        self.pollSeconds = pollSeconds
        self.alertCommands = alertCommands
        self.householdName = householdName
        self.deviceName = deviceName
        self.mqtt = mqtt
    }

    /// This machine's name in the household: `[household] device`, else the host name.
    public var device: String {
        if let deviceName { return deviceName }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func parse(_ text: String, source: String = "config.toml") throws(ConfigurationError) -> AgentConfiguration {
        if let problem = TOMLSubset.problem(in: text) { throw ConfigurationError("\(source): \(problem)") }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError("\(source): \(error.description) at line \(error.source.begin.line)")
        } catch {
            throw ConfigurationError("\(source): \(error)")
        }
        for key in table.keys {
            guard let allowed = ConfigSections.known[key] else { throw ConfigurationError("\(source): unknown section '\(key)'") }
            guard let section = table[key]?.table else {
                throw ConfigurationError("\(source): '\(key)' must be a table ([\(key)])")
            }
            for sub in section.keys where !allowed.contains(sub) {
                throw ConfigurationError("\(source): unknown key '\(key).\(sub)'")
            }
        }
        var config = AgentConfiguration()
        for section in ConfigSections.all {
            if let values = table[section.name]?.table { try section.read(values, into: &config, source: source) }
        }
        return config
    }
}
