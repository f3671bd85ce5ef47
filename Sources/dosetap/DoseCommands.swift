import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

struct DoseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dose",
        abstract: "The two-dose night: take, snooze, skip, undo, status, discard.",
        subcommands: [Take.self, Snooze.self, Skip.self, Undo.self, Status.self, Discard.self]
    )
}

/// Exit status of an input the dose rules refused (distinct from 1, an error).
let refusedExitCode: Int32 = 2

/// The dose use case over the data folder (created on first use).
func doseUseCases(_ location: some Locating) throws -> DoseUseCases {
    try failing { try MachinePorts.doses(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock()) }
}

/// Runs one input through the dose use case and prints the outcome; a refusal exits with status 2.
func submitDose(_ command: DoseTapCore.DoseCommand, location: some Locating, json: Bool,
                useCases: DoseUseCases? = nil) throws {
    let useCases = try useCases ?? doseUseCases(location)
    let submission: DoseSubmission
    do {
        submission = try useCases.submit(command, source: .cli)
    } catch let error as UseCaseError {
        // Already one sentence (a full disk names the file and says nothing was recorded).
        throw CLIError("\(error)")
    } catch {
        throw CLIError("could not record: \(error)")
    }
    if case .recorded(_, let confirmation, _) = submission.outcome {
        StandardOutput.markCommitted("recorded (\(confirmation.prefix(while: { $0 != "." })))")
    }
    if json {
        printLine(submission.json(in: SystemTimeZone.current).text)
    }
    switch submission.outcome {
    case .recorded(_, let confirmation, _):
        if !json {
            printLine(confirmation)
            if let nudge = submission.nudge {
                printLine(Terminal.colored(nudge.oneLine, nudge.color.rawValue))
                if let powerOff = nudge.powerOff { printLine(powerOff) }
            }
        }
    case .refused(let refusal, _):
        if !json { StandardOutput.error("dosetap: \(refusal.message)\n") }
        throw ExitCode(refusedExitCode)
    }
}

extension DoseCommand {
    struct Take: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "take",
            abstract: "Take the next dose: Dose 1 when the night is idle, else Dose 2.",
            discussion: "Dose 2 is refused before the window opens (150 min after Dose 1) and after it closes (240 min), unless --late confirms a late dose within 30 min of the close. A refusal exits with status 2."
        )

        @Flag(help: "Confirm a late Dose 2, within 30 minutes after the window closed.")
        var late = false

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            try submitDose(.take(confirmLate: late), location: location, json: json)
        }
    }

    struct Snooze: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "snooze",
            abstract: "Move the Dose 2 reminder 10 minutes later (at most 3 times a night, never past 225 min).")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            try submitDose(.snooze, location: location, json: json)
        }
    }

    struct Skip: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "skip", abstract: "Skip Dose 2 tonight (counts as missed).")

        enum Reason: String, ExpressibleByArgument, CaseIterable {
            case alert, sideEffects = "side-effects", other
            var skipReason: SkipReason {
                switch self {
                case .alert: .alert
                case .sideEffects: .sideEffects
                case .other: .other
                }
            }
        }

        @Option(help: "Why: alert (feeling alert enough), side-effects, other.")
        var reason: Reason?

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            var useCases: DoseUseCases?
            if !yes {
                // Ask only when a skip is possible; otherwise the refusal says why.
                let opened = try doseUseCases(location)
                useCases = opened
                if opened.skipWouldRecord() {
                    StandardOutput.write("Skip Dose 2? [y/N] ")
                    let answer: String
                    switch StandardInput.line() {
                    case .text(let text): answer = text.lowercased()
                    case .endOfInput, .invalid: answer = ""
                    }
                    guard answer == "y" || answer == "yes" else {
                        if answer.isEmpty { printLine("") }
                        throw CLIError("not skipped")
                    }
                }
            }
            try submitDose(.skip(reason?.skipReason), location: location, json: json, useCases: useCases)
        }
    }

    struct Undo: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "undo", abstract: "Undo the last dose action, within 5 seconds.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            try submitDose(.undo, location: location, json: json)
        }
    }

    struct Discard: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "discard",
            abstract: "Discard one entry set aside because it is dated in the future (dose status names it).",
            discussion: "An entry dated in the future (recorded while a clock was ahead) never counts; dose status names it until it is discarded. Discarding is recorded in the log as an event of its own: the entry stays, marked discarded. Only such an entry can be discarded; a dose is taken back with dosetap dose undo, within 5 s.")

        @Argument(help: "The entry's id, or its first 8 hexadecimal digits (as dose status shows it).")
        var id: String

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            try submitDose(.discard(reference: id), location: location, json: json)
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show tonight: phase, doses, window, reminder.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: DataOptions

        func run() throws {
            let zone = SystemTimeZone.current
            let status = try failing { try DoseHistory(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock()).status() }
            if json {
                printLine(status.json(in: SystemTimeZone.current).text)
                return
            }
            let clock = ClockText(timeZone: zone)
            printLine("Night of \(status.nightDate): \(status.phase.rawValue)")
            for event in status.setAside {
                printLine(Terminal.colored(SetAsideNotice.sentence(event, now: status.now, in: zone), "orange"))
            }
            guard let s = status.session else {
                printLine("No Dose 1 yet tonight.")
                return
            }
            printLine("Dose 1: \(clock.time(s.dose1.at))")
            if let d2 = s.dose2 {
                printLine("Dose 2: \(clock.time(d2.at)) (\(s.intervalMinutes ?? 0) min\(s.isLate ? ", late" : ", on time"))")
            }
            var window = "Window: \(clock.time(s.windowOpensAt))–\(clock.time(s.windowClosesAt))"
            if let left = status.minutesRemaining { window += " (\(left) min left)" }
            printLine(window)
            if let reminder = status.reminderAt {
                printLine("Reminder: \(clock.time(reminder)) (snoozes left: \(status.snoozesLeft))")
            }
            if let reason = status.skipReason { printLine("Skipped: \(reason.label)") }
        }
    }
}
