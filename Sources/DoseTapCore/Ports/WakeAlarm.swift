import Foundation

/// How the machine will be woken from suspend for an alarm or a dose reminder.
public enum WakeMethod: Sendable, Equatable, CustomStringConvertible {
    /// A `timerfd` on `CLOCK_REALTIME_ALARM`: the process holds `CAP_WAKE_ALARM`; the kernel programs the RTC.
    case alarmTimer
    /// The RTC's `wakealarm` file (epoch seconds), writable by this process (a udev rule and a group).
    case rtc(path: String)
    /// The system's wake helper (`dosetap wake-helper`, which holds `CAP_WAKE_ALARM`), over its socket (#28).
    case helper(socket: String)

    public var description: String {
        switch self {
        case .alarmTimer: "a CLOCK_REALTIME_ALARM timer (CAP_WAKE_ALARM)"
        case .rtc(let path): "the RTC's wake alarm (\(path))"
        case .helper(let socket): "the DoseTap wake helper (\(socket))"
        }
    }
}

/// Something that stands between an enabled alarm and its being noticed, said the same way on every face
/// (the CLI after `alarm add/on/edit/list`, the dashboard, the agent's log): "<prefix><reason>. Fix: <fix>".
public protocol AlarmProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// "This machine may sleep through the alarm: ", "This machine cannot play the alarm: ".
    static var prefix: String { get }
    /// What was found, in a few words.
    var reason: String { get }
    /// One line a person can act on.
    var fix: String { get }
}

extension AlarmProblem {
    public var message: String { Self.prefix + reason + ". Fix: " + fix }
    public var description: String { message }
}

/// Why the machine cannot be woken, and the one-line fix.
public struct WakeUnavailable: AlarmProblem {
    public static let prefix = "This machine may sleep through the alarm: "

    /// What was tried and why each failed, e.g. "this process lacks CAP_WAKE_ALARM (…), and … is not writable (…)".
    public var reason: String
    public var fix: String

    public init(reason: String, fix: String) {
        self.reason = reason
        self.fix = fix
    }
}

/// Why this machine cannot play the alarm's sound (no card, no server, no output that opens: `SoundCheck` in
/// DoseTapLinux), and the one-line fix (#32).
public struct SoundUnavailable: AlarmProblem {
    public static let prefix = "This machine cannot play the alarm: "

    public var reason: String
    public var fix: String

    public init(reason: String, fix: String) {
        self.reason = reason
        self.fix = fix
    }
}

/// The wake-from-suspend variant of the scheduling port: one wake-up at a wall-clock instant that brings
/// the machine out of suspend (the agent's ordinary timers then fire). Implemented on Linux by
/// `LinuxWakeAlarm` (DoseTapLinux/Power); tests use a fake.
public protocol WakeAlarm: Sendable {
    /// What this process can use to wake the machine, checked now (cheap, no side effect on the machine).
    func capability() -> Result<WakeMethod, WakeUnavailable>
    /// Arms the one wake-up for `date`, replacing any earlier one; returns how. Throws `WakeUnavailable`
    /// when nothing can wake the machine, or another error when arming failed.
    @discardableResult
    func arm(at date: Date) throws -> WakeMethod
    /// Clears the wake-up armed by this process, if any.
    func disarm()
}

/// When the machine must next be awake: the earliest of the alarms' next occurrences and the night's next
/// dose reminder (later: a pending snooze). Pure: the agent brings what it knows.
public enum WakeTarget {
    /// The earliest instant after `now` among the enabled alarms' next occurrences and `others` (the next
    /// dose reminder, a snooze); nil when there is nothing to wake for.
    public static func next(alarms: [Alarm], others: [Date?] = [], after now: Date, in timeZone: TimeZone) -> Date? {
        let occurrences = alarms.compactMap { $0.nextOccurrence(after: now, in: timeZone) }
        return (occurrences + others.compactMap { $0 }).filter { $0 > now }.min()
    }
}
