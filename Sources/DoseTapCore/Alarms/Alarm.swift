import Foundation

/// A day of the week, numbered as the Gregorian calendar numbers them (Sunday = 1).
public enum Weekday: Int, Sendable, Equatable, Hashable, CaseIterable, Comparable, Codable {
    case sun = 1, mon, tue, wed, thu, fri, sat

    public var name: String {
        switch self {
        case .sun: "sun"
        case .mon: "mon"
        case .tue: "tue"
        case .wed: "wed"
        case .thu: "thu"
        case .fri: "fri"
        case .sat: "sat"
        }
    }

    /// Monday first, as a week reads on the alarm screen.
    public static let weekOrder: [Weekday] = [.mon, .tue, .wed, .thu, .fri, .sat, .sun]

    public static func < (a: Weekday, b: Weekday) -> Bool {
        weekOrder.firstIndex(of: a)! < weekOrder.firstIndex(of: b)!
    }
}

/// When an alarm comes back: once (it turns itself off after it has rung), every day, or on some days.
public enum AlarmRepeat: Sendable, Equatable, Hashable, CustomStringConvertible {
    case once
    case daily
    /// Never empty; all seven days are `daily`.
    case days(Set<Weekday>)

    /// "once", "daily", or days such as "mon,tue,fri" (ASCII, any case, in any order, no repeats).
    public init(parsing text: String) throws(AlarmError) {
        switch text.lowercased() {
        case "once": self = .once
        case "daily": self = .daily
        default:
            var days = Set<Weekday>()
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let name = part.lowercased()
                guard let day = Weekday.allCases.first(where: { $0.name == name }), part.allSatisfy(\.isASCII) else {
                    throw AlarmError("invalid repeat '\(text)': use once, daily, or days such as mon,tue,fri (mon tue wed thu fri sat sun)")
                }
                guard days.insert(day).inserted else {
                    throw AlarmError("invalid repeat '\(text)': \(day.name) is given twice")
                }
            }
            self = days.count == 7 ? .daily : .days(days)
        }
    }

    public var description: String {
        switch self {
        case .once: "once"
        case .daily: "daily"
        case .days(let days): days.sorted().map(\.name).joined(separator: ",")
        }
    }

    /// Whether the alarm may ring on a local day of this weekday.
    public func allows(_ day: Weekday) -> Bool {
        switch self {
        case .once, .daily: true
        case .days(let days): days.contains(day)
        }
    }
}

/// A refused alarm input, in one line.
public struct AlarmError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// An alarm: a local time of day, a label, how it repeats, whether it is on, and what it plays.
public struct Alarm: Sendable, Equatable, Identifiable {
    /// Labels are at most this many characters.
    public static let maximumLabelLength = 200

    public var id: Int
    public var time: TimeOfDay
    public var label: String
    public var repetition: AlarmRepeat
    public var enabled: Bool
    /// A sound name of the machine's themes; nil: the `alarm` event's resolved sound.
    public var sound: String?
    /// nil: the `alarm` event's intensity.
    public var haptics: HapticIntensity?

    public init(id: Int, time: TimeOfDay, label: String = "Alarm", repetition: AlarmRepeat = .once, enabled: Bool = true,
                sound: String? = nil, haptics: HapticIntensity? = nil) throws(AlarmError) {
        self.id = id
        self.time = time
        self.label = try Self.validLabel(label)
        self.repetition = repetition
        self.enabled = enabled
        self.sound = sound
        self.haptics = haptics
    }

    /// A label is not empty (nor only blanks) and at most 200 characters; it is kept as typed (shown escaped).
    /// "Only blanks": every scalar White_Space or a zero-width space — exactly `CharacterSet.whitespacesAndNewlines`
    /// as Foundation has it here, without its NSString path, which costs a one-shot command three quarters of a
    /// million instructions at first use (#29; AlarmTests hold the two equal).
    public static func validLabel(_ label: String) throws(AlarmError) -> String {
        guard !isBlank(label) else {
            throw AlarmError("the label is empty: give a few words, such as --label \"Work\"")
        }
        guard label.count <= maximumLabelLength else {
            throw AlarmError("the label is \(label.count) characters long: at most \(maximumLabelLength)")
        }
        return label
    }

    /// Whether every scalar of `text` is white space or U+200B (an empty text is): what trimming
    /// `CharacterSet.whitespacesAndNewlines` leaves empty (its table still counts the zero-width space as one).
    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.properties.isWhitespace || $0 == "\u{200B}" }
    }

    /// The next instant strictly after `now` at which this alarm rings, in `timeZone`; nil when it is off.
    ///
    /// DST: a time that does not exist on a spring-forward night rings at the first moment after the gap
    /// (02:30 → 03:00); a time that happens twice on a fall-back night rings at its first instance only.
    public func nextOccurrence(after now: Date, in timeZone: TimeZone) -> Date? {
        guard enabled else { return nil }
        return Self.nextOccurrence(of: time, repeating: repetition, after: now, in: timeZone)
    }

    public static func nextOccurrence(of time: TimeOfDay, repeating: AlarmRepeat, after now: Date, in timeZone: TimeZone) -> Date {
        // Each local day's first showing of the time (TimeOfDay.firstInstant), on the days it may ring.
        let today = CivilTime.localDays(of: now, in: timeZone)
        for day in (today - 1)...(today + 9) where repeating.allows(CivilTime.weekday(ofLocalDay: day)) {
            let at = time.firstInstant(onLocalDay: day, in: timeZone)
            if at > now { return at }
        }
        // Not reached: every repeat allows a day of each week.
        return time.nextOccurrence(after: now, in: timeZone)
    }
}
