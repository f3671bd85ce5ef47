import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

/// `dosetap household …` (#12): the household's broker, peers and cascades, as the running agent sees them.
struct HouseholdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "household",
        abstract: "The household's broker, the peers seen and any backup cascade in progress.",
        subcommands: [Status.self]
    )

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "The broker (connected or not, since when), the peers with their last heartbeat, and any cascade in progress.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            guard let (status, raw) = HouseholdStatus.read(dataDirectory: location.paths.dataDirectory) else {
                throw CLIError("no agent is running: the household status comes from dosetap agent (systemctl --user start dosetap)")
            }
            if json {
                printLine(String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                status.lines(timeZone: SystemTimeZone.current).forEach(printLine)
            }
        }
    }
}
