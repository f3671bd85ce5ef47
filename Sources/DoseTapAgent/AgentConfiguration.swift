import DoseTapCore
import Foundation
import TOMLKit

/// A configuration problem, in one line: which file, which key, what is wrong.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    /// Control characters (a line break in a quoted value or key) are escaped: the error is one line.
    public init(_ description: String) { self.description = TOMLSubset.oneLine(description) }
}

/// `config.toml`. Every key is optional; a missing file means the defaults.
///
/// ```toml
/// [alarm]
/// time = "06:30"        # warn when the battery will not last until then
///
/// [battery]
/// poll_seconds = 60     # how often to sample while discharging (60…3600)
/// ```
public struct AgentConfiguration: Sendable, Equatable {
    public var alarm: TimeOfDay?
    public var pollSeconds: Int

    public static let pollRange = 60...3600

    public init(alarm: TimeOfDay? = nil, pollSeconds: Int = 60) {
        self.alarm = alarm
        self.pollSeconds = pollSeconds
    }

    public static func load(from file: URL) throws(ConfigurationError) -> AgentConfiguration {
        guard FileManager.default.fileExists(atPath: file.path) else { return AgentConfiguration() }
        let text: String
        do {
            text = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw ConfigurationError("\(file.path): cannot read: \(error.localizedDescription)")
        }
        return try parse(text, source: file.path)
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
        var config = AgentConfiguration()
        let known: [String: Set<String>] = ["alarm": ["time"], "battery": ["poll_seconds"]]
        for key in table.keys {
            guard let allowed = known[key] else { throw ConfigurationError("\(source): unknown section '\(key)'") }
            guard let section = table[key]?.table else {
                throw ConfigurationError("\(source): '\(key)' must be a table ([\(key)])")
            }
            for sub in section.keys where !allowed.contains(sub) {
                throw ConfigurationError("\(source): unknown key '\(key).\(sub)'")
            }
        }
        if let alarm = table["alarm"]?.table, let value = alarm["time"] {
            guard let text = value.string else { throw ConfigurationError("\(source): alarm.time must be a string like \"06:30\"") }
            do {
                config.alarm = try TimeOfDay(parsing: text)
            } catch {
                throw ConfigurationError("\(source): alarm.time: \(error)")
            }
        }
        if let battery = table["battery"]?.table, let value = battery["poll_seconds"] {
            guard let seconds = value.int, pollRange.contains(seconds) else {
                throw ConfigurationError("\(source): battery.poll_seconds must be a whole number from \(pollRange.lowerBound) to \(pollRange.upperBound)")
            }
            config.pollSeconds = seconds
        }
        return config
    }
}
