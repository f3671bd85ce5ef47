import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

/// `dosetap alerts …`: low-battery alerts for every battery (#13): thresholds, per-source overrides,
/// snooze, templates, history.
struct AlertsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alerts",
        abstract: "Low-battery alerts for every battery: thresholds, per-source settings, snooze, templates, history.",
        subcommands: [Show.self, SetThresholds.self, Source.self, Snooze.self, History.self, Template.self]
    )

    /// The use cases, with the command sources of config.toml (a config that cannot be read lists none:
    /// the agent, which must read it, says why).
    static func useCases(_ location: some Locating) -> AlertUseCases {
        let commands = (try? AgentConfiguration.load(from: location.paths.configFile))?.alertCommands.map(\.name) ?? []
        return AlertUseCases(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock(),
                             supplies: MachinePorts.supplies, commands: commands)
    }

    /// A percentage threshold: a whole number in ASCII digits.
    struct Percent: ExpressibleByArgument, CustomStringConvertible {
        var value: Int
        init?(argument: String) {
            guard let n = AlertUseCases.percent(argument) else { return nil }
            value = n
        }
        var description: String { "\(value)" }
    }

    /// The ranges are usage errors (64); whether warning stays below critical depends on what is stored
    /// (an error, 1, from the use case). The messages are the use case's (the dashboard gives the same).
    static func checkRanges(warning: Percent?, critical: Percent?) throws {
        do { try AlertUseCases.checkRanges(warning: warning?.value, critical: critical?.value) } catch {
            throw ValidationError("\(error)")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "The thresholds, the snooze, and every battery with its usage and state.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let overview = try failing { try AlertsCommand.useCases(location).overview() }
            if json {
                printLine(overview.json(now: Date(), in: SystemTimeZone.current).text)
            } else {
                overview.lines(now: Date(), in: SystemTimeZone.current).forEach(printLine)
            }
        }
    }

    struct SetThresholds: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "The global thresholds, in percent used (warning 10…99, critical 5…95, warning below critical).")
        @Option(help: "Warn at this percentage used (default 85).") var warning: Percent?
        @Option(help: "Critical at this percentage used (default 95).") var critical: Percent?
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if warning == nil && critical == nil { throw ValidationError("nothing to change: give --warning, --critical or both") }
            try AlertsCommand.checkRanges(warning: warning, critical: critical)
        }

        func run() throws {
            let settings = try failing { try AlertsCommand.useCases(location).setThresholds(warning: warning?.value, critical: critical?.value) }
            StandardOutput.markCommitted("alert thresholds set")
            printLine("Alerts at \(settings.thresholds.warning) % used (warning) and \(settings.thresholds.critical) % used (critical).")
        }
    }

    struct Source: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "source", abstract: "One battery's own thresholds, or turn its alerts off or on (see alerts show for names).")
        @Argument(help: "The source's name, as alerts show lists it.") var name: String
        @Option(help: "Its own warning threshold, percent used.") var warning: Percent?
        @Option(help: "Its own critical threshold, percent used.") var critical: Percent?
        @Flag(help: "Turn its alerts on.") var enable = false
        @Flag(help: "Turn its alerts off.") var disable = false
        @Flag(help: "Back to the global thresholds, alerts on.") var reset = false
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if enable && disable { throw ValidationError("--enable and --disable exclude each other") }
            try AlertsCommand.checkRanges(warning: warning, critical: critical)
            if reset && (warning != nil || critical != nil || enable || disable) {
                throw ValidationError("--reset goes alone: it forgets the source's own settings")
            }
            if !reset && !enable && !disable && warning == nil && critical == nil {
                throw ValidationError("nothing to change: give --warning, --critical, --enable, --disable or --reset")
            }
        }

        func run() throws {
            var changes: [AlertUseCases.SourceChange] = []
            if reset { changes.append(.reset) }
            if let warning { changes.append(.warning(warning.value)) }
            if let critical { changes.append(.critical(critical.value)) }
            if enable { changes.append(.enable) }
            if disable { changes.append(.disable) }
            let view = try failing { try AlertsCommand.useCases(location).changeSource(name, changes) }
            StandardOutput.markCommitted("alert source changed")
            printLine("\(DisplayText.escaped(view.name)): \(view.enabled ? "alerts at \(view.thresholds.warning) / \(view.thresholds.critical) % used" : "alerts off")")
        }
    }

    struct Snooze: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "snooze", abstract: "Snooze every alert for 15m, 1h, 4h or 24h (off ends it); what still exceeds fires when it ends.")
        @Argument(help: "15m, 1h, 4h, 24h or off.") var duration: String
        @OptionGroup var location: LocationOptions

        func validate() throws {
            do { _ = try AlertUseCases.snoozeDuration(duration) } catch { throw ValidationError("\(error)") }
        }

        func run() throws {
            let until = try failing { try AlertsCommand.useCases(location).snooze(AlertSnooze(rawValue: duration)) }
            StandardOutput.markCommitted("alerts snooze set")
            printLine(until.map { "Alerts snoozed until \($0.localClock())." } ?? "Alerts are on.")
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "history", abstract: "The alerts given, newest first (the last 100).")
        @Flag(help: "Print JSON.") var json = false
        @Flag(help: "Forget the history.") var clear = false
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if json && clear { throw ValidationError("--clear prints no list: give --json or --clear, not both") }
        }

        func run() throws {
            let useCases = AlertsCommand.useCases(location)
            if clear {
                let gone = try failing { try useCases.clearHistory() }
                StandardOutput.markCommitted("alert history cleared")
                printLine("Cleared \(gone) alert\(gone == 1 ? "" : "s") from the history.")
                return
            }
            let records = try failing { try useCases.history() }
            if json {
                printLine(JSON.array(records.map { $0.json(in: SystemTimeZone.current) }).text)
            } else if records.isEmpty {
                printLine("No alerts yet.")
            } else {
                records.forEach { printLine($0.line(in: SystemTimeZone.current)) }
            }
        }
    }

    struct Template: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "template",
            abstract: "The message of an alert level, with {source}, {percent} (used), {remaining} and {level}; --reset for the default.")
        @Argument(help: "warning or critical.") var level: String
        @Argument(help: "The message.") var text: String?
        @Flag(help: "Back to the default message.") var reset = false
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if AlertLevel(rawValue: level) == nil { throw ValidationError("invalid level '\(oneLine(level))': use warning or critical") }
            if reset == (text != nil) { throw ValidationError("give the message, or --reset") }
        }

        func run() throws {
            guard let level = AlertLevel(rawValue: level) else { return }
            let template = try failing { try AlertsCommand.useCases(location).setTemplate(level, text) }
            StandardOutput.markCommitted("alert template set")
            printLine("The \(level.rawValue) alert reads: \(DisplayText.escaped(template.render(source: "BAT0", usage: level == .warning ? 86 : 96, level: level)))")
        }
    }
}
