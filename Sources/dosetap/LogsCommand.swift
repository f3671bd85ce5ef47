import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

/// `dosetap logs`: the agent's own log (docs/exports.md).
struct LogsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "The agent's own log.",
        subcommands: [Export.self]
    )

    /// `dosetap logs export`: anonymised CSV of the agent's log, at most 90 days back.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Export the agent's log as anonymised CSV: time,level,message,metadata (at most 90 days back).")

        @Option(help: "How far back: 1d to 90d, or hours such as 12h (default 90d). Older entries are never exported.")
        var since: String?

        @Option(help: "Read this captured log (the agent's standard error, `dosetap agent 2>>FILE`) instead of the journal.")
        var file: String?

        @Flag(help: "Read the system journal's dosetap.service (an agent run as a system service) instead of your user's.")
        var system = false

        @OptionGroup var destination: ExportOutputOptions

        @OptionGroup var location: DataOptions

        func validate() throws {
            _ = try age()
            if file != nil, system { throw ValidationError("use either --file or --system, not both") }
        }

        func age() throws -> TimeInterval {
            do { return try LogExport.age(parsing: since ?? LogExport.defaultSince) } catch { throw ValidationError(error.description) }
        }

        func run() async throws {
            let age = try age()
            let directory = location.paths.dataDirectory
            let source: any LogSource = if let file { LogFileSource(path: file) } else { JournalLogSource(user: !system) }
            let export = try await failing {
                try await LogExport(store: DataStore(directory: directory), identity: MachinePorts.installIdentity(dataDirectory: directory),
                                    clock: SystemClock())
                    .export(from: source, age: age)
            }
            try ExportDestination(destination, location: location).write(export.csv)
            if export.untimed > 0 {
                StandardOutput.error("dosetap: note: \(export.untimed) line\(export.untimed == 1 ? "" : "s") without a readable time left out (not in the agent's log format)\n")
            }
        }
    }
}
