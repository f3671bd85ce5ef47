import DoseTapCore
import DoseTapStore
import Foundation
import Logging

/// The settings as every face reads and changes them: the night (setup's answers) and the feedback
/// (global and per event). A change is validated (a sound must exist on this machine, an intensity must be
/// one of light/medium/strong, the night's values their ranges), stored, and published as
/// `.settingsChanged`.
public struct SettingsUseCases: Sendable {
    public let settings: SettingsRepository
    private let devices: FeedbackChannels?
    private let history: DoseHistory?
    private let events: EventBus?
    private let logger: Logger
    /// Whether an alarm is ringing now (the agent's): a changed `alarm` feedback applies to the next ring.
    private let alarmRinging: (@Sendable () -> Bool)?

    /// - Parameters:
    ///   - devices: this machine's sounds and vibration motor, to check a chosen sound and report haptics;
    ///     without them no sound can be chosen.
    ///   - history: tonight's dose log, to tell whether a changed reminder is already scheduled.
    ///   - alarmRinging: whether an alarm rings now (the agent knows; the command line does not).
    public init(settings: SettingsRepository, devices: FeedbackChannels? = nil, history: DoseHistory? = nil,
                events: EventBus? = nil, logger: Logger = Logger(label: "dosetap.settings"),
                alarmRinging: (@Sendable () -> Bool)? = nil) {
        self.alarmRinging = alarmRinging
        self.settings = settings
        self.devices = devices
        self.history = history
        self.events = events
        self.logger = logger
    }

    /// The settings in the data folder (created on first use); with `devices`, opened after the database.
    public static func open(store: DataStore, clock: any WallClock, devices: (() throws -> FeedbackChannels)? = nil, events: EventBus? = nil,
                            logger: Logger = Logger(label: "dosetap.settings")) throws -> SettingsUseCases {
        let database = try store.open()
        let devices = try devices?()
        return SettingsUseCases(settings: SettingsRepository(database: database), devices: devices,
                                history: DoseHistory(store: store, clock: clock), events: events, logger: logger)
    }

    // MARK: The night

    /// The night's settings; the defaults when none are saved (or they cannot be read).
    public func night() -> UserSettings {
        (try? settings.load()) ?? .defaults
    }

    /// Saves the night's settings after checking them. Errors: the first invalid value, or
    /// "could not save settings: …".
    public func saveNight(_ night: UserSettings) throws {
        do {
            try settings.save(try night.validated())
        } catch let error as UserSettings.Invalid {
            throw UseCaseError(error.description)
        } catch {
            throw UseCaseError.unavailable("could not save settings: \(error)")
        }
        events?.publish(.settingsChanged)
    }

    /// A dose amount in grams as a person types it: "4.5".
    public static func doseGrams(_ text: String) throws -> Double {
        guard let g = PlainNumberText.parse(text), UserSettings.gramsRange.contains(g) else {
            throw UseCaseError("dose amount must be between 0.25 and 9 grams (got \(text))")
        }
        return g
    }

    /// The Dose 2 reminder, minutes after Dose 1: one of `DoseRules.targetOptions`.
    public static func dose2Target(_ text: String) throws -> Int {
        guard let m = Int(text), DoseRules.targetOptions.contains(m) else {
            throw UseCaseError("dose 2 target must be one of 165, 180, 195, 210, 225 minutes (got \(text))")
        }
        return m
    }

    // MARK: Feedback

    /// The feedback settings as shown: global and per event, quiet mode, and whether this machine vibrates.
    public struct Feedback: Sendable, Equatable {
        public var settings: FeedbackSettings
        public var quietMode: Bool
        public var hapticsSupported: Bool

        /// The global sound's name, "none" when turned off, nil when none was chosen (the built-in beep).
        public var globalSound: String? {
            switch settings.global.sound {
            case .unset: nil
            case .off: "none"
            case .named(let n): n
            }
        }
    }

    public func feedback() throws -> Feedback {
        let (feedback, night) = try load()
        return Feedback(settings: feedback, quietMode: night.quietMode, hapticsSupported: hapticsSupported)
    }

    /// Whether this machine has a vibration motor.
    public var hapticsSupported: Bool { devices?.haptics.isSupported ?? false }

    /// A change of the global feedback: nil leaves a value as it is.
    public struct FeedbackChange: Sendable, Equatable {
        public enum Sound: Sendable, Equatable {
            /// A sound of this machine (see the sound list).
            case named(String)
            /// No sound unless an event has its own.
            case off
        }

        public var sound: Sound?
        public var haptics: Bool?
        /// light, medium or strong.
        public var intensity: String?
        public var quiet: Bool?

        public init(sound: Sound? = nil, haptics: Bool? = nil, intensity: String? = nil, quiet: Bool? = nil) {
            self.sound = sound
            self.haptics = haptics
            self.intensity = intensity
            self.quiet = quiet
        }

        public var isEmpty: Bool { sound == nil && haptics == nil && intensity == nil && quiet == nil }
    }

    /// Changes the global feedback. Errors: "unknown sound '…': see dosetap sounds list", an invalid
    /// intensity, "could not save: …".
    public func changeFeedback(_ change: FeedbackChange) throws {
        var (feedback, night) = try load()
        switch change.sound {
        case .named(let name):
            try requireSound(name)
            feedback.global.sound = .named(name)
        case .off:
            feedback.global.sound = .off
        case nil:
            break
        }
        if let haptics = change.haptics { feedback.global.hapticsEnabled = haptics }
        if let intensity = change.intensity { feedback.global.intensity = try Self.intensity(intensity) }
        do {
            try settings.saveFeedback(feedback)
            if let quiet = change.quiet {
                night.quietMode = quiet
                try settings.save(night)
            }
        } catch {
            throw UseCaseError.unavailable("could not save: \(error)")
        }
        events?.publish(.settingsChanged)
    }

    /// An event's own value, or the global one.
    public enum Override<Value: Sendable & Equatable>: Sendable, Equatable {
        case useGlobal
        case set(Value)
    }

    /// A change of one event's feedback: nil leaves a value as it is.
    public struct EventFeedbackChange: Sendable, Equatable {
        /// Off: silent, whatever else is set.
        public var chime: Bool?
        public var sound: Override<String>?
        public var haptics: Override<Bool>?
        /// light, medium or strong.
        public var intensity: Override<String>?

        public init(chime: Bool? = nil, sound: Override<String>? = nil, haptics: Override<Bool>? = nil,
                    intensity: Override<String>? = nil) {
            self.chime = chime
            self.sound = sound
            self.haptics = haptics
            self.intensity = intensity
        }
    }

    /// Changes one event's feedback. Returns true when tonight's reminder for the event is already
    /// scheduled and has not rung (or, for `alarm`, an alarm rings now): the change applies next time.
    @discardableResult
    public func changeEvent(_ event: FeedbackEvent, _ change: EventFeedbackChange) throws -> Bool {
        var (feedback, _) = try load()
        var f = feedback.event(event)
        if let chime = change.chime { f.chime = chime }
        switch change.sound {
        case .useGlobal: f.sound = nil
        case .set(let name):
            try requireSound(name)
            f.sound = name
        case nil: break
        }
        switch change.haptics {
        case .useGlobal: f.haptics = nil
        case .set(let on): f.haptics = on
        case nil: break
        }
        switch change.intensity {
        case .useGlobal: f.intensity = nil
        case .set(let text): f.intensity = try Self.intensity(text)
        case nil: break
        }
        feedback.set(event, f)
        do { try settings.saveFeedback(feedback) } catch { throw UseCaseError.unavailable("could not save: \(error)") }
        events?.publish(.settingsChanged)
        if event == .alarm, alarmRinging?() == true { return true }
        return history?.reminderPending(for: event) ?? false
    }

    /// The sounds that can be chosen on this machine: the installed themes' and the built-in beep, by name.
    public func sounds() -> [SoundInfo] {
        guard let devices else { return [] }
        return devices.capabilities(logger: logger).sounds.values.sorted { $0.name < $1.name }
    }

    /// The settings screen at once: the feedback, what every event would play now and the sounds to choose
    /// from, with one listing of the machine's sounds (a listing walks the sound themes' folders).
    public func screen() throws -> (feedback: Feedback, plans: [FeedbackPlan], sounds: [SoundInfo]) {
        let (feedback, night) = try load()
        let capabilities = capabilities()
        let plans = FeedbackEvent.allCases.map {
            FeedbackResolver.resolve($0, settings: feedback, quiet: night.quietMode, capabilities: capabilities)
        }
        let sounds = devices == nil ? [] : capabilities.sounds.values.sorted { $0.name < $1.name }
        return (Feedback(settings: feedback, quietMode: night.quietMode, hapticsSupported: capabilities.hapticsSupported), plans, sounds)
    }

    /// The feedback the agent would play now for `event`, on this machine, with quiet mode.
    public func resolve(_ event: FeedbackEvent) throws -> FeedbackPlan {
        let (feedback, night) = try load()
        return FeedbackResolver.resolve(event, settings: feedback, quiet: night.quietMode, capabilities: capabilities())
    }

    private func load() throws -> (FeedbackSettings, UserSettings) {
        (try settings.loadFeedback(), try settings.load())
    }

    private func capabilities() -> FeedbackCapabilities {
        devices?.capabilities(logger: logger)
            ?? FeedbackCapabilities(hapticsSupported: false, sounds: [],
                                    builtinBeep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: ""))
    }

    private func requireSound(_ name: String) throws {
        guard devices?.capabilities(logger: logger).sounds[name] != nil else {
            throw UseCaseError("unknown sound '\(name)': see dosetap sounds list")
        }
    }

    private static func intensity(_ text: String) throws -> HapticIntensity {
        do { return try HapticIntensity(validating: text) } catch { throw UseCaseError(error.description) }
    }
}
