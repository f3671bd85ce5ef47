import Foundation

/// The pinned phase names of a night.
public enum DosePhase: String, Sendable, Equatable, Codable, CaseIterable {
    /// No dose 1 this night.
    case idle
    /// Dose 1 taken; the window is not open yet.
    case waiting
    case open
    /// 15 minutes or less remain.
    case nearClose = "near-close"
    /// After 240 minutes, within the 30-minute grace in which only a confirmed late dose may be recorded.
    case closed
    case completed
    case skipped
}

/// One night: a dose 1 and what followed it, folded from the log.
public struct NightSession: Sendable, Equatable {
    public var dose1: DoseEvent
    public var targetMinutes: Int
    public var dose2: DoseEvent?
    public var snoozes: [DoseEvent] = []
    public var skip: DoseEvent?

    public var id: UUID { dose1.id }
    public var nightDate: LocalDate { LocalDate.night(of: dose1.at, in: dose1.zone) }
    public var windowOpensAt: Date { dose1.at.addingTimeInterval(DoseRules.windowOpens) }
    public var windowClosesAt: Date { dose1.at.addingTimeInterval(DoseRules.windowCloses) }
    public var nearCloseAt: Date { dose1.at.addingTimeInterval(DoseRules.nearClose) }
    public var graceEndsAt: Date { dose1.at.addingTimeInterval(DoseRules.windowCloses + DoseRules.lateGrace) }

    /// The target plus the snoozes. A snooze moves the reminder 10 minutes past the later of the reminder
    /// in force and the moment of the snooze (snoozing a reminder that already rang means "in 10 minutes").
    public var reminderAt: Date {
        var reminder = dose1.at.addingTimeInterval(TimeInterval(targetMinutes) * 60)
        for snooze in snoozes {
            reminder = max(reminder, snooze.at).addingTimeInterval(DoseRules.snoozeStep)
        }
        return reminder
    }

    /// The event that set the reminder in force: the last snooze, else Dose 1 (what a snooze names).
    public var reminderSetBy: DoseEvent { snoozes.last ?? dose1 }

    /// The skip a person chose (not the agent's automatic one).
    public var manualSkip: DoseEvent? {
        guard let skip, case .skip(let reason) = skip.kind, !(reason?.isAutomatic ?? false) else { return nil }
        return skip
    }

    public var skipReason: SkipReason? {
        guard dose2 == nil, let skip, case .skip(let reason) = skip.kind else { return nil }
        return reason
    }

    public var isLate: Bool {
        if let dose2, case .dose2(let late) = dose2.kind { return late }
        return false
    }

    /// Whole minutes from dose 1 to dose 2.
    public var intervalMinutes: Int? {
        dose2.map { Int(($0.at.timeIntervalSince(dose1.at) / 60).rounded(.down)) }
    }

    public func elapsed(at now: Date) -> TimeInterval { now.timeIntervalSince(dose1.at) }

    /// The phase at an instant: real elapsed time since dose 1, whatever the clocks on the wall say.
    public func phase(at now: Date) -> DosePhase {
        if dose2 != nil { return .completed }
        if manualSkip != nil { return .skipped }
        let elapsed = elapsed(at: now)
        if elapsed < DoseRules.windowOpens { return .waiting }
        if elapsed < DoseRules.nearClose { return .open }
        if elapsed < DoseRules.windowCloses { return .nearClose }
        if elapsed < DoseRules.windowCloses + DoseRules.lateGrace { return .closed }
        return .skipped
    }

    /// Still waiting for dose 2 (or a skip), including the late grace.
    public func isActive(at now: Date) -> Bool {
        [.waiting, .open, .nearClose, .closed].contains(phase(at: now))
    }

    /// Minutes until close, rounded up, while the window can still be used on time.
    public func minutesRemaining(at now: Date) -> Int? {
        guard [.waiting, .open, .nearClose].contains(phase(at: now)) else { return nil }
        return Int((windowClosesAt.timeIntervalSince(now) / 60).rounded(.up))
    }

    /// On time: dose 2 inside the window. A skip (by hand or at close) counts as missed.
    public func onTime(at now: Date) -> Bool? {
        if let dose2, case .dose2(let late) = dose2.kind { return !late }
        return phase(at: now) == .skipped ? false : nil
    }
}

/// The log folded into nights. Undone events (and their undos) are removed first; the rest is read in
/// log order: a dose 1 starts a night, everything else belongs to the night before it.
///
/// An event dated in the future (more than `DoseRules.futureTolerance` after `now`, or remembered so by the
/// store once seen) is *set aside* (#51): it never decides a night — a Dose 1 dated tomorrow or in 2199
/// does not block tonight — and every face names it until a person discards it (`dosetap dose discard`,
/// itself an event). A discard changes nothing the rules count: it only names an event already set aside.
public struct DoseLog: Sendable, Equatable {
    /// The events the rules count, in log order (set-aside events and discards are not among them).
    public private(set) var events: [DoseEvent]
    public private(set) var sessions: [NightSession] = []
    /// Rows of the stored log that could not be read (their `seq`, in log order): an entry whose time,
    /// id or kind is garbage. The policy records nothing while there are any (one of them could be
    /// tonight's Dose 1), and every command that shows the log reports them.
    public private(set) var unreadable: [Int64] = []
    /// Events set aside because they are dated in the future and not discarded yet: what faces name.
    public private(set) var setAside: [DoseEvent] = []
    /// Events set aside and then discarded (kept in the log, marked).
    public private(set) var discarded: [DoseEvent] = []
    /// The ids of set-aside events the store did not remember yet (`setAside` given): it writes them, so
    /// an event dated tomorrow stays set aside when tomorrow comes.
    public private(set) var newlySetAside: [UUID] = []

    /// - Parameters:
    ///   - setAside: the events the store remembers as set aside (seen dated in the future once).
    ///   - discarded: the events the store remembers as discarded.
    ///   - now: the instant the log is read at; an event dated more than the tolerance after it is set aside.
    public init(events all: [DoseEvent], unreadable: [Int64] = [], setAside remembered: Set<UUID> = [],
                discarded rememberedDiscards: Set<UUID> = [], now: Date? = nil) {
        self.unreadable = unreadable
        var discards = rememberedDiscards
        for event in all {
            if case .discard(let target) = event.kind { discards.insert(target) }
        }
        // Only an event set aside can have been discarded: a discarded one stays aside whatever the marks say.
        var aside = remembered.union(discards)
        var counted: [DoseEvent] = []
        for event in all {
            if case .discard = event.kind { continue }
            if aside.contains(event.id) { continue }
            if let now, event.isDatedAfter(now) {
                aside.insert(event.id)
                newlySetAside.append(event.id)
                continue
            }
            counted.append(event)
        }
        for event in all where aside.contains(event.id) {
            if case .discard = event.kind { continue }
            if discards.contains(event.id) { discarded.append(event) } else { setAside.append(event) }
        }
        events = counted
        var undone = Set<UUID>()
        for event in counted {
            if case .undo(let target) = event.kind { undone.insert(target) }
        }
        for event in counted where !undone.contains(event.id) {
            switch event.kind {
            case .dose1(let target):
                // A target that is not one of the options (a stored negative one would put the reminder
                // before Dose 1) is the default.
                let valid = DoseRules.targetOptions.contains(target) ? target : DoseRules.defaultTarget
                sessions.append(NightSession(dose1: event, targetMinutes: valid))
            case .dose2:
                guard var night = sessions.popLast() else { continue }
                if night.dose2 == nil { night.dose2 = event }
                sessions.append(night)
            case .snooze:
                guard var night = sessions.popLast() else { continue }
                night.snoozes.append(event)
                sessions.append(night)
            case .skip:
                guard var night = sessions.popLast() else { continue }
                if night.skip == nil || (night.manualSkip == nil && !Self.isAutomatic(event)) { night.skip = event }
                sessions.append(night)
            case .undo, .discard:
                continue
            }
        }
    }

    static func isAutomatic(_ event: DoseEvent) -> Bool {
        if case .skip(let reason) = event.kind { return reason?.isAutomatic ?? false }
        return false
    }

    /// True when an undo in the log names `id`.
    public func isUndone(_ id: UUID) -> Bool {
        events.contains { if case .undo(let target) = $0.kind { return target == id } else { return false } }
    }

    /// Actions a person can undo, newest last (not undone, not the agent's automatic skip).
    public var undoableActions: [DoseEvent] {
        var undone = Set<UUID>()
        for event in events {
            if case .undo(let target) = event.kind { undone.insert(target) }
        }
        return events.filter { event in
            guard !undone.contains(event.id) else { return false }
            switch event.kind {
            case .dose1, .dose2, .snooze: return true
            case .skip: return !Self.isAutomatic(event)
            case .undo, .discard: return false
            }
        }
    }

    /// The night that is current at `now`: the last one while it is active, or while it is still the same
    /// night (18:00 boundary) as now — judged both in the zone of now and in the zone Dose 1 was taken in,
    /// so a traveller crossing time zones never gets a second Dose 1 in what is still the same night.
    /// Nil means idle.
    public func currentSession(at now: Date, in timeZone: TimeZone) -> NightSession? {
        guard let last = sessions.last else { return nil }
        if last.isActive(at: now) { return last }
        if now < last.dose1.at { return last } // the clock went back: the night is not over
        if LocalDate.night(of: now, in: timeZone) == last.nightDate { return last }
        if LocalDate.night(of: now, in: last.dose1.zone) == last.nightDate { return last }
        return nil
    }

    public func status(at now: Date, in timeZone: TimeZone) -> NightStatus {
        NightStatus(session: currentSession(at: now, in: timeZone), now: now, timeZone: timeZone, lastAction: undoableActions.last,
                    setAside: setAside)
    }
}

/// A log with unreadable entries: the one sentence every face shows.
public struct UnreadableLog: Error, Sendable, Equatable, CustomStringConvertible {
    public var seqs: [Int64]
    public init(seqs: [Int64]) { self.seqs = seqs }

    public var description: String {
        let shown = seqs.prefix(10).map(String.init).joined(separator: ", ") + (seqs.count > 10 ? ", …" : "")
        let entries = seqs.count == 1 ? "1 unreadable entry" : "\(seqs.count) unreadable entries"
        return "the dose log has \(entries) (seq \(shown)): tonight's state cannot be known and no dose is recorded until it is set aside (see dosetap data unreadable)"
    }
}

/// Everything `dosetap dose status` shows, computed for one instant.
public struct NightStatus: Sendable, Equatable {
    public var session: NightSession?
    public var now: Date
    public var timeZone: TimeZone
    /// The action an Undo would take back (whether or not its 5 s have passed): what the page's Undo names.
    public var lastAction: DoseEvent?
    /// Events set aside because they are dated in the future (not discarded yet): they decide nothing, and
    /// every face names them with the command that discards each (`SetAsideNotice`).
    public var setAside: [DoseEvent]

    public init(session: NightSession?, now: Date, timeZone: TimeZone, lastAction: DoseEvent? = nil, setAside: [DoseEvent] = []) {
        self.session = session
        self.now = now
        self.timeZone = timeZone
        self.lastAction = lastAction
        self.setAside = setAside
    }

    /// The event a snooze now names (the reminder's setter), while a snooze makes sense.
    public var reminderSetBy: DoseEvent? { reminderAt == nil ? nil : session?.reminderSetBy }

    public var phase: DosePhase { session?.phase(at: now) ?? .idle }
    public var nightDate: LocalDate { session?.nightDate ?? LocalDate.night(of: now, in: timeZone) }
    public var snoozesUsed: Int { session?.snoozes.count ?? 0 }
    public var snoozesLeft: Int { DoseRules.maximumSnoozes - snoozesUsed }

    /// The reminder, while dose 2 is still to come.
    public var reminderAt: Date? {
        guard let session, [.waiting, .open, .nearClose].contains(phase) else { return nil }
        return session.reminderAt
    }

    public var minutesRemaining: Int? { session?.minutesRemaining(at: now) }
    public var onTime: Bool? { session?.onTime(at: now) }
    /// Why Dose 2 did not happen: the recorded skip's reason; or, for a night past its late grace with
    /// nothing recorded yet, the reason the agent will record when it closes it (a running agent closes a
    /// night at 240 min, so one still open at 270 min was missed by an agent that was not running:
    /// `device_powered_off`).
    public var skipReason: SkipReason? {
        guard let session, [.skipped, .closed].contains(phase) else { return nil }
        if let recorded = session.skipReason { return recorded }
        if phase == .skipped, session.skip == nil, session.dose2 == nil { return .devicePoweredOff }
        return nil
    }
}
