import Foundation

/// Where an input came from. Recorded with every event.
public enum InputSource: String, Sendable, Equatable, Codable, CaseIterable {
    case cli
    case button
    case notification
    case agent
    case web
    /// A Home Assistant button over the household broker (docs/home-assistant.md).
    case mqtt
}

/// Why dose 2 was skipped.
public enum SkipReason: String, Sendable, Equatable, Codable, CaseIterable {
    case alert = "alert"
    case sideEffects = "side-effects"
    case other = "other"
    /// Recorded by the agent at close when neither dose 2 nor a skip came.
    case windowExpired = "window_expired"
    /// Recorded by the agent when it was not running at close time.
    case devicePoweredOff = "device_powered_off"

    /// The words a person picked ("Feeling alert enough", …).
    public var label: String {
        switch self {
        case .alert: "Feeling alert enough"
        case .sideEffects: "Side effects"
        case .other: "Other reason"
        case .windowExpired: "Window expired"
        case .devicePoweredOff: "Device was off at close"
        }
    }

    public var isAutomatic: Bool { self == .windowExpired || self == .devicePoweredOff }
}

/// One entry of the append-only dose log. Never edited or deleted: an undo is a new event.
public struct DoseEvent: Sendable, Equatable, Identifiable {
    public enum Kind: Sendable, Equatable {
        /// Dose 1, with the reminder target (minutes after dose 1) in force when it was taken.
        case dose1(targetMinutes: Int)
        /// Dose 2; `late` when taken after close with explicit confirmation.
        case dose2(late: Bool)
        case snooze
        case skip(SkipReason?)
        /// Cancels the event with this id.
        case undo(of: UUID)
        /// Discards the event with this id: one dated in the future, set aside (`dosetap dose discard`). It
        /// stays in the log, marked; the notice about it ends.
        case discard(of: UUID)
    }

    public var id: UUID
    public var kind: Kind
    /// The instant it happened (UTC).
    public var at: Date
    /// The time zone in force then (an IANA identifier), for display and the night's date.
    public var timeZone: String
    public var source: InputSource

    public init(id: UUID, kind: Kind, at: Date, timeZone: String, source: InputSource) {
        self.id = id
        self.kind = kind
        self.at = at
        self.timeZone = timeZone
        self.source = source
    }

    public var zone: TimeZone { TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")! }

    /// A short name for messages: "Dose 1", "Dose 2", "Snooze", "Skip", "Undo".
    public var label: String {
        switch kind {
        case .dose1: "Dose 1"
        case .dose2: "Dose 2"
        case .snooze: "Snooze"
        case .skip: "Skip"
        case .undo: "Undo"
        case .discard: "Discard"
        }
    }

    /// Dated more than `DoseRules.futureTolerance` after `now`.
    public func isDatedAfter(_ now: Date) -> Bool {
        at.timeIntervalSince(now) > DoseRules.futureTolerance
    }
}
