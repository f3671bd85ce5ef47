import ArgumentParser
import DoseTapStore
import Foundation

struct DataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data",
        abstract: "Manage the stored data.",
        subcommands: [Clear.self, Unreadable.self]
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
                StandardOutput.write("Type DELETE to confirm: ")
                switch StandardInput.line() {
                case .text(let text): answer = text
                case .endOfInput: printLine(""); answer = ""
                case .invalid: printLine(""); answer = ""
                }
            }
            guard answer == "DELETE" else {
                throw CLIError("aborted: nothing deleted")
            }
            do { try db.clearAll() } catch { throw CLIError("could not delete: \(error)") }
            StandardOutput.markCommitted("deleted")
            printLine("Deleted.")
        }
    }

    struct Unreadable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the entries of the dose log that cannot be read; set them aside with --ignore.",
            discussion: "While the log holds an entry that cannot be read (written by hand, a damaged disk), no dose is recorded and dose status refuses to guess: the entry could be tonight's Dose 1. Look at it, then set it aside with --ignore SEQ (it stays in the file; the rules stop counting it).")

        @Option(name: .customLong("ignore"), help: "Set this entry aside (repeat for several).")
        var ignore: [Int64] = []

        @OptionGroup var location: LocationOptions

        func run() throws {
            if ignore.isEmpty {
                guard let db = try openReading() else {
                    printLine("No data in \(location.paths.dataDirectory.path).")
                    return
                }
                let entries: [DoseRepository.RawEntry]
                do { entries = try DoseRepository(database: db).unreadableEntries() } catch { throw CLIError("\(error)") }
                if entries.isEmpty {
                    printLine("Every entry of the dose log can be read.")
                    return
                }
                for entry in entries {
                    let columns = entry.columns.map { "\($0.name)=\(oneLine(String($0.value.prefix(120))))" }.joined(separator: " ")
                    printLine("seq \(entry.seq)\(entry.ignored ? " (set aside)" : ""): \(columns)")
                }
                return
            }
            let repo: DoseRepository
            do { repo = DoseRepository(database: try DoseTapDatabase(directory: location.paths.dataDirectory)) } catch { throw CLIError("\(error)") }
            do { try repo.ignoreUnreadable(ignore, now: Date()) } catch { throw CLIError("\(error)") }
            StandardOutput.markCommitted("set aside")
            printLine("Set aside: \(ignore.map(String.init).joined(separator: ", ")). The entries stay in the file.")
        }

        func openReading() throws -> DoseTapDatabase? {
            do { return try DoseTapDatabase.openForReading(directory: location.paths.dataDirectory) } catch { throw CLIError("\(error)") }
        }
    }
}
