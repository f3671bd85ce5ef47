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
        subcommands: [Status.self, Forget.self]
    )

    /// `dosetap household forget DEVICE` (#51 finding 7): a device that left the household (its broker account removed)
    /// no longer rings backups here from the plan the broker kept of it.
    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Forget a device that left the household: its plans held here are dropped and ignored until it is heard online again.",
            discussion: "Run it on every other device after removing the device's broker user; docs/household.md says how to clear the plan the broker kept.")
        @Argument(help: "The device's name, as its [household] device.") var device: String
        @OptionGroup var location: DataOptions

        func run() throws {
            let configuration = try? AgentConfiguration.load(from: location.paths.configFile)
            let me = configuration?.device ?? AgentConfiguration().device
            let forgot = try failing {
                try HouseholdUseCases(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock()).forget(device, me: me)
            }
            let held = forgot.occurrences == 1 ? "1 planned occurrence" : "\(forgot.occurrences) planned occurrences"
            printLine("Forgot \(forgot.device)\(forgot.again ? " (again)" : ""): \(held) dropped here; its plans are ignored until it is heard online again.")
            printLine("The broker may still keep its plans: clear them as docs/household.md says (they expire within 8 days).")
        }
    }

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
