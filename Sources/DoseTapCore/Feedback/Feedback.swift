import Foundation

/// Everything DoseTap can tell a person about. The pinned names are the ones of the command line.
public enum FeedbackEvent: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case doseWindowOpen = "dose-window-open"
    case doseReminder = "dose-reminder"
    case doseUrgent = "dose-urgent"
    case doseClosed = "dose-closed"
    case doseRecorded = "dose-recorded"
    case actionRejected = "action-rejected"
    case batteryNudge = "battery-nudge"
    case alarm
    /// A battery of the house passed an alert threshold (#13); the critical level is shown as critical.
    case usageAlert = "usage-alert"

    /// Never muted by quiet mode.
    public var bypassesQuiet: Bool { self == .doseUrgent || self == .alarm }

    public init(validating name: String) throws(FeedbackSettingsError) {
        guard let e = FeedbackEvent(rawValue: name) else {
            throw FeedbackSettingsError("unknown event '\(name)': use one of \(FeedbackEvent.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = e
    }

    /// The reminder that rings this event, if any.
    public init(reminder: ReminderKind) {
        switch reminder {
        case .windowOpen: self = .doseWindowOpen
        case .reminder: self = .doseReminder
        case .urgent: self = .doseUrgent
        case .closed: self = .doseClosed
        }
    }
}

public enum HapticIntensity: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case light, medium, strong

    public init(validating name: String) throws(FeedbackSettingsError) {
        guard let i = HapticIntensity(rawValue: name) else {
            throw FeedbackSettingsError("invalid intensity '\(name)': use light, medium or strong")
        }
        self = i
    }

    /// The vibration for this intensity. On/off motors (the Pi's gpio-vibrator) ignore magnitude, so the
    /// three also differ in pulse length and count.
    public var pattern: HapticPattern {
        switch self {
        case .light: HapticPattern(intensity: self, magnitude: 0x5000, pulses: [.init(onMilliseconds: 150, offMilliseconds: 0)])
        case .medium: HapticPattern(intensity: self, magnitude: 0xA000, pulses: Array(repeating: .init(onMilliseconds: 250, offMilliseconds: 150), count: 2))
        case .strong: HapticPattern(intensity: self, magnitude: 0xFFFF, pulses: Array(repeating: .init(onMilliseconds: 400, offMilliseconds: 150), count: 3))
        }
    }
}

/// A vibration: pulses of the motor, at a magnitude (FF_RUMBLE's 0…0xFFFF) where the driver scales it.
public struct HapticPattern: Sendable, Equatable, Hashable {
    public struct Pulse: Sendable, Equatable, Hashable {
        public var onMilliseconds: Int
        public var offMilliseconds: Int
        public init(onMilliseconds: Int, offMilliseconds: Int) {
            self.onMilliseconds = onMilliseconds
            self.offMilliseconds = offMilliseconds
        }
    }

    public var intensity: HapticIntensity
    public var magnitude: UInt16
    public var pulses: [Pulse]

    public init(intensity: HapticIntensity, magnitude: UInt16, pulses: [Pulse]) {
        self.intensity = intensity
        self.magnitude = magnitude
        self.pulses = pulses
    }

    public var totalMilliseconds: Int { pulses.reduce(0) { $0 + $1.onMilliseconds + $1.offMilliseconds } }
}

/// A sound the machine has: from a freedesktop sound theme or the user's own sounds.
public struct SoundInfo: Sendable, Equatable, Hashable, Codable {
    /// The event-sound name ("alarm-clock-elapsed", "bell", "complete"…).
    public var name: String
    /// The theme it comes from ("freedesktop", "user", …).
    public var theme: String
    public var path: String

    public init(name: String, theme: String, path: String) {
        self.name = name
        self.theme = theme
        self.path = path
    }

    /// The sound DoseTap can always play, even with no theme installed.
    public static let builtinBeepName = "builtin-beep"
}

public struct FeedbackSettingsError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
