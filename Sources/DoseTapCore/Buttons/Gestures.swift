import Foundation

/// What a person did with a button.
public enum ButtonGesture: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case single
    case double
    case hold
    case triple
    case longDouble = "long-double"
    case longTriple = "long-triple"

    /// BTHome buttons classify presses themselves.
    /// (`hold_press` repeats while the button is held: the caller keeps one hold per holding.)
    public init?(bthome event: BTHomeButtonEvent) {
        switch event {
        case .press: self = .single
        case .doublePress: self = .double
        case .triplePress: self = .triple
        case .longPress, .holdPress: self = .hold
        case .longDoublePress: self = .longDouble
        case .longTriplePress: self = .longTriple
        case .none, .holdRelease, .unknown: return nil
        }
    }
}

/// What a gesture does. Every action goes through the dose engine's one policy.
public enum ButtonAction: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case take, snooze, undo, skip, none

    public var command: DoseCommand? {
        switch self {
        case .take: .take(confirmLate: false)
        case .snooze: .snooze
        case .undo: .undo
        case .skip: .skip(nil)
        case .none: nil
        }
    }
}

/// Gesture → action. Defaults: single → take, double → snooze, hold → undo; the rest do nothing.
public struct ButtonMapping: Sendable, Equatable, Hashable, Codable {
    public var single: ButtonAction = .take
    public var double: ButtonAction = .snooze
    public var hold: ButtonAction = .undo
    public var triple: ButtonAction = .none
    public var longDouble: ButtonAction = .none
    public var longTriple: ButtonAction = .none
    /// Single presses act at once; double presses are not recognised.
    public var noDouble = false

    public init() {}

    public func action(for gesture: ButtonGesture) -> ButtonAction {
        switch gesture {
        case .single: single
        case .double: noDouble ? .none : double
        case .hold: hold
        case .triple: triple
        case .longDouble: longDouble
        case .longTriple: longTriple
        }
    }
}

/// A raw key signal from a button that does not classify its own presses (the gesture recognizer classifies).
public enum KeySignal: Sendable, Equatable {
    /// Key down (HID remotes), with the kernel's timestamp.
    case down(at: Date)
    /// Key up.
    case up(at: Date)
    /// A press without a release (iTag notifications).
    case press(at: Date)
}

/// A recognised gesture and the instant it became certain (the input's age is measured from there).
public struct RecognizedGesture: Sendable, Equatable {
    public var gesture: ButtonGesture
    public var at: Date
}

/// Turns a button's timeline of downs and ups (or press-only notifications) into single, double and hold,
/// with Flic's constants: a click is released within 1 s, a hold lasts ≥ 1 s (recognised while still held),
/// a double is a second press within 0.5 s of the first release; presses within 50 ms of the previous
/// edge are contact bounce. In no-double mode a single acts at once.
///
/// Pure: time comes with the signals; the owner calls `expire(at:)` at `deadline`.
public struct GestureRecognizer: Sendable, Equatable {
    public struct Timing: Sendable, Equatable {
        public var clickMaximum: TimeInterval = 1.0
        public var holdMinimum: TimeInterval = 1.0
        public var doubleGap: TimeInterval = 0.5
        public var debounce: TimeInterval = 0.05
        public init() {}
    }

    public var timing: Timing
    public var noDouble: Bool

    private var downAt: Date?
    private var holdReported = false
    /// A click waiting to see whether a second one follows: (its release, it was already the second).
    private var pendingSingleUntil: Date?
    private var pendingStart: Date?
    private var secondPress = false
    private var lastEdge: Date?

    public init(timing: Timing = Timing(), noDouble: Bool = false) {
        self.timing = timing
        self.noDouble = noDouble
    }

    /// When `expire(at:)` must run next (a pending single or a hold in progress), or nil.
    public var deadline: Date? {
        var candidates: [Date] = []
        if let p = pendingSingleUntil { candidates.append(p) }
        if let d = downAt, !holdReported { candidates.append(d.addingTimeInterval(timing.holdMinimum)) }
        return candidates.min()
    }

    public mutating func feed(_ signal: KeySignal) -> [RecognizedGesture] {
        switch signal {
        case .down(let t):
            if let last = lastEdge, t.timeIntervalSince(last) < timing.debounce, t >= last { return [] }
            if downAt != nil { return [] } // a repeated down (key repeat) changes nothing
            let out = expire(at: t)
            lastEdge = t
            downAt = t
            holdReported = false
            if let until = pendingSingleUntil, t <= until {
                secondPress = true
                pendingSingleUntil = nil
            } else {
                secondPress = false
            }
            return out
        case .up(let t):
            guard let start = downAt else { return [] } // an up without a down: ignore
            if let last = lastEdge, t.timeIntervalSince(last) < timing.debounce, t >= last {
                // Bounce on release: treat as a still-held key; the next up ends it.
                return []
            }
            var out: [RecognizedGesture] = []
            out += expire(at: t)
            lastEdge = t
            downAt = nil
            let held = t.timeIntervalSince(start)
            if holdReported { return out }
            if held >= timing.holdMinimum {
                holdReported = true
                out.append(RecognizedGesture(gesture: .hold, at: start.addingTimeInterval(timing.holdMinimum)))
                return out
            }
            if noDouble {
                out.append(RecognizedGesture(gesture: .single, at: t))
            } else if secondPress {
                secondPress = false
                out.append(RecognizedGesture(gesture: .double, at: t))
            } else {
                pendingSingleUntil = t.addingTimeInterval(timing.doubleGap)
                pendingStart = t
            }
            return out
        case .press(let t):
            if let last = lastEdge, t.timeIntervalSince(last) < timing.debounce, t >= last { return [] }
            var out = expire(at: t)
            lastEdge = t
            if noDouble {
                out.append(RecognizedGesture(gesture: .single, at: t))
            } else if let until = pendingSingleUntil, t <= until {
                pendingSingleUntil = nil
                out.append(RecognizedGesture(gesture: .double, at: t))
            } else {
                pendingSingleUntil = t.addingTimeInterval(timing.doubleGap)
                pendingStart = t
            }
            return out
        }
    }

    /// Resolves what time alone decides: a single whose double window passed, a hold reached while held.
    public mutating func expire(at now: Date) -> [RecognizedGesture] {
        var out: [RecognizedGesture] = []
        if let until = pendingSingleUntil, now > until {
            out.append(RecognizedGesture(gesture: .single, at: until))
            pendingSingleUntil = nil
            pendingStart = nil
        }
        if let d = downAt, !holdReported, now.timeIntervalSince(d) >= timing.holdMinimum {
            holdReported = true
            out.append(RecognizedGesture(gesture: .hold, at: d.addingTimeInterval(timing.holdMinimum)))
        }
        return out
    }
}

/// Flood protection for one button: more than 60 actions in a minute are queued (and so grow stale: a
/// queued press never logs a dose); more than 200 in a minute mute the button for 5 minutes.
public struct ButtonFloodGuard: Sendable, Equatable {
    public enum Verdict: Sendable, Equatable {
        case allow
        case queue
        /// Muted until the instant; `announce` is true only the first time (one warning in the log).
        case muted(until: Date, announce: Bool)
    }

    public static let queueAbove = 60
    public static let muteAbove = 200
    public static let muteFor: TimeInterval = 300

    private var recent: [Date] = []
    private var mutedUntil: Date?

    public init() {}

    public mutating func admit(at now: Date) -> Verdict {
        if let until = mutedUntil {
            if now < until { return .muted(until: until, announce: false) }
            mutedUntil = nil
            recent.removeAll()
        }
        recent.removeAll { now.timeIntervalSince($0) >= 60 || $0 > now }
        recent.append(now)
        if recent.count > Self.muteAbove {
            let until = now.addingTimeInterval(Self.muteFor)
            mutedUntil = until
            return .muted(until: until, announce: true)
        }
        return recent.count > Self.queueAbove ? .queue : .allow
    }
}
