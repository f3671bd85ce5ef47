import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapLinux
import DoseTapWeb
import Foundation
import Logging

struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Run the DoseTap agent in the foreground (SIGTERM stops it, SIGHUP reloads the configuration)."
    )

    @OptionGroup var location: LocationOptions

    @Option(help: ArgumentHelp("The least severe messages logged (default: $DOSETAP_LOG_LEVEL, else info).",
                               valueName: "level"))
    var logLevel: LogLevel?

    func validate() throws {
        if logLevel == nil, let text = ProcessInfo.processInfo.environment["DOSETAP_LOG_LEVEL"], LogLevel(argument: text) == nil {
            throw ValidationError("invalid DOSETAP_LOG_LEVEL '\(oneLine(text))': use \(LogLevel.allValueStrings.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let level = (logLevel ?? ProcessInfo.processInfo.environment["DOSETAP_LOG_LEVEL"].flatMap(LogLevel.init(argument:)) ?? .info).level
        // Device names, sysfs and file-system text reach the log: no raw control character gets through.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return EscapingLogHandler(handler)
        }
        let logger = Logger(label: "dosetap.agent")
        // DoseTapCLI.main made the agent's epoll loop the global executor before anything ran (only the agent:
        // a command-line call lives too briefly for libdispatch's once-a-second monitor to matter).
        if !EpollLoop.isGlobalExecutor {
            logger.notice("Swift concurrency runs on libdispatch's worker pool (idle wake-ups once a second)")
        }
        do {
            try await Agent.run(paths: location.paths, logger: logger, faces: [DashboardFace.face])
        } catch {
            throw CLIError("\(error)")
        }
    }
}

/// `--log-level`: swift-log's levels, every one listed in the help and in the error for a wrong one.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    init?(argument: String) { self.init(rawValue: argument.lowercased()) }

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}
