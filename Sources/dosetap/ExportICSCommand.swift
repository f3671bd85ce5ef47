import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

extension ExportCommand {
    /// `dosetap export ics`: the coming alarms and the dose window as an RFC 5545 calendar (docs/exports.md).
    struct ICS: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ics",
            abstract: "Export the coming alarms and the dose window as an iCalendar (RFC 5545) file.")

        @Option(help: "Days ahead, from 1 to 366 (default 7).")
        var days: String?

        @OptionGroup var destination: ExportOutputOptions

        @OptionGroup var location: DataOptions

        func validate() throws {
            _ = try dayCount()
        }

        /// 1…366; anything else (0, negative, huge, not a number) is a usage error (exit 64).
        func dayCount() throws -> Int {
            guard let days else { return CalendarExport.defaultDays }
            let range = CalendarExport.days
            guard days.count <= 4, days.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(days), range.contains(n) else {
                throw ValidationError("--days must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(oneLine(String(days.prefix(40))))'")
            }
            return n
        }

        func run() throws {
            let days = try dayCount()
            let directory = location.paths.dataDirectory
            let export = try failing {
                try CalendarExport(store: DataStore(directory: directory), identity: MachinePorts.installIdentity(dataDirectory: directory),
                               clock: SystemClock()).export(days: days)
            }
            try ExportDestination(destination, location: location).write(export.ics)
            for note in export.notes {
                StandardOutput.error("dosetap: note: \(oneLine(note))\n")
            }
        }
    }
}
