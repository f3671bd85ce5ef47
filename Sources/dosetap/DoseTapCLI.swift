import ArgumentParser
import DoseTapCore
import DoseTapStore
import DoseTapLinux
import Foundation
import DoseTapVersion
#if canImport(Glibc)
import Glibc
#endif

@main
struct DoseTapCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dosetap",
        abstract: "Makes sure an alarm, and a medication dose, never fail silently.",
        discussion: "Exit status: 0 done, 1 an error, 2 refused by the dose rules, 64 a usage error.",
        version: "dosetap \(DoseTapVersion.description)",
        subcommands: [AgentCommand.self, StatusCommand.self, PredictCommand.self, BatteryCommand.self, DoseCommand.self, ExportCommand.self, DataCommand.self, SetupCommand.self, FeedbackCommand.self, SoundsCommand.self, HapticsCommand.self, ButtonCommand.self, AlarmCommand.self, AlertsCommand.self, HouseholdCommand.self, WebCommand.self, LogsCommand.self, WakeHelperCommand.self]
    )

    /// Starts the command. A command that is not asynchronous (most one-shot commands: `dose status`,
    /// `alarm list`, `predict`), and every usage error, `--help` and `--version`, runs here on the main
    /// thread: no thread pool is started for it (docs/performance.md, "One-shot commands beside sqlite3").
    /// An asynchronous command runs as a task while the main thread parks in `dispatchMain()` (as an `async`
    /// main would); `dosetap agent` first makes the agent's one epoll thread Swift concurrency's global
    /// executor — before any job runs, so libdispatch's worker pool and its once-a-second monitor never start
    /// (docs/performance.md, "Idle wake-ups").
    static func main() {
        // A reader that goes away (`dosetap … | head -1`) is an output error to report, not a signal
        // that kills the process after a dose was recorded.
        signal(SIGPIPE, SIG_IGN)
        if CommandLine.arguments.dropFirst().first == "agent", ProcessInfo.processInfo.environment["DOSETAP_DISPATCH_EXECUTOR"] != "1" {
            EpollLoop.installAsGlobalExecutor()
        }
        let parsed = Result { try parseAsRoot() }
        guard case .success(let command) = parsed, let asyncCommand = command as? AsyncParsableCommand else {
            Foundation.exit(finish(status: outcome { var command = try parsed.get(); try command.run() }))
        }
        // Handed to the task, never touched here again.
        nonisolated(unsafe) var handed = asyncCommand
        Task {
            var code: Int32 = 0
            do { try await handed.run() } catch { code = status(for: error) }
            Foundation.exit(finish(status: code))
        }
        dispatchMain()
    }

    /// Runs the command; every error is one line on stderr and a non-zero exit, never a stack trace.
    static func outcome(_ body: () throws -> Void) -> Int32 {
        do {
            try body()
            return 0
        } catch {
            return status(for: error)
        }
    }

    /// The exit status for an error, after saying it on stderr (or, for --help and --version, printing
    /// ArgumentParser's text on stdout).
    static func status(for error: any Error) -> Int32 {
        // The command already said why (a refused dose prints its reason, then exits 2).
        if let exit = error as? ExitCode { return exit.rawValue }
        let code = exitCode(for: error)
        if code == .success {
            // --help, --version: ArgumentParser's text, through our writer.
            StandardOutput.write(fullMessage(for: error) + "\n")
            return 0
        }
        StandardOutput.error("dosetap: \(oneLine(firstLine(of: self.message(for: error))))\n")
        return code.rawValue == 0 ? 1 : code.rawValue
    }

    /// The final status once standard output is known to have been written (or not).
    static func finish(status: Int32) -> Int32 {
        var status = status
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

/// An error's first line; ArgumentParser's list of accepted values ("one of the following:" and a bullet
/// per value) folded into it, so a wrong `--log-level` still names every value on one line.
func firstLine(of message: String) -> String {
    let lines = message.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    guard let first = lines.first else { return "failed" }
    let values = lines.dropFirst().prefix { $0.hasPrefix("  - ") }.map { "'\($0.dropFirst(4))'" }
    guard first.hasSuffix("one of the following:"), !values.isEmpty else { return first }
    return String(first.dropLast("the following:".count)) + values.joined(separator: ", ") + "."
}

/// Where a command finds its files: every command has the data directory; only those that read the
/// configuration file (`LocationOptions`) take `--config`.
protocol Locating {
    var paths: DataPaths { get }
}

/// The data directory alone, for the commands that never read the configuration file.
struct DataOptions: ParsableArguments, Locating {
    @Option(name: .long, help: "Data directory (default: $DOSETAP_DATA_DIR or $XDG_DATA_HOME/dosetap).")
    var dataDir: String?

    var paths: DataPaths { DataPaths.resolve(dataDirectory: dataDir, configFile: nil) }

    func validate() throws {
        if let problem = DataPaths.problem(dataDirectory: dataDir) { throw CLIError(problem) }
    }
}

/// Where the data and the configuration live: the commands that read config.toml (the agent, `web link`
/// and `web open`, `alerts`, `alarm backup`).
struct LocationOptions: ParsableArguments, Locating {
    @OptionGroup var data: DataOptions

    @Option(name: .long, help: "Configuration file (default: $XDG_CONFIG_HOME/dosetap/config.toml).")
    var config: String?

    var paths: DataPaths { DataPaths.resolve(dataDirectory: data.dataDir, configFile: config) }
}

/// Parses a value given on the command line: a malformed or out-of-range value is a usage error (exit 64),
/// worded by the parser, like every other bad argument (docs/cli.md, "Exit status").
func usage<T>(_ parse: () throws -> T) throws -> T {
    do { return try parse() } catch { throw ValidationError("\(error)") }
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
