import ArgumentParser
import DoseTapCore
import DoseTapLinux
import DoseTapAgent
import DoseTapApp
import Foundation

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the dose history (csv) or the coming alarms and the dose window (ics).",
        subcommands: [CSV.self, ICS.self]
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

        @Option(help: "Write to this file instead of standard output (a new file is created with mode 0600; never the database, a link or a device).")
        var output: String?

        @Flag(help: "With --output: replace an existing regular file (its mode is kept).")
        var force = false

        @OptionGroup var location: DataOptions

        func range() throws -> DoseHistory.ExportRange {
            if last != nil, from != nil || to != nil {
                throw ValidationError("use either --last or --from/--to, not both")
            }
            if from != nil || to != nil {
                let start: LocalDate?
                let end: LocalDate?
                do {
                    start = try from.map { try LocalDate(parsing: $0) }
                    end = try to.map { try LocalDate(parsing: $0) }
                } catch {
                    throw ValidationError("\(error)")
                }
                if let start, let end, start > end {
                    throw ValidationError("--from \(start) is after --to \(end)")
                }
                return .between(start, end)
            }
            switch last ?? "30d" {
            case "30d": return .last(days: 30)
            case "90d": return .last(days: 90)
            case "all": return .all
            case let other: throw ValidationError("invalid --last '\(oneLine(other))': use 30d, 90d or all")
            }
        }

        func run() throws {
            let range = try range()
            let export = try failing { try DoseHistory(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock()).export(range) }
            let text = export.csv
            let unreadable = export.unreadable
            if let output {
                do {
                    try SafeFileWriter.write(Array(text.utf8), to: output, replace: force,
                                             protected: [location.paths.databaseFile.path])
                } catch {
                    throw CLIError("\(error)")
                }
            } else {
                StandardOutput.write(text)
            }
            if !unreadable.isEmpty {
                // The export is still useful to a doctor; the gap is said, never hidden (exit 0).
                let shown = unreadable.prefix(10).map(String.init).joined(separator: ", ") + (unreadable.count > 10 ? ", …" : "")
                StandardOutput.error("dosetap: warning: \(unreadable.count) unreadable entr\(unreadable.count == 1 ? "y" : "ies") of the dose log left out (seq \(shown)); see docs/doses.md\n")
            }
        }
    }
}
