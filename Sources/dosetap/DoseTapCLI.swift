import ArgumentParser
import DoseTapCore
import DoseTapStore
import DoseTapLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif

@main
struct DoseTapCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dosetap",
        abstract: "Makes sure an alarm, and a medication dose, never fail silently.",
        subcommands: [AgentCommand.self, PredictCommand.self, BatteryCommand.self, DoseCommand.self, ExportCommand.self, LogsCommand.self, DataCommand.self, SetupCommand.self, FeedbackCommand.self, SoundsCommand.self, HapticsCommand.self, ButtonCommand.self, AlarmCommand.self, AlertsCommand.self, HouseholdCommand.self, WebCommand.self]
    )

    /// Starts the command. `dosetap agent` first makes the agent's one epoll thread Swift concurrency's
    /// global executor — before any job runs, so libdispatch's worker pool and its once-a-second monitor
    /// never start (docs/performance.md, "Idle wake-ups"); then the command runs as an asynchronous task
    /// and the main thread parks in `dispatchMain()` (as an `async` main would).
    static func main() {
        // A reader that goes away (`dosetap … | head -1`) is an output error to report, not a signal
        // that kills the process after a dose was recorded.
        signal(SIGPIPE, SIG_IGN)
        if CommandLine.arguments.dropFirst().first == "agent", ProcessInfo.processInfo.environment["DOSETAP_DISPATCH_EXECUTOR"] != "1" {
            EpollLoop.installAsGlobalExecutor()
        }
        Task {
            let status = await run()
            Foundation.exit(status)
        }
        dispatchMain()
    }

    /// Runs the command; every error is one line on stderr and a non-zero exit, never a stack trace.
    static func run() async -> Int32 {
        var status: Int32 = 0
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let exit as ExitCode {
            // The command already said why (a refused dose prints its reason, then exits 2).
            status = exit.rawValue
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help, --version: ArgumentParser's text, through our writer.
                StandardOutput.write(fullMessage(for: error) + "\n")
            } else {
                let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "failed"
                StandardOutput.error("dosetap: \(oneLine(message))\n")
                status = code.rawValue == 0 ? 1 : code.rawValue
            }
        }
        let (failure, committed) = StandardOutput.outcome
        if let failure {
            let cause = strerrorText(failure)
            if let committed {
                // Done: a retrying script must not be told that it failed.
                StandardOutput.error("dosetap: \(committed), but standard output could not be written (\(cause))\n")
            } else {
                StandardOutput.error("dosetap: standard output could not be written (\(cause))\n")
                if status == 0 { status = 1 }
            }
        }
        return status
    }
}

/// Where the data and the configuration live.
struct LocationOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory (default: $DOSETAP_DATA_DIR or $XDG_DATA_HOME/dosetap).")
    var dataDir: String?

    @Option(name: .long, help: "Configuration file (default: $XDG_CONFIG_HOME/dosetap/config.toml).")
    var config: String?

    var paths: DataPaths { DataPaths.resolve(dataDirectory: dataDir, configFile: config) }

    func validate() throws {
        if let problem = DataPaths.problem(dataDirectory: dataDir) { throw CLIError(problem) }
    }
}

/// A failure with a one-line reason.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs a use case: its error becomes the command's one-line error (exit 1), as the use case worded it.
func failing<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as CLIError { throw error } catch { throw CLIError("\(error)") }
}

func failing<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let error as CLIError { throw error } catch { throw CLIError("\(error)") }
}

func printLine(_ text: String) {
    StandardOutput.write(text + "\n")
}

/// An error message on one line: control characters (a newline from a file name, an escape sequence)
/// shown escaped, with Core's one escaping rule for device and user text.
func oneLine(_ text: String) -> String {
    DisplayText.escaped(text, maxLength: 4096, doublingBackslashes: false)
}

extension Date {
    func localClock(in timeZone: TimeZone = SystemTimeZone.current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "EEE yyyy-MM-dd HH:mm zzz"
        return formatter.string(from: self)
    }
}
