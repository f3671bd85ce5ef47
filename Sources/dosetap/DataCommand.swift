import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
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
            commandName: "clear",
            abstract: "Delete the dose history, settings, battery history, buttons with their keys, usage alerts and household records; alarms stay (asks you to type DELETE).")

        @Option(help: "Confirm without a prompt, for scripts: --confirm DELETE.")
        var confirm: String?

        @OptionGroup var location: DataOptions

        func run() throws {
            let data = DataUseCases(store: DataStore(directory: location.paths.dataDirectory))
            guard let counts = try failing({ try data.contents() }) else {
                printLine("Nothing to delete: no data in \(location.paths.dataDirectory.path).")
                return
            }
            printLine("This deletes, from \(counts.path):")
            for part in counts.parts {
                printLine("  - \(part.table.what): \(part.table.count(part.rows))")
            }
            printLine(StoredTables.keptSentence)
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
            try failing { try data.clear(counts) }
            StandardOutput.markCommitted("deleted")
            printLine("Deleted.")
        }
    }

    struct Unreadable: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unreadable",
            abstract: "Check the dose log: list the entries that cannot be read (set them aside with --ignore) and those dated in the future.",
            discussion: "While the log holds an entry that cannot be read (written by hand, a damaged disk), no dose is recorded and dose status refuses to guess: the entry could be tonight's Dose 1. Look at it, then set it aside with --ignore SEQ (it stays in the file; the rules stop counting it). An entry dated in the future (recorded while a clock was ahead) is set aside by itself and named here too; dosetap dose discard ID ends the notice.")

        @Option(name: .customLong("ignore"), help: "Set this entry aside (repeat for several).")
        var ignore: [Int64] = []

        @OptionGroup var location: DataOptions

        func run() throws {
            let history = DoseHistory(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock())
            if ignore.isEmpty {
                guard let entries = try failing({ try history.unreadableEntries() }),
                      let future = try failing({ try history.setAsideEntries() }) else {
                    printLine("No data in \(location.paths.dataDirectory.path).")
                    return
                }
                if entries.isEmpty {
                    printLine("Every entry of the dose log can be read.")
                }
                for entry in entries {
                    let columns = entry.columns.map { "\($0.name)=\(oneLine(String($0.value.prefix(120))))" }.joined(separator: " ")
                    printLine("seq \(entry.seq)\(entry.ignored ? " (set aside)" : ""): \(columns)")
                }
                let zone = SystemTimeZone.current
                let now = Date()
                if future.setAside.isEmpty && future.discarded.isEmpty {
                    printLine("No entry is dated in the future.")
                }
                for event in future.setAside {
                    printLine(SetAsideNotice.sentence(event, now: now, in: zone))
                }
                for event in future.discarded {
                    printLine("Discarded: \(event.label) dated \(SetAsideNotice.dated(event.at, in: zone)) (id \(SetAsideNotice.shortID(event.id))): dated in the future when it was seen; it never counts.")
                }
                return
            }
            try failing { try history.ignoreUnreadable(ignore) }
            StandardOutput.markCommitted("set aside")
            printLine("Set aside: \(ignore.map(String.init).joined(separator: ", ")). The entries stay in the file.")
        }
    }
}
