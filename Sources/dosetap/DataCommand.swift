import ArgumentParser
import DoseTapStore
import Foundation

struct DataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data",
        abstract: "Manage the stored data.",
        subcommands: [Clear.self]
    )

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete the dose history, the settings and the battery history (asks you to type DELETE).")

        @Option(help: "Confirm without a prompt, for scripts: --confirm DELETE.")
        var confirm: String?

        @OptionGroup var location: LocationOptions

        func run() throws {
            guard let db = try? DoseTapDatabase.openIfPresent(directory: location.paths.dataDirectory) else {
                printLine("Nothing to delete: no data in \(location.paths.dataDirectory.path).")
                return
            }
            let counts: (doseEvents: Int, settings: Int, samples: Int)
            do { counts = try db.counts() } catch { throw CLIError("\(error)") }
            printLine("This deletes, from \(db.path):")
            printLine("  - dose history: \(counts.doseEvents) event\(counts.doseEvents == 1 ? "" : "s")")
            printLine("  - settings: \(counts.settings == 0 ? "none saved" : "your setup answers")")
            printLine("  - battery sample history: \(counts.samples) sample\(counts.samples == 1 ? "" : "s")")
            let answer: String
            if let confirm {
                answer = confirm
            } else {
                FileHandle.standardOutput.write(Data("Type DELETE to confirm: ".utf8))
                answer = readLine()?.trimmingCharacters(in: .whitespaces) ?? ""
            }
            guard answer == "DELETE" else {
                throw CLIError("aborted: nothing deleted")
            }
            do { try db.clearAll() } catch { throw CLIError("could not delete: \(error)") }
            printLine("Deleted.")
        }
    }
}
