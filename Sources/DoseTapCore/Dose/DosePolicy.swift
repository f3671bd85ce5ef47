import Foundation

/// What someone asked for, from any source: the command line, a button, a notification, the agent.
public enum DoseCommand: Sendable, Equatable {
    /// Dose 1 when idle, else dose 2. `confirmLate` allows a late dose 2 within the grace after close.
    case take(confirmLate: Bool)
    case snooze
    case skip(SkipReason?)
    case undo
    /// Undo exactly this event (the web page names what it shows): refused when it is already undone or no
    /// longer the last action, so a second submit of the same Undo does nothing.
    case undoEvent(UUID)
    /// Snooze the reminder that this event set (Dose 1 or the last snooze, as the page showed it): refused
    /// once another snooze has moved it, so a double submit counts once.
    case snoozeReminder(setBy: UUID)
    /// The agent closes a night that got neither dose 2 nor a skip.
    case autoSkip(SkipReason)
    /// Discard the event this names (its whole id, or its first 8 or more hexadecimal digits): one set aside
    /// because it is dated in the future (#51). Recorded as an event; the set-aside event stays in the log, marked.
    case discard(reference: String)
}

public struct DoseInput: Sendable, Equatable {
    public var command: DoseCommand
    public var source: InputSource
    /// When the person acted (a button's press time); the decision is made later, at `now`.
    public var issuedAt: Date

    public init(command: DoseCommand, source: InputSource, issuedAt: Date) {
        self.command = command
        self.source = source
        self.issuedAt = issuedAt
    }
}

/// A refused input: a stable code for programs, a sentence for people.
public struct DoseRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable, Codable {
        case staleInput = "stale-input"
        case tooEarly = "too-early"
        case lateNeedsConfirmation = "late-needs-confirmation"
        case lateFromButton = "late-from-button"
        case tooLate = "too-late"
        case alreadyCompleted = "already-completed"
        case alreadySkipped = "already-skipped"
        case noDose1 = "no-dose-1"
        case snoozeLimit = "snooze-limit"
        case snoozeNearClose = "snooze-near-close"
        case snoozePastLatest = "snooze-past-latest"
        case nothingToUndo = "nothing-to-undo"
        case undoExpired = "undo-expired"
        case alreadyUndone = "already-undone"
        case notLastAction = "not-last-action"
        case alreadySnoozed = "already-snoozed"
        case notDue = "not-due"
        case logUnreadable = "log-unreadable"
        case notSetAside = "not-set-aside"
        case alreadyDiscarded = "already-discarded"
        case noSuchEvent = "no-such-event"
        case setAsideDose1 = "set-aside-dose-1"
    }

    public var code: Code
    public var message: String
    public var description: String { message }

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

/// The outcome of one input: an event to append, with a confirmation, or a refusal.
public enum DoseDecision: Sendable, Equatable {
    case record(DoseEvent.Kind, confirmation: String)
    case refuse(DoseRefusal)
}

/// The one policy that decides every input. Pure: the log, the instant and the zone come in as values.
public enum DosePolicy {
    public static func decide(_ input: DoseInput, log: DoseLog, now: Date, timeZone: TimeZone,
                              targetMinutes: Int) -> DoseDecision {
        let clock = ClockText(timeZone: timeZone)
        if case .discard(let id) = input.command {
            // Before the unreadable-entry check: discarding an event set aside is always allowed, and changes
            // nothing the rules count.
            return discard(id, source: input.source, log: log, now: now, timeZone: timeZone)
        }
        if input.command != .autoSkip(.windowExpired), input.command != .autoSkip(.devicePoweredOff) {
            let age = now.timeIntervalSince(input.issuedAt)
            if abs(age) > DoseRules.maximumInputAge {
                return refuse(.staleInput, "Ignored: the \(input.source == .button ? "press" : "request") is \(Int(abs(age).rounded())) s old; a delayed input never records a dose")
            }
        }
        // Fail closed: an entry that cannot be read could be tonight's Dose 1 (or Dose 2).
        if !log.unreadable.isEmpty {
            return refuse(.logUnreadable, UnreadableLog(seqs: log.unreadable).description.capitalizedFirst)
        }
        let session = log.currentSession(at: now, in: timeZone)
        let phase = session?.phase(at: now) ?? .idle

        switch input.command {
        case .take(let confirmLate):
            guard let session else {
                if let aside = log.setAside.first(where: { event in
                    if case .dose1 = event.kind { return event.at > now && event.at.timeIntervalSince(now) < DoseRules.nearFutureDose1 }
                    return false
                }) {
                    return refuse(.setAsideDose1, "A Dose 1 dated \(SetAsideNotice.dated(aside.at, in: timeZone)) (\(SetAsideNotice.ahead(aside.at, of: now)) after now) is set aside: if you took it tonight, do not take Dose 1 again; if you did not, discard it first (dosetap dose discard \(SetAsideNotice.shortID(aside.id)))")
                }
                let target = DoseRules.targetOptions.contains(targetMinutes) ? targetMinutes : DoseRules.defaultTarget
                let opens = now.addingTimeInterval(DoseRules.windowOpens)
                let closes = now.addingTimeInterval(DoseRules.windowCloses)
                let reminder = now.addingTimeInterval(TimeInterval(target) * 60)
                return .record(.dose1(targetMinutes: target), confirmation:
                    "Dose 1 taken at \(clock.time(now)). Window opens at \(clock.time(opens)), closes at \(clock.time(closes)); reminder at \(clock.time(reminder)).")
            }
            switch phase {
            case .idle:
                return refuse(.noDose1, "No Dose 1 tonight")
            case .waiting:
                let minutes = Int((session.windowOpensAt.timeIntervalSince(now) / 60).rounded(.up))
                return refuse(.tooEarly, "Too early for Dose 2: the window opens at \(clock.time(session.windowOpensAt)) (in \(minutes) min)")
            case .open, .nearClose:
                let minutes = Int((now.timeIntervalSince(session.dose1.at) / 60).rounded(.down))
                return .record(.dose2(late: false), confirmation: "Dose 2 taken at \(clock.time(now)), \(minutes) min after Dose 1.")
            case .closed:
                let closedAt = clock.time(session.windowClosesAt)
                if input.source == .button || input.source == .mqtt {
                    return refuse(.lateFromButton, "The Dose 2 window closed at \(closedAt); a late dose is never recorded from a button")
                }
                guard confirmLate else {
                    return refuse(.lateNeedsConfirmation, "The Dose 2 window closed at \(closedAt); to record a late Dose 2, confirm it (dosetap dose take --late)")
                }
                let minutes = Int((now.timeIntervalSince(session.dose1.at) / 60).rounded(.down))
                return .record(.dose2(late: true), confirmation: "Late Dose 2 recorded at \(clock.time(now)), \(minutes) min after Dose 1 (not on time).")
            case .completed:
                return refuse(.alreadyCompleted, "Dose 2 was already taken tonight at \(clock.time(session.dose2!.at))")
            case .skipped:
                if session.manualSkip != nil {
                    return refuse(.alreadySkipped, "Dose 2 was skipped tonight")
                }
                return refuse(.tooLate, "The Dose 2 window closed at \(clock.time(session.windowClosesAt)); it is too late to record Dose 2 tonight")
            }

        case .snooze, .snoozeReminder:
            guard let session, [.waiting, .open, .nearClose].contains(phase) else {
                return refuseInactive(phase, session: session, clock: clock, action: "snooze")
            }
            if case .snoozeReminder(let named) = input.command, named != session.reminderSetBy.id {
                return refuse(.alreadySnoozed, "Already snoozed: the reminder is at \(clock.time(session.reminderAt))")
            }
            if session.snoozes.count >= DoseRules.maximumSnoozes {
                return refuse(.snoozeLimit, "Snooze limit reached (\(DoseRules.maximumSnoozes) per night)")
            }
            if phase == .nearClose {
                let left = session.minutesRemaining(at: now) ?? 0
                return refuse(.snoozeNearClose, "Cannot snooze with \(left) min left: take Dose 2 now or skip it")
            }
            let next = max(session.reminderAt, now).addingTimeInterval(DoseRules.snoozeStep)
            if next.timeIntervalSince(session.dose1.at) > DoseRules.latestReminder {
                return refuse(.snoozePastLatest, "Cannot snooze: the reminder would fall after \(clock.time(session.dose1.at.addingTimeInterval(DoseRules.latestReminder))), too close to the window's end")
            }
            let left = DoseRules.maximumSnoozes - session.snoozes.count - 1
            return .record(.snooze, confirmation: "Reminder snoozed to \(clock.time(next)) (\(left) snooze\(left == 1 ? "" : "s") left).")

        case .skip(let reason):
            guard let session, [.waiting, .open, .nearClose, .closed].contains(phase) else {
                return refuseInactive(phase, session: session, clock: clock, action: "skip")
            }
            if session.skip != nil {
                return refuse(.alreadySkipped, "Dose 2 was already skipped tonight")
            }
            let why = reason.map { " (\($0.label))" } ?? ""
            return .record(.skip(reason), confirmation: "Dose 2 skipped\(why).")

        case .undo, .undoEvent:
            if case .undoEvent(let named) = input.command {
                guard let event = log.events.first(where: { $0.id == named }) else {
                    return refuse(.nothingToUndo, "Nothing to undo")
                }
                if log.isUndone(named) { return refuse(.alreadyUndone, "\(event.label) was already undone") }
                guard log.undoableActions.last?.id == named else {
                    return refuse(.notLastAction, "\(event.label) is no longer the last action: only the last one can be undone")
                }
            }
            guard let last = log.undoableActions.last else {
                return refuse(.nothingToUndo, "Nothing to undo")
            }
            guard now.timeIntervalSince(last.at) <= DoseRules.undoWindow, now >= last.at else {
                return refuse(.undoExpired, "Undo window has passed")
            }
            return .record(.undo(of: last.id), confirmation: "\(last.label) undone")

        case .autoSkip(let reason):
            guard input.source == .agent else {
                return refuse(.notDue, "Only the agent closes a night")
            }
            guard let last = log.sessions.last, last.dose2 == nil, last.skip == nil,
                  now.timeIntervalSince(last.dose1.at) >= DoseRules.windowCloses else {
                return refuse(.notDue, "Nothing to close")
            }
            return .record(.skip(reason), confirmation: "Dose 2 window closed without Dose 2: night skipped (\(reason.rawValue)).")

        case .discard:
            return refuse(.notSetAside, "Nothing to discard") // decided above
        }
    }

    /// A discard: only a person's (never a button's or the broker's), only of an event set aside and not yet
    /// discarded.
    static func discard(_ reference: String, source: InputSource, log: DoseLog, now: Date, timeZone: TimeZone) -> DoseDecision {
        guard source == .cli || source == .web else {
            return refuse(.notSetAside, "Only a person at the command line or the dashboard discards an entry")
        }
        let key = reference.lowercased()
        guard key.count >= 8, key.count <= 36, key.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) || $0 == "-" }) else {
            return refuse(.noSuchEvent, "Name the entry by its id (at least its first 8 hexadecimal digits, as dosetap dose status shows it)")
        }
        let named = (log.setAside + log.discarded + log.events).filter { $0.id.uuidString.lowercased().hasPrefix(key) }
        guard let first = named.first else {
            return refuse(.noSuchEvent, "No entry \(key) is set aside in the dose log")
        }
        guard named.allSatisfy({ $0.id == first.id }) else {
            return refuse(.noSuchEvent, "\(key) names more than one entry: give more of its id")
        }
        let id = first.id
        let zone = timeZone
        if let event = log.setAside.first(where: { $0.id == id }) {
            return .record(.discard(of: id), confirmation:
                "Discarded: \(event.label) dated \(SetAsideNotice.dated(event.at, in: zone)). It stays in the log, marked discarded, and never counts.")
        }
        if let event = log.discarded.first(where: { $0.id == id }) {
            return refuse(.alreadyDiscarded, "\(event.label) dated \(SetAsideNotice.dated(event.at, in: zone)) was already discarded")
        }
        if let event = log.events.first(where: { $0.id == id }) {
            return refuse(.notSetAside, "\(event.label) at \(SetAsideNotice.dated(event.at, in: zone)) is not dated in the future: only an entry set aside can be discarded (the last action can be undone within 5 s: dosetap dose undo)")
        }
        return refuse(.noSuchEvent, "No entry \(key) is set aside in the dose log")
    }

    static func refuse(_ code: DoseRefusal.Code, _ message: String) -> DoseDecision {
        .refuse(DoseRefusal(code: code, message: message))
    }

    static func refuseInactive(_ phase: DosePhase, session: NightSession?, clock: ClockText, action: String) -> DoseDecision {
        switch phase {
        case .completed:
            refuse(.alreadyCompleted, "Dose 2 was already taken tonight at \(clock.time(session!.dose2!.at)): nothing to \(action)")
        case .skipped:
            refuse(.alreadySkipped, "Dose 2 was skipped tonight: nothing to \(action)")
        case .closed:
            refuse(.tooLate, "The Dose 2 window closed at \(clock.time(session!.windowClosesAt)): nothing to \(action)")
        default:
            refuse(.noDose1, "No Dose 1 tonight: nothing to \(action)")
        }
    }
}
