import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging

/// `dosetap alarm …`: set, change and list alarms, and answer the one ringing (#11). The agent rings them
/// (docs/alarms.md).
struct AlarmCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarm",
        abstract: "Set, change and list alarms, and stop or snooze the one ringing; an enabled alarm the battery will not last to says so.",
        subcommands: [Add.self, List.self, On.self, Off.self, Edit.self, Remove.self, Stop.self, Snooze.self]
    )

    static func useCases(_ location: LocationOptions) -> AlarmUseCases {
        let store = DataStore(directory: location.paths.dataDirectory)
        let battery = BatteryUseCases(store: store)
        return AlarmUseCases(store: store, battery: { battery.statusNow() }, sounds: {
            // Read only when a sound is chosen (`--sound`): the machine's themes, as `dosetap sounds list`.
            guard let devices = try? makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false) else { return [] }
            return Set(devices.capabilities(logger: Logger(label: "dosetap.cli")).sounds.keys)
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
            printLine(view.json().text)
            return
        }
        printLine("\(verb): \(view.line())")
        for line in view.detailLines { printLine(line) }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add an alarm at a local time (HH:MM).")
        @Argument(help: "The local time, HH:MM.") var time: String
        @OptionGroup var options: Options
        @Flag(help: "Add it turned off.") var off = false
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

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
        static let configuration = CommandConfiguration(abstract: "The alarms, when each rings next, and the at-risk ones' nudges.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let (alarms, unusable) = try failing { try AlarmCommand.useCases(location).list() }
            AlarmCommand.warnIfMaySleep(alarms, json: json, location: location)
            if json {
                printLine(JSON.array(alarms.map { $0.json() }).text)
                return
            }
            if alarms.isEmpty && unusable.isEmpty { printLine("No alarms. Add one: dosetap alarm add 06:30 --repeat daily") }
            for view in alarms {
                printLine(view.line())
                for line in view.detailLines { printLine("   \(line)") }
                if let missed = view.missedAt { printLine("   Missed: \(missed.localClock())") }
            }
            for row in unusable { printLine("\(row.id)  unusable: \(DisplayText.escaped(row.reason))") }
        }
    }

    /// `on` and `off`: the same command but for the state it sets.
    static func toggle(_ id: AlarmID, on: Bool, json: Bool, location: LocationOptions) throws {
        let view = try failing { try AlarmCommand.useCases(location).setEnabled(id: id.value, on) }
        StandardOutput.markCommitted("alarm \(id) \(on ? "on" : "off")")
        AlarmCommand.show(view, verb: on ? "On" : "Off", json: json)
        AlarmCommand.warnIfMaySleep([view], json: json, location: location)
    }

    struct On: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Turn an alarm on.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws { try AlarmCommand.toggle(id, on: true, json: json, location: location) }
    }

    struct Off: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Turn an alarm off (it stays in the list).")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws { try AlarmCommand.toggle(id, on: false, json: json, location: location) }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change an alarm's time, label or repeat.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @Option(help: "A new local time, HH:MM.") var time: String?
        @OptionGroup var options: Options
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

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
        static let configuration = CommandConfiguration(abstract: "Remove an alarm.")
        @Argument(help: "The alarm's id (dosetap alarm list).") var id: AlarmID
        @OptionGroup var location: LocationOptions

        func run() throws {
            let alarm = try failing { try AlarmCommand.useCases(location).remove(id: id.value) }
            StandardOutput.markCommitted("alarm \(id) removed")
            printLine("Removed alarm \(alarm.id) (\(alarm.time), \"\(DisplayText.escaped(alarm.label))\")")
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the alarm ringing now.")
        @OptionGroup var location: LocationOptions

        func run() throws {
            let answer = try failing { try AlarmCommand.useCases(location).stopRinging(by: .cli) }
            StandardOutput.markCommitted("alarm \(answer.ring.alarmID) stopped")
            printLine("Stopped alarm \(answer.ring.alarmID)\(AlarmCommand.describe(answer.alarm)).")
        }
    }

    struct Snooze: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Snooze the alarm ringing now: it rings again 9 minutes later.")
        @OptionGroup var location: LocationOptions

        func run() throws {
            let answer = try failing { try AlarmCommand.useCases(location).snoozeRinging(by: .cli) }
            StandardOutput.markCommitted("alarm \(answer.ring.alarmID) snoozed")
            let until = answer.ring.snoozeUntil.map { " at \(AlarmCommand.hourMinute($0))" } ?? ""
            printLine("Snoozed alarm \(answer.ring.alarmID)\(AlarmCommand.describe(answer.alarm)): it rings again\(until).")
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
}
