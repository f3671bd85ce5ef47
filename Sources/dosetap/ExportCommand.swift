import ArgumentParser
import DoseTapCore
import DoseTapStore
import Foundation

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the dose history.",
        subcommands: [CSV.self]
    )

    struct CSV: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "csv",
            abstract: "Export nights as CSV: Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped (oldest first).")

        @Option(help: "Range: 30d (default), 90d or all.")
        var last: String?

        @Option(help: "First night to include (YYYY-MM-DD).")
        var from: String?

        @Option(help: "Last night to include (YYYY-MM-DD).")
        var to: String?

        @Option(help: "Write to this file instead of standard output.")
        var output: String?

        @OptionGroup var location: LocationOptions

        func range(today: LocalDate) throws -> (LocalDate?, LocalDate?) {
            if last != nil, from != nil || to != nil {
                throw CLIError("use either --last or --from/--to, not both")
            }
            if from != nil || to != nil {
                let start: LocalDate?
                let end: LocalDate?
                do {
                    start = try from.map { try LocalDate(parsing: $0) }
                    end = try to.map { try LocalDate(parsing: $0) }
                } catch {
                    throw CLIError("\(error)")
                }
                if let start, let end, start > end {
                    throw CLIError("--from \(start) is after --to \(end)")
                }
                return (start, end)
            }
            switch last ?? "30d" {
            case "30d": return (today.adding(days: -29), today)
            case "90d": return (today.adding(days: -89), today)
            case "all": return (nil, nil)
            case let other: throw CLIError("invalid --last '\(other)': use 30d, 90d or all")
            }
        }

        func run() throws {
            let now = Date()
            let today = LocalDate.night(of: now, in: .current)
            let (start, end) = try range(today: today)
            let sessions: [NightSession]
            do {
                sessions = try DoseTapDatabase.openIfPresent(directory: location.paths.dataDirectory)
                    .map { DoseLog(events: try DoseRepository(database: $0).allEvents()).sessions } ?? []
            } catch {
                throw CLIError("\(error)")
            }
            let text = CSVExport.document(sessions, from: start, to: end, now: now)
            if let output {
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
                } catch {
                    throw CLIError("cannot write \(output): \(error.localizedDescription)")
                }
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}
