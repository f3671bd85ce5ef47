import Foundation

/// The global sound: not chosen yet (first run: the built-in beep), explicitly none, or a theme sound.
public enum GlobalSound: Sendable, Equatable, Codable {
    case unset
    case off
    case named(String)
}

/// Global feedback settings. First run: haptics on, intensity medium, no sound chosen.
public struct GlobalFeedback: Sendable, Equatable, Codable {
    public var hapticsEnabled: Bool = true
    public var intensity: HapticIntensity = .medium
    public var sound: GlobalSound = .unset

    public init(hapticsEnabled: Bool = true, intensity: HapticIntensity = .medium, sound: GlobalSound = .unset) {
        self.hapticsEnabled = hapticsEnabled
        self.intensity = intensity
        self.sound = sound
    }
}

/// One event's settings. `nil` overrides mean "use the global value".
public struct EventFeedback: Sendable, Equatable, Codable {
    public var chime: Bool = true
    public var sound: String?
    public var haptics: Bool?
    public var intensity: HapticIntensity?

    public init(chime: Bool = true, sound: String? = nil, haptics: Bool? = nil, intensity: HapticIntensity? = nil) {
        self.chime = chime
        self.sound = sound
        self.haptics = haptics
        self.intensity = intensity
    }
}

/// Every feedback setting, as stored.
public struct FeedbackSettings: Sendable, Equatable, Codable {
    public var global = GlobalFeedback()
    /// Keyed by the event's pinned name; a missing entry is all defaults.
    public var events: [String: EventFeedback] = [:]

    public init(global: GlobalFeedback = GlobalFeedback(), events: [String: EventFeedback] = [:]) {
        self.global = global
        self.events = events
    }

    public func event(_ e: FeedbackEvent) -> EventFeedback { events[e.rawValue] ?? EventFeedback() }
    public mutating func set(_ e: FeedbackEvent, _ value: EventFeedback) { events[e.rawValue] = value }
}

/// What the machine can do right now.
public struct FeedbackCapabilities: Sendable, Equatable {
    public var hapticsSupported: Bool
    /// Sounds by name; the built-in beep is always among them.
    public var sounds: [String: SoundInfo]

    public init(hapticsSupported: Bool, sounds: [SoundInfo], builtinBeep: SoundInfo) {
        self.hapticsSupported = hapticsSupported
        var byName: [String: SoundInfo] = [:]
        for s in sounds where byName[s.name] == nil { byName[s.name] = s }
        byName[SoundInfo.builtinBeepName] = builtinBeep
        self.sounds = byName
    }

    public var beep: SoundInfo { sounds[SoundInfo.builtinBeepName]! }
}

/// What will happen for one event, now.
public struct FeedbackPlan: Sendable, Equatable {
    public var event: FeedbackEvent
    public var chime: Bool
    public var sound: SoundInfo?
    public var haptics: HapticPattern?
    /// Quiet mode silenced a sound that would have played.
    public var muted: Bool
    public var warnings: [String]

    public init(event: FeedbackEvent, chime: Bool, sound: SoundInfo?, haptics: HapticPattern?, muted: Bool, warnings: [String]) {
        self.event = event
        self.chime = chime
        self.sound = sound
        self.haptics = haptics
        self.muted = muted
        self.warnings = warnings
    }

    public static let noNotificationWarning = "No notification will occur: enable sound or haptics"
}

/// Turns (global settings, the event's settings, what the machine can do, quiet mode) into a plan.
///
/// - Chime off: nothing at all.
/// - Sound: the event's sound → the global sound → the built-in beep when a chosen sound has vanished
///   (or none was ever chosen); none when the global sound is off and the event has no override.
/// - Quiet mode mutes sound, never haptics; `dose-urgent` and `alarm` are never muted.
/// - Haptics: the event's on/off and intensity, else the global ones; none without a motor.
/// - Chime on but neither sound nor haptics: a warning.
public enum FeedbackResolver {
    public static func resolve(_ event: FeedbackEvent, settings: FeedbackSettings, quiet: Bool,
                               capabilities: FeedbackCapabilities) -> FeedbackPlan {
        let e = settings.event(event)
        guard e.chime else {
            return FeedbackPlan(event: event, chime: false, sound: nil, haptics: nil, muted: false, warnings: [])
        }
        var warnings: [String] = []
        var sound: SoundInfo?
        var overrideMissing = false
        if let name = e.sound {
            if let s = capabilities.sounds[name] {
                sound = s
            } else {
                overrideMissing = true
                warnings.append("Sound '\(name)' for \(event.rawValue) is not available")
            }
        }
        if sound == nil {
            switch settings.global.sound {
            case .named(let name):
                if let s = capabilities.sounds[name] {
                    sound = s
                } else {
                    warnings.append("Sound '\(name)' is not available: playing the built-in beep")
                    sound = capabilities.beep
                }
            case .unset:
                sound = capabilities.beep
            case .off:
                // The person chose a sound for this event and it vanished: still make a sound.
                sound = overrideMissing ? capabilities.beep : nil
            }
        }
        var muted = false
        if quiet, sound != nil, !event.bypassesQuiet {
            sound = nil
            muted = true
        }
        let hapticsOn = e.haptics ?? settings.global.hapticsEnabled
        let intensity = e.intensity ?? settings.global.intensity
        let haptics = hapticsOn && capabilities.hapticsSupported ? intensity.pattern : nil
        if sound == nil, haptics == nil {
            warnings.append(FeedbackPlan.noNotificationWarning)
        }
        return FeedbackPlan(event: event, chime: true, sound: sound, haptics: haptics, muted: muted, warnings: warnings)
    }
}
