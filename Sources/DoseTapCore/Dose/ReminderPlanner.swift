import Foundation

/// The four moments of a night the agent tells the person about. Names match the feedback events.
public enum ReminderKind: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case windowOpen = "dose-window-open"
    case reminder = "dose-reminder"
    case urgent = "dose-urgent"
    case closed = "dose-closed"

    /// When several are due at once (after a restart), the most important one speaks for all.
    var priority: Int {
        switch self {
        case .windowOpen: 0
        case .reminder: 1
        case .urgent: 2
        case .closed: 3
        }
    }
}

/// One reminder of one night at one instant. A snoozed reminder is a new one (a new `dueAt`).
public struct Reminder: Sendable, Equatable, Hashable, Codable {
    public var kind: ReminderKind
    public var sessionID: UUID
    public var dueAt: Date

    public init(kind: ReminderKind, sessionID: UUID, dueAt: Date) {
        self.kind = kind
        self.sessionID = sessionID
        self.dueAt = dueAt
    }
}

/// What a notification says, and how loudly.
public struct DoseNotification: Sendable, Equatable {
    public enum Action: String, Sendable, Equatable, CaseIterable {
        case takeNow = "take"
        case snooze = "snooze"
        case skip = "skip"

        public var label: String {
            switch self {
            case .takeNow: "Take Now"
            case .snooze: "Snooze 10min"
            case .skip: "Skip"
            }
        }
    }

    public var reminder: Reminder
    public var title: String
    public var body: String
    /// Urgent alerts bypass quiet mode and are shown as critical.
    public var urgent: Bool
    public var actions: [Action]
}

/// Decides which reminders of a night are due, and what they say. Pure: the agent brings the clock.
public enum ReminderPlanner {
    /// Every reminder of a night still waiting for Dose 2 (none after Dose 2 or a person's skip).
    public static func reminders(for session: NightSession) -> [Reminder] {
        guard session.dose2 == nil, session.manualSkip == nil else { return [] }
        return [
            Reminder(kind: .windowOpen, sessionID: session.id, dueAt: session.windowOpensAt),
            Reminder(kind: .reminder, sessionID: session.id, dueAt: session.reminderAt),
            Reminder(kind: .urgent, sessionID: session.id, dueAt: session.nearCloseAt),
            Reminder(kind: .closed, sessionID: session.id, dueAt: session.windowClosesAt),
        ]
    }

    /// Until when a reminder is still worth saying.
    static func relevantUntil(_ kind: ReminderKind, _ session: NightSession) -> Date {
        switch kind {
        case .windowOpen: session.nearCloseAt
        case .reminder, .urgent: session.windowClosesAt
        case .closed: session.graceEndsAt
        }
    }

    /// What to do now: the one reminder to fire (the latest and most important of those due), and the
    /// due ones it makes pointless (after a restart at 230 min: "urgent", not also "window open").
    public static func due(_ session: NightSession, fired: Set<Reminder>, now: Date) -> (fire: Reminder?, superseded: [Reminder]) {
        let due = reminders(for: session).filter { $0.dueAt <= now && !fired.contains($0) }
        guard !due.isEmpty else { return (nil, []) }
        let relevant = due.filter { now < relevantUntil($0.kind, session) }
        let pick = relevant.max { ($0.dueAt, $0.kind.priority) < ($1.dueAt, $1.kind.priority) }
        return (pick, due.filter { $0 != pick })
    }

    /// The next instant something is due (a reminder, or the close), or nil when the night needs nothing more.
    public static func nextDue(_ session: NightSession, fired: Set<Reminder>, now: Date) -> Date? {
        reminders(for: session).filter { !fired.contains($0) && $0.dueAt > now }.map(\.dueAt).min()
    }

    public static func notification(for reminder: Reminder, session: NightSession, now: Date) -> DoseNotification {
        let all = DoseNotification.Action.allCases
        switch reminder.kind {
        case .windowOpen:
            return DoseNotification(reminder: reminder, title: "Dose window now open",
                                    body: "Dose 2 can be taken until the window closes.", urgent: false, actions: all)
        case .reminder:
            return DoseNotification(reminder: reminder, title: "Time for Dose 2",
                                    body: "It is time to take Dose 2.", urgent: false, actions: all)
        case .urgent:
            let left = max(1, session.minutesRemaining(at: now) ?? 0)
            return DoseNotification(reminder: reminder, title: "URGENT: \(left) min to take Dose 2",
                                    body: "The Dose 2 window closes soon.", urgent: true, actions: [.takeNow, .skip])
        case .closed:
            return DoseNotification(reminder: reminder, title: "Dose 2 window has closed",
                                    body: "A late Dose 2 can only be recorded with confirmation, within 30 minutes.",
                                    urgent: false, actions: [])
        }
    }
}
