import Foundation

/// `[battery] guard`: what happens when an alarm's deadline (`AlarmDeadline`) comes and the machine is still awake on
/// its battery (#52 §3).
public enum SleepGuardMode: String, Sendable, Equatable, Codable, CaseIterable {
    /// The nudge plays again; then, when nobody uses the machine, DoseTap asks logind to suspend it (the default:
    /// GNOME already suspends an idle laptop on battery).
    case sleep
    /// The nudge plays again at the deadline; DoseTap never suspends the machine.
    case nudge
    /// Nothing happens at the deadline (the nudge `NudgeDecision.margin` before it still plays).
    case off
}

/// What logind and the sleep guard say of the machine when the guard must decide (read only then: no bus traffic on
/// an ordinary evening).
public struct GuardFacts: Sendable, Equatable {
    /// logind's `IdleHint` on the Manager: every session is idle (the desktop sets its session idle after its own idle
    /// delay — GNOME's screen blank, 5 minutes by default; a text console or SSH session after logind's IdleActionSec, 30 minutes by default, without input — measured in the VM tier).
    public var idle: Bool
    /// logind's `IdleSinceHint`, when it gives one (0 is none).
    public var idleSince: Date?
    /// Programs holding a `sleep` inhibitor in block mode (not DoseTap's own delay lock).
    public var blockedBy: [String]
    /// Why the machine cannot wake itself for the alarm (the sleep guard's finding), or nil when it can.
    public var cannotWake: String?
    /// logind's `CanSuspend`: "yes", or "no", "na", "challenge" (polkit would ask for a password), or nil when unknown.
    public var canSuspend: String?

    public init(idle: Bool, idleSince: Date? = nil, blockedBy: [String] = [], cannotWake: String? = nil, canSuspend: String? = "yes") {
        self.idle = idle
        self.idleSince = idleSince
        self.blockedBy = blockedBy
        self.cannotWake = cannotWake
        self.canSuspend = canSuspend
    }
}

/// The guard at the last safe moment (#52 §3). When an enabled alarm's deadline has come (`hasCome`: the deadline
/// instant passed, or even sleeping now is not enough) and the machine is still awake on its battery:
/// 1. the nudge plays again, once per occurrence (`.nudge` and `.sleep`), so a person still up hears it;
/// 2. with `.sleep`, DoseTap asks logind to suspend the machine, after a notification that says why, when
///    - the machine can wake itself for the alarm (never otherwise: a machine that sleeps through its alarm rings
///      nothing),
///    - logind allows it without a password (`CanSuspend` "yes"),
///    - no other program holds a blocking `sleep` inhibitor (a film playing, a backup running),
///    - and every session has been idle for `idleFor` (counted from logind's `IdleSinceHint`, or from when DoseTap
///      first saw the machine idle when logind does not say since when).
///
/// Until it may, it waits and decides again every `retry` and at every reading: the person who is still up keeps the
/// machine awake; once they walk away, the machine sleeps. Suspend is asked once per occurrence and awake stretch: a
/// resume (the person opened the lid again) lets it ask again; a refusal is told once and not retried. Plugging in
/// ends it. Pure: the agent reads the facts and does what it returns.
public struct DeadlineGuard: Sendable, Equatable {
    /// How long every session must have been idle before the guard suspends the machine: on top of the desktop's own
    /// idle delay (which sets `IdleHint`), long enough that a person who paused to read the nudge is not put to sleep.
    public static let idleFor: TimeInterval = 2 * 60
    /// While the guard waits (the machine in use, or blocked), it decides again this often between readings.
    public static let retry: TimeInterval = 60

    /// One occurrence of one alarm.
    public struct Key: Sendable, Hashable {
        public var alarm: Int
        public var occurrence: Date

        public init(alarm: Int, occurrence: Date) {
            self.alarm = alarm
            self.occurrence = occurrence
        }
    }

    /// What the guard says of the machine now.
    public enum Verdict: Sendable, Equatable {
        /// Suspend now, after this notification.
        case suspend(notification: String)
        /// Not now; decide again later (in use, blocked, idle too short).
        case wait(because: String)
        /// The guard will not suspend this machine (the mode, or a fact that will not change tonight).
        case never(because: String)

        public var because: String {
            switch self {
            case .suspend(let text): text
            case .wait(let because), .never(let because): because
            }
        }
    }

    /// What to do at one decision.
    public struct Plan: Sendable, Equatable {
        /// The occurrences whose deadline nudge plays now.
        public var nudge: [Key] = []
        /// The occurrence the guard acts for (the earliest alarm whose deadline has come), nil when none.
        public var guarding: Key?
        /// Whether the facts must be read and `verdict` asked (mode `.sleep`, a deadline come, suspend not asked yet).
        public var askFacts = false

        public init(nudge: [Key] = [], guarding: Key? = nil, askFacts: Bool = false) {
            self.nudge = nudge
            self.guarding = guarding
            self.askFacts = askFacts
        }
    }

    private(set) var nudged: Set<Key> = []
    private(set) var suspendAsked: Set<Key> = []
    /// When DoseTap first saw every session idle, for a logind that does not say since when.
    private(set) var idleSeen: Date?

    public init() {}

    /// Whether the deadline of this alarm has come: the instant has passed, or even sleeping now is not enough.
    public static func hasCome(_ deadline: AlarmDeadline, now: Date) -> Bool {
        guard deadline.alarm > now else { return false }
        switch deadline.kind {
        case .now: return true
        case .at: return deadline.deadline.map { $0 <= now } ?? false
        case .none, .unknown: return false
        }
    }

    /// The instant the guard must next decide without a new reading: the earliest deadline still ahead.
    public static func nextDeadline(_ deadlines: [AlarmDeadline], now: Date) -> Date? {
        deadlines.compactMap { $0.kind == .at && $0.alarm > now ? $0.deadline : nil }.filter { $0 > now }.min()
    }

    /// One decision: which deadline nudges play, and whether to read the facts. `deadlines`: each enabled alarm's
    /// occurrence and its deadline at this instant.
    public mutating func step(_ deadlines: [(key: Key, deadline: AlarmDeadline)], onAC: Bool, mode: SleepGuardMode, now: Date) -> Plan {
        // Occurrences that passed are forgotten.
        nudged = nudged.filter { $0.occurrence > now }
        suspendAsked = suspendAsked.filter { $0.occurrence > now }
        var plan = Plan()
        guard !onAC, mode != .off else {
            if onAC { idleSeen = nil }
            return plan
        }
        let come = deadlines.filter { Self.hasCome($0.deadline, now: now) }.sorted { $0.key.occurrence < $1.key.occurrence }
        for entry in come where !nudged.contains(entry.key) {
            nudged.insert(entry.key)
            plan.nudge.append(entry.key)
        }
        plan.guarding = come.first?.key
        if mode == .sleep, let key = plan.guarding, !suspendAsked.contains(key) { plan.askFacts = true }
        return plan
    }

    /// The verdict from the facts, for the alarm `at` ("06:30") with the battery at `level` %.
    public mutating func verdict(_ facts: GuardFacts, mode: SleepGuardMode, alarm at: String, level: Int?, now: Date) -> Verdict {
        if facts.idle {
            if idleSeen == nil { idleSeen = now }
        } else {
            idleSeen = nil
        }
        if let never = Self.never(mode: mode, cannotWake: facts.cannotWake, canSuspend: facts.canSuspend) { return .never(because: never) }
        if let blocker = facts.blockedBy.first {
            return .wait(because: "\(DisplayText.escaped(blocker, maxLength: 40)) keeps it from sleeping")
        }
        guard facts.idle else { return .wait(because: "someone is using it (logind: not every session is idle)") }
        let since = facts.idleSince.flatMap { $0 <= now ? $0 : nil } ?? idleSeen ?? now
        let idleFor = now.timeIntervalSince(since)
        guard idleFor >= Self.idleFor else {
            return .wait(because: "idle for \(Int(idleFor)) s: it waits until nobody has used it for \(Int(Self.idleFor / 60)) minutes")
        }
        return .suspend(notification: Self.notification(alarm: at, level: level))
    }

    /// The reason the guard never suspends this machine, or nil when it may (the mode, the wake-up, logind's leave).
    public static func never(mode: SleepGuardMode, cannotWake: String?, canSuspend: String?) -> String? {
        switch mode {
        case .off: return "the guard is off ([battery] guard = \"off\")"
        case .nudge: return "the guard only nudges ([battery] guard = \"nudge\")"
        case .sleep: break
        }
        if let cannotWake { return "it cannot wake itself for the alarm: \(DisplayText.escaped(cannotWake, maxLength: 300))" }
        guard let canSuspend else { return "logind does not answer whether it may suspend it (CanSuspend)" }
        if canSuspend != "yes" {
            return "logind does not let DoseTap suspend it (CanSuspend: \(DisplayText.escaped(canSuspend, maxLength: 20)))"
        }
        return nil
    }

    /// Suspend was asked for `key` (once per awake stretch: a resume lets the guard ask again).
    public mutating func asked(_ key: Key) {
        suspendAsked.insert(key)
        idleSeen = nil
    }

    /// The machine went to sleep (by the guard or otherwise): after the resume the guard may ask again, and idleness
    /// is counted afresh.
    public mutating func suspending() {
        suspendAsked = []
        idleSeen = nil
    }

    /// What applies on this machine, for `dosetap battery` and the agent's log at start: whether the guard may
    /// suspend it, and one sentence. The facts that change during an evening (idle, inhibitors, logind's leave) are
    /// read at the deadline and logged then.
    public static func summary(mode: SleepGuardMode, cannotWake: String?) -> (suspends: Bool, text: String) {
        switch mode {
        case .off:
            return (false, "off ([battery] guard = \"off\"): nothing happens at an alarm's deadline beyond the nudge "
                + "\(Int(NudgeDecision.margin / 60)) minutes before it")
        case .nudge:
            return (false, "nudge only ([battery] guard = \"nudge\"): at an alarm's deadline the nudge plays again; "
                + "DoseTap never puts this machine to sleep")
        case .sleep:
            if let cannotWake {
                return (false, "nudge only: DoseTap never puts this machine to sleep, it cannot wake itself for the alarm ("
                    + DisplayText.escaped(cannotWake, maxLength: 300) + ")")
            }
            return (true, "on: at an alarm's deadline, still awake on its battery, the nudge plays again; once nobody has used "
                + "this machine for \(Int(idleFor / 60)) minutes and no program blocks sleep, DoseTap puts it to sleep and the alarm wakes it")
        }
    }

    /// "Going to sleep to keep the 06:30 alarm: battery 31 %".
    public static func notification(alarm at: String, level: Int?) -> String {
        "Going to sleep to keep the \(at) alarm" + (level.map { ": battery \($0) %" } ?? "")
    }
}
