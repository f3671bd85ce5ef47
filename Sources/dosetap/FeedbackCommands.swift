import ArgumentParser
import DoseTapAgent
import DoseTapCore
import DoseTapStore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// Shared by the feedback, sounds and haptics commands.
struct FeedbackContext {
    let settings: SettingsRepository
    let devices: FeedbackDevices
    let logger = Logger(label: "dosetap.cli")

    init(_ location: LocationOptions, withDesktop: Bool = false) throws {
        do {
            settings = SettingsRepository(database: try DoseTapDatabase(directory: location.paths.dataDirectory))
        } catch {
            throw CLIError("\(error)")
        }
        devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: withDesktop)
    }

    func capabilities() -> FeedbackCapabilities { devices.capabilities(logger: logger) }

    func load() throws -> (FeedbackSettings, UserSettings) {
        do { return (try settings.loadFeedback(), try settings.load()) } catch { throw CLIError("\(error)") }
    }
}

struct FeedbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "How DoseTap tells you things: sound, vibration, notifications, per event.",
        subcommands: [Show.self, Set.self, Event.self, Resolve.self]
    )

    enum OnOff: String, ExpressibleByArgument, CaseIterable {
        case on, off
        var bool: Bool { self == .on }
    }

    enum OnOffDefault: String, ExpressibleByArgument, CaseIterable {
        case on, off, `default`
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the global and per-event feedback settings.")
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let context = try FeedbackContext(location)
            let (s, user) = try context.load()
            let hapticsSupported = context.devices.haptics.isSupported
            let globalSound: String? = switch s.global.sound {
            case .unset: nil
            case .off: "none"
            case .named(let n): n
            }
            if json {
                let events: [(String, JSON)] = FeedbackEvent.allCases.map { e in
                    let f = s.event(e)
                    return (e.rawValue, .object([
                        ("chime", .bool(f.chime)),
                        ("sound", .string(f.sound ?? "default")),
                        ("haptics", .string(f.haptics.map { $0 ? "on" : "off" } ?? "default")),
                        ("intensity", .string(f.intensity?.rawValue ?? "default")),
                    ]))
                }
                printLine(JSON.object([
                    ("global", .object([
                        ("sound", JSON.optional(globalSound)),
                        ("haptics", .bool(s.global.hapticsEnabled)),
                        ("intensity", .string(s.global.intensity.rawValue)),
                        ("quiet", .bool(user.quietMode)),
                        ("hapticsSupported", .bool(hapticsSupported)),
                    ])),
                    ("events", .object(events)),
                ]).text)
                return
            }
            printLine("Sound: \(DisplayText.escaped(globalSound, placeholder: "none chosen (built-in beep)"))")
            printLine("Haptics: \(s.global.hapticsEnabled ? "on" : "off"), \(s.global.intensity.rawValue)"
                + (hapticsSupported ? "" : " — Not supported on this device"))
            printLine("Quiet mode: \(user.quietMode ? "on (sounds muted; urgent alerts and alarms still sound)" : "off")")
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
        static let configuration = CommandConfiguration(abstract: "Change the global feedback settings.")
        @Option(help: "The sound every event plays unless it has its own (see dosetap sounds list).") var sound: String?
        @Flag(help: "No sound unless an event has its own.") var noSound = false
        @Option(help: "Vibration: on or off.") var haptics: OnOff?
        @Option(help: "light, medium or strong.") var intensity: String?
        @Option(help: "Quiet mode: on or off (mutes sounds; urgent dose alerts and alarms still sound).") var quiet: OnOff?
        @OptionGroup var location: LocationOptions

        func validate() throws {
            if sound != nil && noSound { throw ValidationError("use either --sound or --no-sound") }
            if sound == nil && !noSound && haptics == nil && intensity == nil && quiet == nil {
                throw ValidationError("nothing to change: give --sound, --no-sound, --haptics, --intensity or --quiet")
            }
        }

        func run() throws {
            let context = try FeedbackContext(location)
            var (s, user) = try context.load()
            if let sound {
                guard context.capabilities().sounds[sound] != nil else {
                    throw CLIError("unknown sound '\(sound)': see dosetap sounds list")
                }
                s.global.sound = .named(sound)
            }
            if noSound { s.global.sound = .off }
            if let haptics { s.global.hapticsEnabled = haptics.bool }
            if let intensity {
                do { s.global.intensity = try HapticIntensity(validating: intensity) } catch { throw CLIError(error.description) }
            }
            do {
                try context.settings.saveFeedback(s)
                if let quiet {
                    user.quietMode = quiet.bool
                    try context.settings.save(user)
                }
            } catch {
                throw CLIError("could not save: \(error)")
            }
            StandardOutput.markCommitted("saved")
            printLine("Saved.")
            if haptics == .on && !context.devices.haptics.isSupported {
                printLine("Haptics: Not supported on this device (no vibration motor found).")
            }
        }
    }

    struct Event: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change one event's feedback (overrides of the global settings).")
        @Argument(help: "dose-window-open, dose-reminder, dose-urgent, dose-closed, dose-recorded, action-rejected, battery-nudge or alarm.")
        var event: String
        @Option(help: "on or off (off: silent, whatever else is set).") var chime: OnOff?
        @Option(help: "A sound name, or default.") var sound: String?
        @Option(help: "on, off or default.") var haptics: OnOffDefault?
        @Option(help: "light, medium, strong or default.") var intensity: String?
        @OptionGroup var location: LocationOptions

        func run() throws {
            let e: FeedbackEvent
            do { e = try FeedbackEvent(validating: event) } catch { throw CLIError(error.description) }
            let context = try FeedbackContext(location)
            var (s, _) = try context.load()
            var f = s.event(e)
            if let chime { f.chime = chime.bool }
            if let sound {
                if sound == "default" {
                    f.sound = nil
                } else {
                    guard context.capabilities().sounds[sound] != nil else {
                        throw CLIError("unknown sound '\(sound)': see dosetap sounds list")
                    }
                    f.sound = sound
                }
            }
            if let haptics {
                f.haptics = switch haptics {
                case .on: true
                case .off: false
                case .default: nil
                }
            }
            if let intensity {
                if intensity == "default" {
                    f.intensity = nil
                } else {
                    do { f.intensity = try HapticIntensity(validating: intensity) } catch { throw CLIError(error.description) }
                }
            }
            s.set(e, f)
            do { try context.settings.saveFeedback(s) } catch { throw CLIError("could not save: \(error)") }
            StandardOutput.markCommitted("saved")
            printLine("Saved.")
            if reminderRunning(for: e) {
                printLine("Timer is running, changes will apply next time")
            }
        }

        /// Tonight's night is scheduled and this event's reminder has not rung yet.
        func reminderRunning(for event: FeedbackEvent) -> Bool {
            guard let kind = ReminderKind.allCases.first(where: { FeedbackEvent(reminder: $0) == event }),
                  let db = try? DoseTapDatabase.openForReading(directory: location.paths.dataDirectory) else { return false }
            let repo = DoseRepository(database: db)
            let now = Date()
            guard let session = try? repo.status(now: now, timeZone: SystemTimeZone.current).session, session.isActive(at: now),
                  let fired = try? repo.firedReminders(session: session.id) else { return false }
            return ReminderPlanner.reminders(for: session).contains { $0.kind == kind && $0.dueAt > now && !fired.contains($0) }
        }
    }

    struct Resolve: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the feedback the agent would play now for an event.")
        @Argument(help: "The event name.") var event: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var location: LocationOptions

        func run() throws {
            let e: FeedbackEvent
            do { e = try FeedbackEvent(validating: event) } catch { throw CLIError(error.description) }
            let context = try FeedbackContext(location)
            let (s, user) = try context.load()
            let plan = FeedbackResolver.resolve(e, settings: s, quiet: user.quietMode, capabilities: context.capabilities())
            if json {
                printLine(JSON.object([
                    ("event", .string(e.rawValue)),
                    ("chime", .bool(plan.chime)),
                    ("sound", JSON.optional(plan.sound?.name)),
                    ("haptics", plan.haptics.map { .object([("intensity", .string($0.intensity.rawValue))]) } ?? .null),
                    ("muted", .bool(plan.muted)),
                    ("warnings", .array(plan.warnings.map { .string($0) })),
                ]).text)
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

struct SoundsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sounds", abstract: "The machine's sounds.", subcommands: [List.self, Preview.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the sounds of the installed themes and your own.")
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false)
            let sounds: [SoundInfo]
            do { sounds = try devices.catalog.list() } catch { throw CLIError("\(error)") }
            let all = sounds + [devices.beep]
            if json {
                printLine(JSON.array(all.map { s in
                    .object([("name", .string(s.name)), ("theme", .string(s.theme)), ("path", .string(s.path))])
                }).text)
                return
            }
            // File and theme names are the file system's: escaped and cut here, exact in --json.
            for s in all {
                printLine("\(DisplayText.escaped(s.name))  (\(DisplayText.escaped(s.theme)))  \(DisplayText.escaped(s.path, maxLength: 300))")
            }
        }
    }

    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Play a sound until it ends (Ctrl-C stops it).")
        @Argument(help: "A name from dosetap sounds list.") var name: String

        func run() async throws {
            let devices = try makeFeedbackDevices(logger: Logger(label: "dosetap.cli"), desktop: false)
            let sounds: [SoundInfo]
            do { sounds = try devices.catalog.list() } catch { throw CLIError("\(error)") }
            guard let sound = (sounds + [devices.beep]).first(where: { $0.name == name }) else {
                throw CLIError("unknown sound '\(name)': see dosetap sounds list")
            }
            let player = devices.player
            // Ctrl-C cancels the playback (the player stops its process), then exits 130 like any interrupted command.
            let playback = Task { try await player.play(sound) }
            let interrupted = Interrupted()
            let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
            signal(SIGINT, SIG_IGN)
            interrupt.setEventHandler {
                interrupted.set()
                playback.cancel()
            }
            interrupt.resume()
            defer { interrupt.cancel() }
            do {
                try await playback.value
            } catch {
                if !interrupted.value { throw CLIError("cannot play \(name): \(error)") }
            }
            if interrupted.value { throw ExitCode(130) }
        }
    }
}

struct HapticsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haptics", abstract: "The vibration motor.", subcommands: [Test.self])

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Vibrate once at an intensity.")
        @Option(help: "light, medium or strong (default: medium).") var intensity: String = "medium"

        func run() async throws {
            let level: HapticIntensity
            do { level = try HapticIntensity(validating: intensity) } catch { throw CLIError(error.description) }
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
