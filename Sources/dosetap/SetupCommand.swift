import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation

struct SetupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Set up your night: bedtime, wake time, doses, Dose 2 reminder, notifications.",
        discussion: "Asks each question in turn (Enter keeps the value in brackets). Every answer can also be given as a flag, for scripts; with all of them no question is asked."
    )

    @Option(help: "Bedtime, HH:MM (default 22:30).") var bedtime: String?
    @Option(help: "Wake time, HH:MM (default 06:30).") var wakeTime: String?
    @Option(help: "Dose 1 amount in grams.") var dose1Grams: PlainNumber?
    @Option(help: "Dose 2 amount in grams.") var dose2Grams: PlainNumber?
    @Option(help: "Dose 2 reminder, minutes after Dose 1: 165, 180, 195, 210 or 225 (default 165).") var target: Int?
    @Option(help: "Desktop notifications: on or off.") var notifications: OnOff?
    @Option(help: "Quiet mode (mutes sounds, never urgent alerts): on or off.") var quietMode: OnOff?
    @Flag(help: "Run the wizard again although setup is done.") var reconfigure = false
    @Flag(help: "Print the saved settings.") var show = false
    @Flag(help: "With --show: print JSON.") var json = false
    @OptionGroup var location: DataOptions

    enum OnOff: String, ExpressibleByArgument, CaseIterable {
        case on, off
        var bool: Bool { self == .on }
    }

    var anyAnswerFlag: Bool {
        bedtime != nil || wakeTime != nil || dose1Grams != nil || dose2Grams != nil || target != nil
            || notifications != nil || quietMode != nil
    }

    func run() throws {
        let settings = try failing { try SettingsUseCases.open(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock()) }
        let current = settings.night()
        if show {
            print(settings: current)
            return
        }
        if current.configured, !reconfigure, !anyAnswerFlag {
            printLine("Already set up (use --reconfigure to change, --show to see everything):")
            print(settings: current)
            return
        }
        var s = current
        let interactive = !anyAnswerFlag || reconfigure
        s.bedtime = try answer("Bedtime (HH:MM)", flag: bedtime, current: s.bedtime, interactive: interactive) { text in
            try TimeOfDay(parsing: text).description
        }
        s.wakeTime = try answer("Wake time (HH:MM)", flag: wakeTime, current: s.wakeTime, interactive: interactive) { text in
            try TimeOfDay(parsing: text).description
        }
        s.dose1Grams = try answer("Dose 1 amount (grams)", flag: dose1Grams?.description, current: s.dose1Grams,
                                  interactive: interactive, parse: grams)
        s.dose2Grams = try answer("Dose 2 amount (grams)", flag: dose2Grams?.description, current: s.dose2Grams,
                                  interactive: interactive, parse: grams)
        s.dose2TargetMinutes = try answer("Dose 2 reminder, minutes after Dose 1 (165/180/195/210/225)",
                                          flag: target.map { String($0) }, current: s.dose2TargetMinutes,
                                          interactive: interactive, parse: SettingsUseCases.dose2Target)
        s.notificationsEnabled = try answer("Desktop notifications (on/off)", flag: notifications?.rawValue,
                                            current: s.notificationsEnabled, interactive: interactive, parse: onOff)
        s.quietMode = try answer("Quiet mode (on/off)", flag: quietMode?.rawValue, current: s.quietMode,
                                 interactive: interactive, parse: onOff)
        s.configured = true
        try failing { try settings.saveNight(s) }
        StandardOutput.markCommitted("settings saved")
        printLine("Saved.")
        print(settings: s)
    }

    func grams(_ text: String) throws -> Double {
        try SettingsUseCases.doseGrams(text)
    }

    func onOff(_ text: String) throws -> Bool {
        switch text.lowercased() {
        case "on", "yes", "y", "true": return true
        case "off", "no", "n", "false": return false
        default: throw CLIError("expected on or off (got \(text))")
        }
    }

    /// A flag wins; else, interactively, a prompt with the current value as default (3 tries); else the current value.
    func answer<T>(_ question: String, flag: String?, current: T, interactive: Bool,
                   parse: (String) throws -> T) throws -> T {
        if let flag {
            do { return try parse(flag) } catch { throw ValidationError("\(error)") }
        }
        guard interactive else { return current }
        for _ in 0..<3 {
            StandardOutput.write("\(question) [\(display(current))]: ")
            let text: String
            switch StandardInput.line() {
            case .text(let line):
                text = line
            case .endOfInput:
                // `setup < /dev/null` is no answer at all: nothing is saved and setup stays to do.
                printLine("")
                throw CLIError("standard input ended before setup was answered: nothing saved (answer the questions, or give every answer as a flag: --bedtime, --wake-time, --dose1-grams, --dose2-grams, --target, --notifications, --quiet-mode)")
            case .invalid:
                printLine("")
                printLine("  not an answer (one line of text, at most 256 bytes)")
                continue
            }
            if text.isEmpty { return current }
            do { return try parse(text) } catch { printLine("  \(error)") }
        }
        throw CLIError("no valid answer to '\(question)'")
    }

    func display<T>(_ value: T) -> String {
        if let b = value as? Bool { return b ? "on" : "off" }
        if let d = value as? Double { return d == d.rounded() ? String(Int(d)) : String(d) }
        return "\(value)"
    }

    func print(settings s: UserSettings) {
        if json {
            printLine(s.json.text)
            return
        }
        printLine("  Bedtime: \(s.bedtime)")
        printLine("  Wake time: \(s.wakeTime)")
        printLine("  Dose 1: \(display(s.dose1Grams)) g, Dose 2: \(display(s.dose2Grams)) g")
        printLine("  Dose 2 reminder: \(s.dose2TargetMinutes) min after Dose 1")
        printLine("  Notifications: \(display(s.notificationsEnabled)), quiet mode: \(display(s.quietMode))")
        if !s.configured { printLine("  (defaults: run dosetap setup to choose)") }
    }
}
