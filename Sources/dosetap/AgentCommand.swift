import ArgumentParser
import DoseTapAgent
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

    @Option(help: "Log level: trace, debug, info, notice, warning, error (default: $DOSETAP_LOG_LEVEL or info).")
    var logLevel: String?

    func run() async throws {
        let levelText = logLevel ?? ProcessInfo.processInfo.environment["DOSETAP_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw CLIError("unknown log level '\(levelText)': use trace, debug, info, notice, warning, error or critical")
        }
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
            try await Agent.run(paths: location.paths, logger: logger, faces: [WebFace.face])
        } catch {
            throw CLIError("\(error)")
        }
    }
}
