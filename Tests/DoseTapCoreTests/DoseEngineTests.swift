import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

/// A night driven through the one policy, appending what it accepts, as the store does.
struct NightDriver {
    var events: [DoseEvent] = []
    var zone: TimeZone
    var target: Int

    init(zone: TimeZone = TimeZone(identifier: "America/New_York")!, target: Int = 165) {
        self.zone = zone
        self.target = target
    }

    var log: DoseLog { DoseLog(events: events) }

    @discardableResult
    mutating func submit(_ command: DoseCommand, at now: Date, source: InputSource = .cli, issuedAt: Date? = nil,
                         zone: TimeZone? = nil) -> DoseDecision {
        let z = zone ?? self.zone
        let decision = DosePolicy.decide(DoseInput(command: command, source: source, issuedAt: issuedAt ?? now),
                                         log: log, now: now, timeZone: z, targetMinutes: target)
        if case .record(let kind, _) = decision {
            events.append(DoseEvent(id: UUID(), kind: kind, at: now, timeZone: z.identifier, source: source))
        }
        return decision
    }

    func status(at now: Date, zone: TimeZone? = nil) -> NightStatus { log.status(at: now, in: zone ?? self.zone) }
}

extension DoseDecision {
    var refusal: DoseRefusal.Code? {
        if case .refuse(let r) = self { return r.code }
        return nil
    }
    var recorded: DoseEvent.Kind? {
        if case .record(let k, _) = self { return k }
        return nil
    }
    var message: String {
        switch self {
        case .record(_, let m): m
        case .refuse(let r): r.message
        }
    }
}

@Suite("The two-dose night")
struct DoseEngineTests {
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }
    func at(_ minutes: Double) -> Date { t0.addingTimeInterval(minutes * 60) }

    @Test("phases at every boundary minute", arguments: [
        (149.0, DosePhase.waiting), (149.99, .waiting), (150, .open), (164, .open), (165, .open), (224, .open),
        (224.99, .open), (225, .nearClose), (239, .nearClose), (239.99, .nearClose), (240, .closed), (241, .closed),
        (269, .closed), (269.99, .closed), (270, .skipped), (600, .skipped),
    ])
    func phases(minute: Double, phase: DosePhase) {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.status(at: at(minute)).phase == phase)
    }

    @Test("taking Dose 2 on each side of every boundary", arguments: [
        (149.0, DoseRefusal.Code?.some(.tooEarly), false),
        (150, nil, false), (164, nil, false), (165, nil, false), (224, nil, false), (225, nil, false), (239, nil, false),
        (239.99, nil, false), (240, .lateNeedsConfirmation, false), (241, .lateNeedsConfirmation, false),
        (269, .lateNeedsConfirmation, false), (270, .tooLate, false),
    ])
    func takeBoundaries(minute: Double, refusal: DoseRefusal.Code?, late: Bool) {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.take(confirmLate: false), at: at(minute))
        #expect(d.refusal == refusal)
        if refusal == nil {
            #expect(d.recorded == .dose2(late: false))
            #expect(night.status(at: at(minute)).onTime == true)
        }
    }

    @Test("a late Dose 2 needs confirmation, only within the 30-min grace, never from a button", arguments: [
        (239.0, InputSource.cli, DoseRefusal.Code?.none, false),
        (240, .cli, nil, true), (241, .cli, nil, true), (269, .notification, nil, true), (269.99, .cli, nil, true),
        (270, .cli, .tooLate, false), (241, .button, .lateFromButton, false),
    ])
    func late(minute: Double, source: InputSource, refusal: DoseRefusal.Code?, late: Bool) {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.take(confirmLate: true), at: at(minute), source: source)
        #expect(d.refusal == refusal)
        if refusal == nil {
            #expect(d.recorded == .dose2(late: late))
            let s = night.status(at: at(minute))
            #expect(s.phase == .completed)
            #expect(s.onTime == !late)
        }
    }

    @Test("too early names the opening time and the minutes left")
    func tooEarlyMessage() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.take(confirmLate: false), at: at(113))
        #expect(d.message == "Too early for Dose 2: the window opens at 01:00 (in 37 min)")
    }

    @Test("Dose 1 confirms the window and the reminder")
    func dose1Message() {
        var night = NightDriver(target: 180)
        let d = night.submit(.take(confirmLate: false), at: t0)
        #expect(d.recorded == .dose1(targetMinutes: 180))
        #expect(d.message == "Dose 1 taken at 22:30. Window opens at 01:00, closes at 02:30; reminder at 01:30.")
    }

    @Test("never two Dose 2s, never a second Dose 1 in the same night")
    func noDoubles() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.submit(.take(confirmLate: false), at: at(170)).recorded == .dose2(late: false))
        #expect(night.submit(.take(confirmLate: false), at: at(171)).refusal == .alreadyCompleted)
        #expect(night.submit(.take(confirmLate: true), at: at(250)).refusal == .alreadyCompleted)
        // Next afternoon (17:59) is still the same night; 18:00 starts a new one.
        #expect(night.submit(.take(confirmLate: false), at: localDate("2026-01-16 17:59:00", ny)).refusal == .alreadyCompleted)
        #expect(night.submit(.take(confirmLate: false), at: localDate("2026-01-16 18:00:00", ny)).recorded == .dose1(targetMinutes: 165))
    }

    @Test("an idle night that expired is not restarted the same night")
    func expiredSameNight() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.submit(.take(confirmLate: false), at: at(300)).refusal == .tooLate)
        #expect(night.status(at: at(300)).phase == .skipped)
    }

    @Test("the night's date: 18:00 local is the boundary", arguments: [
        ("2026-01-15 23:30:00", "2026-01-15"), ("2026-01-16 00:30:00", "2026-01-15"),
        ("2026-01-15 17:59:59", "2026-01-14"), ("2026-01-15 18:00:00", "2026-01-15"),
    ])
    func nightDate(local: String, night: String) {
        var driver = NightDriver()
        driver.submit(.take(confirmLate: false), at: localDate(local, ny))
        #expect(driver.status(at: localDate(local, ny)).nightDate.description == night)
    }

    @Test("a window across midnight")
    func acrossMidnight() {
        var night = NightDriver()
        let d1 = localDate("2026-01-15 23:30:00", ny)
        night.submit(.take(confirmLate: false), at: d1)
        let s = night.status(at: d1)
        #expect(ClockText(timeZone: ny).time(s.session!.windowOpensAt) == "02:00")
        #expect(ClockText(timeZone: ny).time(s.session!.windowClosesAt) == "03:30")
        #expect(night.submit(.take(confirmLate: false), at: localDate("2026-01-16 02:00:00", ny)).recorded == .dose2(late: false))
        #expect(night.status(at: localDate("2026-01-16 02:00:00", ny)).nightDate.description == "2026-01-15")
    }

    @Test("DST spring-forward night: the window is real minutes; clocks jump")
    func springForward() {
        var night = NightDriver()
        let d1 = localDate("2026-03-07 23:30:00", ny) // EST; clocks jump 02:00 → 03:00
        night.submit(.take(confirmLate: false), at: d1)
        let session = night.status(at: d1).session!
        #expect(session.windowClosesAt.timeIntervalSince(d1) == 240 * 60)
        #expect(ClockText(timeZone: ny).time(session.windowOpensAt) == "03:00") // 02:00 EST = 03:00 EDT
        #expect(ClockText(timeZone: ny).time(session.windowClosesAt) == "04:30")
        #expect(night.submit(.take(confirmLate: false), at: d1.addingTimeInterval(149 * 60)).refusal == .tooEarly)
        #expect(night.submit(.take(confirmLate: false), at: d1.addingTimeInterval(150 * 60)).recorded == .dose2(late: false))
    }

    @Test("DST fall-back night: the window is real minutes; clocks repeat an hour")
    func fallBack() {
        var night = NightDriver()
        let d1 = localDate("2026-10-31 23:30:00", ny) // EDT; 02:00 EDT → 01:00 EST
        night.submit(.take(confirmLate: false), at: d1)
        let session = night.status(at: d1).session!
        #expect(ClockText(timeZone: ny).time(session.windowOpensAt) == "01:00") // 02:00 EDT shown as 01:00 EST
        #expect(ClockText(timeZone: ny).time(session.windowClosesAt) == "02:30")
        #expect(night.status(at: d1.addingTimeInterval(239 * 60)).phase == .nearClose)
        #expect(night.status(at: d1.addingTimeInterval(240 * 60)).phase == .closed)
        #expect(night.status(at: d1).nightDate.description == "2026-10-31")
    }

    @Test("a time-zone change mid-night (New York → Los Angeles) moves the clocks, not the window")
    func timeZoneChange() {
        let la = TimeZone(identifier: "America/Los_Angeles")!
        var night = NightDriver()
        let d1 = localDate("2026-01-15 22:00:00", ny)
        night.submit(.take(confirmLate: false), at: d1)
        // 149 min later, in Los Angeles: 21:29 LA.
        #expect(night.submit(.take(confirmLate: false), at: d1.addingTimeInterval(149 * 60), zone: la).refusal == .tooEarly)
        let s = night.status(at: d1.addingTimeInterval(180 * 60), zone: la)
        #expect(s.phase == .open)
        #expect(s.nightDate.description == "2026-01-15")
        #expect(ClockText(timeZone: la).time(s.session!.windowClosesAt) == "23:00") // 02:00 in New York
        let d = night.submit(.take(confirmLate: false), at: d1.addingTimeInterval(180 * 60), zone: la)
        #expect(d.message == "Dose 2 taken at 22:00, 180 min after Dose 1.")
    }

    @Test("undo: 4.9 s yes, 5.1 s no; the state returns to what it was")
    func undo() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let before = night.status(at: at(170))
        #expect(night.submit(.take(confirmLate: false), at: at(170)).recorded == .dose2(late: false))
        let undo = night.submit(.undo, at: at(170).addingTimeInterval(4.9))
        #expect(undo.message == "Dose 2 undone")
        #expect(night.status(at: at(170)) == before)
        #expect(night.submit(.take(confirmLate: false), at: at(171)).recorded == .dose2(late: false))
        #expect(night.submit(.undo, at: at(171).addingTimeInterval(5.1)).refusal == .undoExpired)
        #expect(night.submit(.undo, at: at(171).addingTimeInterval(5.1)).message == "Undo window has passed")
        #expect(night.status(at: at(172)).phase == .completed)
    }

    @Test("undo Dose 1 returns to idle; nothing to undo after that")
    func undoDose1() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.submit(.undo, at: t0.addingTimeInterval(1)).message == "Dose 1 undone")
        #expect(night.status(at: t0.addingTimeInterval(2)).phase == .idle)
        #expect(night.submit(.undo, at: t0.addingTimeInterval(3)).refusal == .nothingToUndo)
        #expect(night.submit(.take(confirmLate: false), at: t0.addingTimeInterval(4)).recorded == .dose1(targetMinutes: 165))
    }

    @Test("an Undo that names its event acts once: already undone, no longer the last action, unknown (#25)")
    func undoNamed() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        night.submit(.skip(nil), at: t0.addingTimeInterval(1))
        let dose1 = night.events[0].id, skip = night.events[1].id
        #expect(night.status(at: t0.addingTimeInterval(1)).lastAction?.id == skip)
        // Not the last action: Dose 1 is named while the Skip stands.
        #expect(night.submit(.undoEvent(dose1), at: t0.addingTimeInterval(2)).refusal == .notLastAction)
        #expect(night.submit(.undoEvent(skip), at: t0.addingTimeInterval(2)).message == "Skip undone")
        // The same Undo again (a double click): refused, and Dose 1 — now the last action — stays.
        let again = night.submit(.undoEvent(skip), at: t0.addingTimeInterval(3))
        #expect(again.refusal == .alreadyUndone && again.message == "Skip was already undone")
        #expect(night.status(at: t0.addingTimeInterval(3)).phase == .waiting)
        #expect(night.submit(.undoEvent(UUID()), at: t0.addingTimeInterval(3)).refusal == .nothingToUndo)
        // The plain undo (the command line, the buttons) keeps "the last action within 5 s": Dose 1 after 6 s, no.
        #expect(night.submit(.undo, at: t0.addingTimeInterval(6)).refusal == .undoExpired)
    }

    @Test("a Snooze that names the reminder's setter counts once; the next names the snooze (#25)")
    func snoozeNamed() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let dose1 = night.events[0].id
        #expect(night.status(at: at(160)).reminderSetBy?.id == dose1)
        #expect(night.submit(.snoozeReminder(setBy: dose1), at: at(160)).recorded == .snooze)
        let twice = night.submit(.snoozeReminder(setBy: dose1), at: at(160))
        #expect(twice.refusal == .alreadySnoozed && twice.message.hasPrefix("Already snoozed: the reminder is at"))
        #expect(night.status(at: at(160)).snoozesUsed == 1)
        let snooze = night.events[1].id
        #expect(night.status(at: at(161)).reminderSetBy?.id == snooze)
        #expect(night.submit(.snoozeReminder(setBy: snooze), at: at(161)).recorded == .snooze)
    }

    @Test("snooze: +10 min, at most 3, never with ≤ 15 min left, never past 225")
    func snooze() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        for expected in [175.0, 185, 195] {
            #expect(night.submit(.snooze, at: at(160)).recorded == .snooze)
            #expect(night.status(at: at(160)).reminderAt == at(expected))
        }
        #expect(night.submit(.snooze, at: at(161)).refusal == .snoozeLimit)
        #expect(night.status(at: at(161)).snoozesLeft == 0)
    }

    @Test("snoozing a reminder that already rang means 10 minutes from now")
    func snoozeAfterRing() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        night.submit(.snooze, at: at(200))
        #expect(night.status(at: at(200)).reminderAt == at(210))
    }

    @Test("snooze refusals on each side of 225 min and of near-close", arguments: [
        (225, 160.0, DoseRefusal.Code?.some(.snoozePastLatest)), // 225 → 235
        (210, 160.0, nil), // 210 → 220
        (165, 215.0, nil), // rang at 165; now + 10 = 225, the latest allowed
        (165, 215.01, .snoozePastLatest),
        (165, 224.0, .snoozePastLatest),
        (165, 225.0, .snoozeNearClose),
    ])
    func snoozeRefusals(target: Int, minute: Double, refusal: DoseRefusal.Code?) {
        var night = NightDriver(target: target)
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.snooze, at: at(minute))
        #expect(d.refusal == refusal)
        if refusal == nil { #expect(d.recorded == .snooze) }
    }

    @Test("a 210-minute target can be snoozed once")
    func snooze210() {
        var night = NightDriver(target: 210)
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.submit(.snooze, at: at(205)).recorded == .snooze)
        #expect(night.submit(.snooze, at: at(206)).refusal == .snoozePastLatest)
    }

    @Test("snooze and skip need a night in progress", arguments: [DoseCommand.snooze, .skip(nil), .skip(.alert)])
    func needsNight(command: DoseCommand) {
        var night = NightDriver()
        #expect(night.submit(command, at: t0).refusal == .noDose1)
        night.submit(.take(confirmLate: false), at: t0)
        night.submit(.take(confirmLate: false), at: at(170))
        #expect(night.submit(command, at: at(171)).refusal == .alreadyCompleted)
    }

    @Test("skip with each reason; a skip counts as missed; nothing after it", arguments: [SkipReason?.none, .alert, .sideEffects, .other])
    func skip(reason: SkipReason?) {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.skip(reason), at: at(100))
        #expect(d.recorded == .skip(reason))
        let s = night.status(at: at(100))
        #expect(s.phase == .skipped)
        #expect(s.skipReason == reason)
        #expect(s.onTime == false)
        #expect(night.submit(.take(confirmLate: false), at: at(170)).refusal == .alreadySkipped)
        #expect(night.submit(.skip(.other), at: at(171)).refusal == .alreadySkipped)
        #expect(night.submit(.snooze, at: at(171)).refusal == .alreadySkipped)
    }

    @Test("the agent's automatic skip: only at or after close; a confirmed late dose still counts after it")
    func autoSkip() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.submit(.autoSkip(.windowExpired), at: at(239.99), source: .agent).refusal == .notDue)
        #expect(night.submit(.autoSkip(.windowExpired), at: at(240), source: .agent).recorded == .skip(.windowExpired))
        #expect(night.status(at: at(241)).phase == .closed)
        #expect(night.status(at: at(241)).skipReason == .windowExpired)
        #expect(night.submit(.autoSkip(.windowExpired), at: at(241), source: .agent).refusal == .notDue)
        // The automatic skip is not a person's action: undo reaches back to Dose 1, long past.
        #expect(night.submit(.undo, at: at(240).addingTimeInterval(1)).refusal == .undoExpired)
        #expect(night.submit(.take(confirmLate: true), at: at(250)).recorded == .dose2(late: true))
        #expect(night.status(at: at(300)).phase == .completed)
        #expect(night.status(at: at(300)).onTime == false)
    }

    @Test("an input older than 3 s never does anything; 3 s exactly still counts", arguments: [
        (3.0, true), (3.01, false), (10, false), (-3.01, false), (0, true),
    ])
    func staleInput(age: Double, accepted: Bool) {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        let d = night.submit(.take(confirmLate: false), at: at(170), source: .button, issuedAt: at(170).addingTimeInterval(-age))
        #expect((d.recorded != nil) == accepted)
        if !accepted { #expect(d.refusal == .staleInput) }
    }

    @Test("after the window with nothing recorded, status says the reason the agent will record; before 270 min it does not guess")
    func pendingSkipReason() {
        var night = NightDriver()
        night.submit(.take(confirmLate: false), at: t0)
        #expect(night.status(at: at(269.99)).phase == .closed)
        #expect(night.status(at: at(269.99)).skipReason == nil)
        #expect(night.status(at: at(270)).phase == .skipped)
        #expect(night.status(at: at(270)).skipReason == .devicePoweredOff)
        // Once the agent has recorded its reason, that is the one shown.
        night.submit(.autoSkip(.windowExpired), at: at(271), source: .agent)
        #expect(night.status(at: at(272)).skipReason == .windowExpired)
        // A completed night has no skip reason.
        var done = NightDriver()
        done.submit(.take(confirmLate: false), at: t0)
        done.submit(.take(confirmLate: false), at: at(170))
        #expect(done.status(at: at(300)).skipReason == nil)
    }
}
