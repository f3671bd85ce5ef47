import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import DoseTapWeb
import DoseTapLinux
import Foundation
import Logging

/// `dosetap alarm …`: set, change and list alarms, and answer the one ringing (#11). The agent rings them
/// (docs/alarms.md).
struct AlarmCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarm",
        abstract: "Set, change and list alarms, and stop or snooze the one ringing; an enabled alarm the battery will not last to says so.",
        subcommands: [Add.self, List.self, On.self, Off.self, Edit.self, Remove.self, Stop.self, Snooze.self, Backup.self, Preview.self]
    )

    static func useCases(_ location: some Locating) -> AlarmUseCases {
        let store = DataStore(directory: location.paths.dataDirectory)
        let battery = MachinePorts.batteries(store: store, clock: SystemClock())
        return AlarmUseCases(store: store, clock: SystemClock(), battery: { battery.statusNow() }, sounds: {
            // Read only when a sound is chosen (`--sound`): the machine's themes, as `dosetap sounds list`.
            guard let devices = try? makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false) else { return [] }
            return Set(devices.channels.capabilities(logger: Logger(label: "dosetap.cli")).sounds.keys)
        })
    }

    /// An alarm id: a positive whole number in ASCII digits.
    struct AlarmID: ExpressibleByArgument, CustomStringConvertible {
        var value: Int
        init?(argument: String) {
            guard !argument.isEmpty, argument.count <= 9, argument.allSatisfy({ ("0"..."9").contains($0) }),
                  let n = Int(argument), n > 0 else { return nil }
            value = n
        }
        var description: String { "\(value)" }
    }

    struct Options: ParsableArguments {
        @Option(help: "A few words shown with the alarm (at most 200 characters).")
        var label: String?

        @Option(name: .customLong("repeat"), help: "once, daily, or days such as mon,tue,fri.")
        var repetition: String?

        @Option(help: "Its own sound (dosetap sounds list), or default for the alarm event's.")
        var sound: String?

        @Option(help: "Its own vibration: light, medium, strong, or default for the alarm event's.")
        var haptics: String?

        func validate() throws {
            if let repetition {
                do { _ = try AlarmRepeat(parsing: repetition) } catch { throw ValidationError(error.description) }
            }
            if let label {
                do { _ = try Alarm.validLabel(label) } catch { throw ValidationError(error.description) }
            }
            if let haptics, haptics != AlarmUseCases.defaultWord, HapticIntensity(rawValue: haptics) == nil {
                throw ValidationError("invalid intensity '\(oneLine(haptics))': use light, medium, strong or default")
            }
        }
    }

    static func validTime(_ text: String) throws {
        do { _ = try TimeOfDay(parsing: text) } catch { throw ValidationError(error.description) }
    }

    /// The answer to a change: the alarm's line, then its nudge when it is enabled and at risk.
    static func show(_ view: AlarmView, verb: String, json: Bool) {
        if json {
            printLine(view.json(in: SystemTimeZone.current).text)
            return
        }
        printLine("\(verb): \(view.line(in: SystemTimeZone.current))")
        for line in view.detailLines { printLine(line) }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add an alarm at a local time (HH:MM).")
        @Argument(help: "The local time, HH:MM.") var time: String
        @OptionGroup var options: Options
        @Flag(help: "Add it turned off.") var off = false
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func validate() throws { try AlarmCommand.validTime(time) }

        func run() throws {
            let view = try failing {
                try AlarmCommand.useCases(location).add(.init(time: time, label: options.label, repetition: options.repetition, enabled: !off,
                                                              sound: options.sound, haptics: options.haptics))
            }
            StandardOutput.markCommitted("added alarm \(view.alarm.id)")
            AlarmCommand.show(view, verb: "Added alarm", json: json)
            AlarmCommand.warnIfMaySleep([view], json: json, location: location)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "The alarms, when each rings next, and the at-risk ones' nudges.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            let (alarms, unusable) = try failing { try AlarmCommand.useCases(location).list() }
            AlarmCommand.warnIfMaySleep(alarms, json: json, location: location)
            if json {
                printLine(JSON.array(alarms.map { $0.json(in: SystemTimeZone.current) }).text)
                return
            }
            if alarms.isEmpty && unusable.isEmpty { printLine("No alarms. Add one: dosetap alarm add 06:30 --repeat daily") }
            for view in alarms {
                printLine(view.line(in: SystemTimeZone.current))
                for line in view.detailLines { printLine("   \(line)") }
                if let missed = view.missedAt { printLine("   Missed: \(missed.localClock())") }
            }
            for row in unusable { printLine("\(row.id)  unusable: \(DisplayText.escaped(row.reason))") }
        }
    }

    /// `on` and `off`: the same command but for the state it sets.
    static func toggle(_ id: AlarmID, on: Bool, json: Bool, location: some Locating) throws {
        let view = try failing { try AlarmCommand.useCases(location).setEnabled(id: id.value, on) }
        StandardOutput.markCommitted("alarm \(id) \(on ? "on" : "off")")
        AlarmCommand.show(view, verb: on ? "On" : "Off", json: json)
        AlarmCommand.warnIfMaySleep([view], json: json, location: location)
    }

    struct On: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "on", abstract: "Turn an alarm on.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws { try AlarmCommand.toggle(id, on: true, json: json, location: location) }
    }

    struct Off: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "off", abstract: "Turn an alarm off (it stays in the list).")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws { try AlarmCommand.toggle(id, on: false, json: json, location: location) }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "edit", abstract: "Change an alarm's time, label or repeat.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Option(help: "A new local time, HH:MM.") var time: String?
        @OptionGroup var options: Options
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func validate() throws {
            if let time { try AlarmCommand.validTime(time) }
            if time == nil && options.label == nil && options.repetition == nil && options.sound == nil && options.haptics == nil {
                throw ValidationError("nothing to change: give --time, --label, --repeat, --sound or --haptics")
            }
        }

        func run() throws {
            let view = try failing {
                try AlarmCommand.useCases(location).edit(id: id.value, .init(time: time, label: options.label, repetition: options.repetition,
                                                                         sound: options.sound, haptics: options.haptics))
            }
            StandardOutput.markCommitted("alarm \(id) changed")
            AlarmCommand.show(view, verb: "Changed alarm", json: json)
            AlarmCommand.warnIfMaySleep([view], json: json, location: location)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove an alarm.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @OptionGroup var location: DataOptions

        func run() throws {
            let alarm = try failing { try AlarmCommand.useCases(location).remove(id: id.value) }
            StandardOutput.markCommitted("alarm \(id) removed")
            printLine("Removed alarm \(alarm.id) (\(alarm.time), \"\(DisplayText.escaped(alarm.label))\")")
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the alarm ringing now.")
        @OptionGroup var location: DataOptions

        func run() async throws {
            let answer: AlarmUseCases.RingAnswer
            do {
                answer = try AlarmCommand.useCases(location).stopRinging(by: .cli)
            } catch {
                try await AlarmCommand.askAgent("stop", after: error)
                StandardOutput.markCommitted("the alarm ringing here stopped")
                printLine("Stopped the alarm ringing here, through the running agent (\(AlarmCommand.agentSaves)).")
                return
            }
            if let owner = answer.backupOf {
                StandardOutput.markCommitted("the backup alarm of \(owner) stopped")
                printLine("Stopped the backup alarm of \(owner)\(AlarmCommand.describe(answer.alarm)): the household hears it.")
                return
            }
            StandardOutput.markCommitted("alarm \(answer.ring.alarmID) stopped")
            printLine("Stopped alarm \(answer.ring.alarmID)\(AlarmCommand.describe(answer.alarm)).")
        }
    }

    struct Snooze: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "snooze", abstract: "Snooze the alarm ringing now: it rings again 9 minutes later.")
        @OptionGroup var location: DataOptions

        func run() async throws {
            let answer: AlarmUseCases.RingAnswer
            do {
                answer = try AlarmCommand.useCases(location).snoozeRinging(by: .cli)
            } catch {
                try await AlarmCommand.askAgent("snooze", after: error)
                StandardOutput.markCommitted("the alarm ringing here snoozed")
                printLine("Snoozed the alarm ringing here, through the running agent: it rings again in 9 minutes (\(AlarmCommand.agentSaves)).")
                return
            }
            let until = answer.ring.snoozeUntil.map { " at \(AlarmCommand.hourMinute($0))" } ?? ""
            if let owner = answer.backupOf {
                StandardOutput.markCommitted("the backup alarm of \(owner) snoozed")
                printLine("Snoozed the backup alarm of \(owner)\(AlarmCommand.describe(answer.alarm)): it rings here again\(until) unless someone stops it.")
                return
            }
            StandardOutput.markCommitted("alarm \(answer.ring.alarmID) snoozed")
            printLine("Snoozed alarm \(answer.ring.alarmID)\(AlarmCommand.describe(answer.alarm)): it rings again\(until).")
        }
    }

    static let agentSaves = "it saves the answer when its data can be written"

    /// After `alarm stop|snooze` could not answer through the store — it cannot be written (another program holds its
    /// lock, the disk is full), or it has no ring the agent could not record (#51) — the running agent is asked on its
    /// Unix socket, as a button answers: it ends the sound at once. Returns when it answered; otherwise throws the
    /// store's own error (no agent, or none rings there either).
    static func askAgent(_ answer: String, after error: any Error) async throws {
        guard let socket = WebFace.socketPath() else { throw CLIError("\(error)") }
        switch await AgentRingAnswer.ask(answer, socketPath: socket) {
        case .answered: return
        case .noneRinging, .unreachable: throw error as? CLIError ?? CLIError("\(error)")
        }
    }

    /// ` (06:30, "Work")`, or nothing when the alarm was removed meanwhile.
    static func describe(_ alarm: Alarm?) -> String {
        alarm.map { " (\($0.time), \"\(DisplayText.escaped($0.label))\")" } ?? ""
    }

    static func hourMinute(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = SystemTimeZone.current
        f.dateFormat = "HH:mm"
        return f.string(from: date)
    }

    /// `alarm backup ID on|off|add TARGET|move TARGET --to N|remove TARGET|list [--json]` (#12).
    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backup",
            abstract: "Who rings when this machine cannot: device:NAME, push:URL (ntfy), phone:NUMBER; on, off, add, move, remove, list.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Argument(help: "on, off, add, move, remove or list.") var verb: String
        @Argument(help: "The target (add, move, remove): device:NAME, push:URL or phone:NUMBER.") var target: String?
        @Option(help: "The new position of the target (move), from 1.") var to: Int?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func validate() throws {
            switch verb {
            case "on", "off", "list":
                if target != nil { throw ValidationError("\(verb) takes no target") }
            case "add", "remove":
                if target == nil { throw ValidationError("\(verb) needs a target: device:NAME, push:URL or phone:NUMBER") }
            case "move":
                if target == nil || to == nil { throw ValidationError("move needs a target and --to N") }
            default:
                throw ValidationError("invalid action '\(oneLine(verb))': use on, off, add, move, remove or list")
            }
            if to != nil && verb != "move" { throw ValidationError("--to goes with move") }
        }

        func run() throws {
            let useCases = AlarmCommand.useCases(location)
            let configuration = try? AgentConfiguration.load(from: location.paths.configFile)
            let household = AlarmUseCases.Household(device: configuration?.device ?? AgentConfiguration().device,
                                                    hasBroker: configuration?.mqtt != nil)
            let view: AlarmUseCases.BackupsView
            switch verb {
            case "list": view = try failing { try useCases.backups(id: id.value) }
            case "on": view = try failing { try useCases.changeBackups(id: id.value, .on, household: household) }
            case "off": view = try failing { try useCases.changeBackups(id: id.value, .off, household: household) }
            case "add": view = try failing { try useCases.changeBackups(id: id.value, .add(target ?? ""), household: household) }
            case "remove": view = try failing { try useCases.changeBackups(id: id.value, .remove(target ?? ""), household: household) }
            default: view = try failing { try useCases.changeBackups(id: id.value, .move(target ?? "", to: to ?? 0), household: household) }
            }
            if verb != "list" { StandardOutput.markCommitted("alarm \(id) backups changed") }
            if json {
                printLine(JSON.object([
                    ("alarm", .int(view.alarm.id)), ("enabled", .bool(view.enabled)),
                    ("targets", .array(view.targets.map { t in
                        .object([("target", .string(t.description)), ("kind", .string(t.kind)), ("name", .string(t.displayName)),
                                 ("sublabel", .optional(t.sublabel))])
                    })),
                ]).text)
            } else {
                printLine("Backups of alarm \(view.alarm.id)\(AlarmCommand.describe(view.alarm)): \(view.enabled ? "on" : "off")")
                if view.targets.isEmpty { printLine("   none yet: dosetap alarm backup \(view.alarm.id) add device:NAME|push:URL|phone:NUMBER") }
                for (n, t) in view.targets.enumerated() {
                    printLine("   \(n + 1)  \(DisplayText.escaped(t.displayName))  \(t.kind)" + (t.sublabel.map { "  \($0)" } ?? ""))
                }
                if let note = view.note { printLine("Note: \(note)") }
            }
        }
    }

    /// `alarm preview ID [--json]`: `05:02 — Alarm on bedroom-pi`, one line per backup.
    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "preview", abstract: "When each backup of an alarm would fire, for its next occurrence.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            let (occurrence, slots) = try failing { try AlarmCommand.useCases(location).preview(id: id.value) }
            if json {
                printLine(JSON.object([
                    ("occurrence", .string(occurrence.rfc3339(in: SystemTimeZone.current))),
                    ("slots", .array(slots.map { .object([("at", .string($0.at.rfc3339(in: SystemTimeZone.current))), ("target", .string($0.target.description)),
                                                          ("action", .string($0.target.action))]) })),
                ]).text)
                return
            }
            if slots.isEmpty { printLine("No backups: dosetap alarm backup \(id) add device:NAME|push:URL|phone:NUMBER") }
            for slot in slots { printLine("\(AlarmCommand.hourMinute(slot.at)) — \(DisplayText.escaped(slot.target.action))") }
        }
    }
}
