import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// The settings use cases with this machine's feedback devices (shared by the feedback commands).
func feedbackUseCases(_ location: some Locating) throws -> SettingsUseCases {
    try failing {
        try SettingsUseCases.open(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock(),
                                  devices: { try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false).channels },
                                  logger: Logger(label: "dosetap.cli"))
    }
}

struct FeedbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "How DoseTap tells you things: sound, vibration, notifications, per event.",
        subcommands: [Show.self, Set.self, Event.self, Resolve.self, Preview.self]
    )

    enum OnOff: String, ExpressibleByArgument, CaseIterable {
        case on, off
        var bool: Bool { self == .on }
    }

    enum OnOffDefault: String, ExpressibleByArgument, CaseIterable {
        case on, off, `default`
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show the global and per-event feedback settings.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            let feedback = try failing { try feedbackUseCases(location).feedback() }
            if json {
                printLine(feedback.json.text)
                return
            }
            let s = feedback.settings
            let globalSound = feedback.globalSound
            let hapticsSupported = feedback.hapticsSupported
            printLine("Sound: \(DisplayText.escaped(globalSound, placeholder: "none chosen (built-in beep)"))")
            printLine("Haptics: \(s.global.hapticsEnabled ? "on" : "off"), \(s.global.intensity.rawValue)"
                + (hapticsSupported ? "" : " — Not supported on this device"))
            printLine("Quiet mode: \(feedback.quietMode ? "on (sounds muted; urgent alerts and alarms still sound)" : "off")")
            printLine("Events:")
            for e in FeedbackEvent.allCases {
                let f = s.event(e)
                printLine("  \(e.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0)) chime \(f.chime ? "on " : "off")"
                    + "  sound \(DisplayText.escaped(f.sound, placeholder: "default"))  haptics \(f.haptics.map { $0 ? "on" : "off" } ?? "default")"
                    + "  intensity \(f.intensity?.rawValue ?? "default")")
            }
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change the global feedback settings.")
        @Option(help: "The sound every event plays unless it has its own (see dosetap sounds list).") var sound: String?
        @Flag(help: "No sound unless an event has its own.") var noSound = false
        @Option(help: "Vibration: on or off.") var haptics: OnOff?
        @Option(help: "light, medium or strong.") var intensity: String?
        @Option(help: "Quiet mode: on or off (mutes sounds; urgent dose alerts and alarms still sound).") var quiet: OnOff?
        @OptionGroup var location: DataOptions

        func validate() throws {
            if sound != nil && noSound { throw ValidationError("use either --sound or --no-sound") }
            if sound == nil && !noSound && haptics == nil && intensity == nil && quiet == nil {
                throw ValidationError("nothing to change: give --sound, --no-sound, --haptics, --intensity or --quiet")
            }
            if let intensity { _ = try usage { try HapticIntensity(validating: intensity) } }
        }

        func run() throws {
            let useCases = try feedbackUseCases(location)
            let change = SettingsUseCases.FeedbackChange(
                sound: noSound ? .off : sound.map { .named($0) }, haptics: haptics?.bool, intensity: intensity, quiet: quiet?.bool)
            try failing { try useCases.changeFeedback(change) }
            StandardOutput.markCommitted("saved")
            printLine("Saved.")
            if haptics == .on && !useCases.hapticsSupported {
                printLine("Haptics: Not supported on this device (no vibration motor found).")
            }
        }
    }

    struct Event: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "event", abstract: "Change one event's feedback (overrides of the global settings).")
        @Argument(help: "dose-window-open, dose-reminder, dose-urgent, dose-closed, dose-recorded, action-rejected, battery-nudge or alarm.")
        var event: String
        @Option(help: "on or off (off: silent, whatever else is set).") var chime: OnOff?
        @Option(help: "A sound name, or default.") var sound: String?
        @Option(help: "on, off or default.") var haptics: OnOffDefault?
        @Option(help: "light, medium, strong or default.") var intensity: String?
        @OptionGroup var location: DataOptions

        func validate() throws {
            _ = try usage { try FeedbackEvent(validating: event) }
            if let intensity, intensity != "default" { _ = try usage { try HapticIntensity(validating: intensity) } }
        }

        func run() throws {
            let e: FeedbackEvent
            do { e = try FeedbackEvent(validating: event) } catch { throw ValidationError(error.description) }
            let useCases = try feedbackUseCases(location)
            let change = SettingsUseCases.EventFeedbackChange(
                chime: chime?.bool,
                sound: sound.map { $0 == "default" ? .useGlobal : .set($0) },
                haptics: haptics.map { $0 == .default ? .useGlobal : .set($0 == .on) },
                intensity: intensity.map { $0 == "default" ? .useGlobal : .set($0) })
            let reminderPending = try failing { try useCases.changeEvent(e, change) }
            StandardOutput.markCommitted("saved")
            printLine("Saved.")
            if reminderPending {
                printLine("Timer is running, changes will apply next time")
            }
        }
    }

    struct Resolve: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resolve", abstract: "Show the feedback the agent would play now for an event.")
        @Argument(help: "The event name.") var event: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: DataOptions

        func run() throws {
            let e: FeedbackEvent
            do { e = try FeedbackEvent(validating: event) } catch { throw ValidationError(error.description) }
            let plan = try failing { try feedbackUseCases(location).resolve(e) }
            if json {
                printLine(plan.json.text)
                return
            }
            printLine("\(e.rawValue): " + (plan.chime ? "chime on" : "chime off (silent)"))
            if plan.chime {
                printLine("  sound: \(plan.sound.map { "\(DisplayText.escaped($0.name)) (\(DisplayText.escaped($0.path, maxLength: 300)))" } ?? (plan.muted ? "muted by quiet mode" : "none"))")
                printLine("  haptics: \(plan.haptics.map { "\($0.intensity.rawValue), \($0.pulses.count) pulse(s), \($0.totalMilliseconds) ms" } ?? "none")")
            }
            for w in plan.warnings { printLine("  warning: \(DisplayText.escaped(w, maxLength: 300))") }
        }
    }
}

extension FeedbackCommand {
    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "preview",
            abstract: "Play an event's feedback once, as the agent would now: its sound and its vibration (Ctrl-C stops it).",
            discussion: """
                The alarm is always heard: with its sound turned off, or a sound this machine cannot play, it plays \
                the built-in beep — through pw-play, paplay, play or aplay where installed, else through ALSA from \
                this process (DOSETAP_AUDIO_DEVICE names another output).
                """)
        @Argument(help: "dose-window-open, dose-reminder, dose-urgent, dose-closed, dose-recorded, action-rejected, battery-nudge or alarm.")
        var event: String
        @OptionGroup var location: DataOptions

        func run() async throws {
            let e: FeedbackEvent
            do { e = try FeedbackEvent(validating: event) } catch { throw ValidationError(error.description) }
            let logger = Logger(label: "dosetap.cli")
            let devices = try failing { try makeFeedbackDevices(logger: logger, desktop: false) }
            let plan = try failing {
                try SettingsUseCases.open(store: DataStore(directory: location.paths.dataDirectory), clock: SystemClock(),
                                          devices: { devices.channels }, logger: logger)
                    .resolve(e)
            }
            // As the agent rings it (AlarmBell): an alarm with no sound set plays the built-in beep.
            let sound = plan.chime ? plan.sound ?? (e == .alarm ? devices.beep : nil) : nil
            let haptics = plan.chime && devices.haptics.isSupported ? plan.haptics : nil
            guard sound != nil || haptics != nil else {
                printLine("\(e.rawValue): nothing to play (" + (plan.muted ? "muted by quiet mode" : plan.chime ? "no sound, no vibration" : "chime off") + ")")
                return
            }
            let played = try await interruptible {
                try await withThrowingTaskGroup(of: SoundInfo?.self) { group in
                    if let sound {
                        group.addTask {
                            if e == .alarm { return try await devices.playAlarmSound(sound, volume: 1, logger: logger) }
                            try await devices.player.play(sound)
                            return sound
                        }
                    }
                    if let haptics {
                        group.addTask {
                            try await devices.haptics.play(haptics)
                            return nil
                        }
                    }
                    var heard: SoundInfo?
                    for try await result in group { heard = heard ?? result }
                    return heard
                }
            } failure: { error in
                CLIError("cannot play the \(e.rawValue) feedback: \(error)")
            }
            guard let played else { throw ExitCode(130) }
            if let heard = played {
                printLine("\(e.rawValue): played \(DisplayText.escaped(heard.name))" + (heard.name != sound?.name ? " (instead of \(DisplayText.escaped(sound?.name ?? "")), which cannot play here)" : ""))
            }
            if let haptics {
                printLine("\(e.rawValue): vibrated \(haptics.intensity.rawValue), \(haptics.pulses.count) pulse(s), \(haptics.totalMilliseconds) ms")
            } else if plan.haptics != nil {
                printLine("\(e.rawValue): no vibration — Not supported on this device")
            }
        }
    }
}

/// Runs `body` until it ends or Ctrl-C cancels it: its result, or nil when Ctrl-C cancelled it (the caller
/// exits 130, like any interrupted command). A failure that was not the interruption is thrown as `failure(error)`.
func interruptible<T: Sendable>(_ body: @escaping @Sendable () async throws -> T, failure: (any Error) -> any Error) async throws -> T? {
    let work = Task { try await body() }
    let interrupted = Interrupted()
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    signal(SIGINT, SIG_IGN)
    interrupt.setEventHandler {
        interrupted.set()
        work.cancel()
    }
    interrupt.resume()
    defer { interrupt.cancel() }
    do {
        let value = try await work.value
        return interrupted.value ? nil : value
    } catch {
        if !interrupted.value { throw failure(error) }
        return nil
    }
}

struct SoundsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sounds", abstract: "The machine's sounds.", subcommands: [List.self, Preview.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the sounds of the installed themes and your own.")
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false)
            let sounds: [SoundInfo]
            do { sounds = try devices.catalog.list() } catch { throw CLIError("\(error)") }
            let all = sounds + [devices.beep]
            if json {
                printLine(JSON.array(all.map(\.json)).text)
                return
            }
            // File and theme names are the file system's: escaped and cut here, exact in --json.
            for s in all {
                printLine("\(DisplayText.escaped(s.name))  (\(DisplayText.escaped(s.theme)))  \(DisplayText.escaped(s.path, maxLength: 300))")
            }
        }
    }

    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "preview", abstract: "Play a sound until it ends (Ctrl-C stops it).")
        @Argument(help: "A name from dosetap sounds list.") var name: String

        func run() async throws {
            let devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false)
            let sound: SoundInfo
            do { sound = try devices.channels.sound(named: name) } catch { throw CLIError("\(error)") }
            let player = devices.player
            // Ctrl-C cancels the playback (the player stops its process), then exits 130 like any interrupted command.
            let name = self.name
            if try await interruptible({ try await player.play(sound) }, failure: { CLIError("cannot play \(name): \($0)") }) == nil {
                throw ExitCode(130)
            }
        }
    }
}

struct HapticsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haptics", abstract: "The vibration motor.", subcommands: [Test.self])

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "test", abstract: "Vibrate once at an intensity.")
        @Option(help: "light, medium or strong.") var intensity: String = "medium"

        func run() async throws {
            let level: HapticIntensity
            do { level = try HapticIntensity(validating: intensity) } catch { throw ValidationError(error.description) }
            let devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false)
            guard devices.haptics.isSupported else {
                printLine("Not supported on this device")
                return
            }
            let pattern = level.pattern
            do { try await devices.haptics.play(pattern) } catch { throw CLIError("vibration failed: \(error)") }
            printLine("Vibrated: \(level.rawValue), \(pattern.pulses.count) pulse(s), \(pattern.totalMilliseconds) ms")
        }
    }
}

/// Set once, from a signal handler's queue.
final class Interrupted: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}
