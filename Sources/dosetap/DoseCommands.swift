import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation

struct DoseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dose",
        abstract: "The two-dose night: take, snooze, skip, undo, status.",
        subcommands: [Take.self, Snooze.self, Skip.self, Undo.self, Status.self]
    )
}

/// Exit status of an input the dose rules refused (distinct from 1, an error).
let refusedExitCode: Int32 = 2

/// Opens the store for a dose command (creating it on first use).
func openDoseStore(_ location: LocationOptions) throws -> DoseRepository {
    do {
        return DoseRepository(database: try DoseTapDatabase(directory: location.paths.dataDirectory))
    } catch {
        throw CLIError("\(error)")
    }
}

/// Runs one input through the dose use case and prints the outcome; a refusal exits with status 2.
func submitDose(_ command: DoseTapCore.DoseCommand, location: LocationOptions, json: Bool) throws {
    let repo = try openDoseStore(location)
    let useCases = DoseUseCases(repository: repo, clock: CommandClock(),
                                battery: { batteryNow(database: repo.database) })
    let submission: DoseSubmission
    do {
        submission = try useCases.submit(command, source: .cli)
    } catch {
        throw CLIError("could not record: \(error)")
    }
    switch submission.outcome {
    case .recorded(let event, let confirmation, let status):
        StandardOutput.markCommitted("recorded (\(confirmation.prefix(while: { $0 != "." })))")
        if json {
            printLine(JSON.object([
                ("recorded", .bool(true)),
                ("event", eventJSON(event)),
                ("message", .string(confirmation)),
                ("batteryNudge", submission.nudge?.json ?? .null),
                ("status", statusJSON(status)),
            ]).text)
        } else {
            printLine(confirmation)
            if let nudge = submission.nudge { printLine(Terminal.colored(nudge.oneLine, nudge.color.rawValue)) }
        }
    case .refused(let refusal, let status):
        if json {
            printLine(JSON.object([
                ("recorded", .bool(false)),
                ("refusal", .object([("code", .string(refusal.code.rawValue)), ("message", .string(refusal.message))])),
                ("status", statusJSON(status)),
            ]).text)
        } else {
            StandardOutput.error("dosetap: \(refusal.message)\n")
        }
        throw ExitCode(refusedExitCode)
    }
}

/// The command's clock: the system's time and zone.
struct CommandClock: WallClock {
    func now() -> Date { Date() }
    var timeZone: TimeZone { SystemTimeZone.current }
}

/// The battery now, with the drain fitted from the agent's samples when the hardware gives no rate.
func batteryNow(database: DoseTapDatabase) -> BatteryStatus? {
    guard let source = try? UdevPowerSupplySource() else { return nil }
    return try? BatteryStatus.read(source: source, history: BatterySampleRepository(database: database), now: Date())
}

func eventJSON(_ event: DoseEvent) -> JSON {
    let kind: String
    switch event.kind {
    case .dose1: kind = "dose1"
    case .dose2(let late): kind = late ? "dose2-late" : "dose2"
    case .snooze: kind = "snooze"
    case .skip: kind = "skip"
    case .undo: kind = "undo"
    }
    return .object([
        ("id", .string(event.id.uuidString)),
        ("kind", .string(kind)),
        ("at", .string(event.at.rfc3339())),
        ("source", .string(event.source.rawValue)),
    ])
}

func statusJSON(_ s: NightStatus) -> JSON {
    func time(_ d: Date?) -> JSON { d.map { .string($0.rfc3339()) } ?? .null }
    let session = s.session
    return .object([
        ("phase", .string(s.phase.rawValue)),
        ("nightDate", .string(s.nightDate.description)),
        ("dose1At", time(session?.dose1.at)),
        ("dose2At", time(session?.dose2?.at)),
        ("windowOpensAt", time(session?.windowOpensAt)),
        ("windowClosesAt", time(session?.windowClosesAt)),
        ("reminderAt", time(s.reminderAt)),
        ("minutesRemaining", JSON.optional(s.minutesRemaining)),
        ("snoozesUsed", .int(s.snoozesUsed)),
        ("snoozesLeft", .int(s.snoozesLeft)),
        ("skipReason", JSON.optional(s.skipReason?.rawValue)),
        ("onTime", s.onTime.map { .bool($0) } ?? .null),
    ])
}

extension DoseCommand {
    struct Take: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take the next dose: Dose 1 when the night is idle, else Dose 2.",
            discussion: "Dose 2 is refused before the window opens (150 min after Dose 1) and after it closes (240 min), unless --late confirms a late dose within 30 min of the close. A refusal exits with status 2."
        )

        @Flag(help: "Confirm a late Dose 2, within 30 minutes after the window closed.")
        var late = false

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: LocationOptions

        func run() throws {
            try submitDose(.take(confirmLate: late), location: location, json: json)
        }
    }

    struct Snooze: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the Dose 2 reminder 10 minutes later (at most 3 times a night, never past 225 min).")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: LocationOptions

        func run() throws {
            try submitDose(.snooze, location: location, json: json)
        }
    }

    struct Skip: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Skip Dose 2 tonight (counts as missed).")

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

        @OptionGroup var location: LocationOptions

        func run() throws {
            if !yes {
                // Ask only when a skip is possible; otherwise the refusal says why.
                let repo = try openDoseStore(location)
                let phase = (try? repo.status(now: Date(), timeZone: SystemTimeZone.current).phase) ?? .idle
                if [.waiting, .open, .nearClose, .closed].contains(phase) {
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
            try submitDose(.skip(reason?.skipReason), location: location, json: json)
        }
    }

    struct Undo: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Undo the last dose action, within 5 seconds.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: LocationOptions

        func run() throws {
            try submitDose(.undo, location: location, json: json)
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show tonight: phase, doses, window, reminder.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var location: LocationOptions

        func run() throws {
            let now = Date()
            let zone = SystemTimeZone.current
            let status: NightStatus
            do {
                if let db = try DoseTapDatabase.openForReading(directory: location.paths.dataDirectory) {
                    status = try DoseRepository(database: db).status(now: now, timeZone: zone)
                } else {
                    status = DoseLog(events: []).status(at: now, in: zone)
                }
            } catch {
                throw CLIError("\(error)")
            }
            if json {
                printLine(statusJSON(status).text)
                return
            }
            let clock = ClockText(timeZone: zone)
            printLine("Night of \(status.nightDate): \(status.phase.rawValue)")
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
