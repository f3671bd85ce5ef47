import ArgumentParser
import DoseTapCore
import DoseTapStore
import Foundation

@main
struct DoseTapCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dosetap",
        abstract: "Makes sure an alarm, and a medication dose, never fail silently.",
        subcommands: [AgentCommand.self, PredictCommand.self, BatteryCommand.self, DoseCommand.self, ExportCommand.self, DataCommand.self, SetupCommand.self, FeedbackCommand.self, SoundsCommand.self, HapticsCommand.self, ButtonCommand.self]
    )

    /// Runs the command; every error is one line on stderr and a non-zero exit, never a stack trace.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let exit as ExitCode {
            // The command already said why (a refused dose prints its reason, then exits 2).
            Foundation.exit(exit.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "failed"
            FileHandle.standardError.write(Data("dosetap: \(message)\n".utf8))
            Foundation.exit(code.rawValue == 0 ? 1 : code.rawValue)
        }
    }
}

/// Where the data and the configuration live.
struct LocationOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory (default: $DOSETAP_DATA_DIR or $XDG_DATA_HOME/dosetap).")
    var dataDir: String?

    @Option(name: .long, help: "Configuration file (default: $XDG_CONFIG_HOME/dosetap/config.toml).")
    var config: String?

    var paths: DataPaths { DataPaths.resolve(dataDirectory: dataDir, configFile: config) }
}

/// A failure with a one-line reason.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

extension Date {
    /// RFC 3339 with the local offset, e.g. 2026-11-22T06:30:00-05:00.
    func rfc3339(in timeZone: TimeZone = .current) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = timeZone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: self)
    }

    func localClock(in timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "EEE yyyy-MM-dd HH:mm zzz"
        return formatter.string(from: self)
    }
}
