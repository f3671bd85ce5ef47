import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// #51 finding 4: an event dated in the future is set aside — it never decides tonight — and named until a person
/// discards it (an event itself).
@Suite("Entries dated in the future are set aside")
struct SetAsideTests {
    let utc = TimeZone(identifier: "UTC")!
    var now: Date { localDate("2026-01-15 22:40:00", utc) }

    func event(_ kind: DoseEvent.Kind, _ at: Date, source: InputSource = .cli) -> DoseEvent {
        DoseEvent(id: UUID(), kind: kind, at: at, timeZone: "UTC", source: source)
    }

    func decide(_ command: DoseCommand, _ log: DoseLog, at: Date? = nil, source: InputSource = .cli) -> DoseDecision {
        let at = at ?? now
        return DosePolicy.decide(DoseInput(command: command, source: source, issuedAt: at), log: log, now: at, timeZone: utc,
                                 targetMinutes: 165)
    }

    @Test("the tolerance's boundary: 5 minutes ahead counts, a second more is set aside")
    func boundary() {
        let atTolerance = event(.dose1(targetMinutes: 165), now.addingTimeInterval(DoseRules.futureTolerance))
        let log = DoseLog(events: [atTolerance], now: now)
        #expect(log.setAside.isEmpty && log.sessions.count == 1)
        #expect(decide(.take(confirmLate: false), log).refusal == .tooEarly)

        let beyond = event(.dose1(targetMinutes: 165), now.addingTimeInterval(DoseRules.futureTolerance + 1))
        let aside = DoseLog(events: [beyond], now: now)
        #expect(aside.setAside == [beyond] && aside.sessions.isEmpty && aside.newlySetAside == [beyond.id])
        // Set aside, and so near it could be tonight's: it holds back a new Dose 1 (nearFutureDose1) and decides
        // nothing else.
        #expect(decide(.take(confirmLate: false), aside).refusal == .setAsideDose1)
        #expect(aside.status(at: now, in: utc).phase == .idle)
    }

    @Test("a Dose 1 set aside under 12 h ahead holds back a new Dose 1 until discarded; 12 h ahead does not")
    func nearFutureDose1() {
        let near = event(.dose1(targetMinutes: 165), now.addingTimeInterval(DoseRules.nearFutureDose1 - 1))
        let log = DoseLog(events: [near], now: now)
        let refused = decide(.take(confirmLate: false), log)
        #expect(refused.refusal == .setAsideDose1)
        #expect(refused.message == "A Dose 1 dated 2026-01-16 10:39 (11 h after now) is set aside: if you took it tonight, do not take Dose 1 again; if you did not, discard it first (dosetap dose discard \(SetAsideNotice.shortID(near.id)))")
        // A button gets the same refusal (it cannot discard).
        #expect(decide(.take(confirmLate: false), log, source: .button).refusal == .setAsideDose1)
        guard case .record(let discard, _) = decide(.discard(reference: near.id.uuidString), log) else {
            Issue.record("discard refused")
            return
        }
        let after = DoseLog(events: [near, event(discard, now)], now: now)
        #expect(decide(.take(confirmLate: false), after).recorded == .dose1(targetMinutes: 165))
        // Exactly 12 h ahead: blocks nothing; nor a Dose 2 or a snooze set aside.
        let far = event(.dose1(targetMinutes: 165), now.addingTimeInterval(DoseRules.nearFutureDose1))
        #expect(decide(.take(confirmLate: false), DoseLog(events: [far], now: now)).recorded == .dose1(targetMinutes: 165))
        let dose2 = event(.dose2(late: false), now.addingTimeInterval(3600))
        #expect(decide(.take(confirmLate: false), DoseLog(events: [dose2], now: now)).recorded == .dose1(targetMinutes: 165))
    }

    @Test("a Dose 1 dated a day or a century ahead does not block tonight's Dose 1, and tonight's night is whole",
          arguments: [86_400.0, 100 * 365.25 * 86_400])
    func aheadDoesNotBlock(ahead: TimeInterval) {
        let future = event(.dose1(targetMinutes: 165), now.addingTimeInterval(ahead))
        var events = [future]
        var log = DoseLog(events: events, now: now)
        #expect(log.status(at: now, in: utc).phase == .idle)
        #expect(log.status(at: now, in: utc).setAside == [future])
        guard case .record(let kind, let confirmation) = decide(.take(confirmLate: false), log) else {
            Issue.record("tonight's Dose 1 refused")
            return
        }
        #expect(confirmation.hasPrefix("Dose 1 taken at 22:40."))
        events.append(event(kind, now))
        log = DoseLog(events: events, now: now.addingTimeInterval(151 * 60))
        #expect(log.status(at: now.addingTimeInterval(151 * 60), in: utc).phase == .open)
        #expect(decide(.take(confirmLate: false), log, at: now.addingTimeInterval(151 * 60)).recorded == .dose2(late: false))
    }

    @Test("remembered as set aside, an entry stays aside when its date comes; not remembered, it would count")
    func remembered() {
        let future = event(.dose1(targetMinutes: 165), now.addingTimeInterval(86_400))
        let tomorrow = now.addingTimeInterval(86_400 + 600)
        let kept = DoseLog(events: [future], setAside: [future.id], now: tomorrow)
        #expect(kept.sessions.isEmpty && kept.setAside == [future] && kept.newlySetAside.isEmpty)
        #expect(decide(.take(confirmLate: false), kept, at: tomorrow).recorded == .dose1(targetMinutes: 165))
        // The other side: the date come and nothing remembered, the entry is a Dose 1 like any (why the store
        // remembers it the first time it sees it).
        let forgotten = DoseLog(events: [future], now: tomorrow)
        #expect(forgotten.sessions.count == 1 && forgotten.setAside.isEmpty)
    }

    @Test("a future Undo undoes nothing, a future Dose 2 completes nothing")
    func futureActionsDecideNothing() {
        let dose1 = event(.dose1(targetMinutes: 165), now.addingTimeInterval(-160 * 60))
        let undo = event(.undo(of: dose1.id), now.addingTimeInterval(3600))
        let dose2 = event(.dose2(late: false), now.addingTimeInterval(7200))
        let log = DoseLog(events: [dose1, undo, dose2], now: now)
        let status = log.status(at: now, in: utc)
        #expect(status.phase == .open)
        #expect(status.session?.dose1 == dose1 && status.session?.dose2 == nil)
        #expect(status.setAside == [undo, dose2])
        #expect(log.undoableActions == [dose1])
    }

    @Test("discard: a person's, of an entry set aside, once; it ends the notice and never makes the entry count")
    func discard() {
        let future = event(.dose1(targetMinutes: 165), now.addingTimeInterval(86_400))
        let tonight = event(.dose1(targetMinutes: 165), now.addingTimeInterval(-60))
        let log = DoseLog(events: [future, tonight], now: now)
        let short = SetAsideNotice.shortID(future.id)
        #expect(short.count == 8)
        for source in [InputSource.button, .mqtt, .agent, .notification] {
            #expect(decide(.discard(reference: short), log, source: source).refusal == .notSetAside)
        }
        guard case .record(let kind, let confirmation) = decide(.discard(reference: short.uppercased()), log, source: .web) else {
            Issue.record("discard refused")
            return
        }
        #expect(kind == .discard(of: future.id))
        #expect(confirmation == "Discarded: Dose 1 dated 2026-01-16 22:40. It stays in the log, marked discarded, and never counts.")
        #expect(decide(.discard(reference: future.id.uuidString), log).recorded == .discard(of: future.id))

        let after = DoseLog(events: [future, tonight, event(kind, now)], now: now)
        #expect(after.setAside.isEmpty && after.discarded == [future])
        #expect(after.status(at: now, in: utc).session?.dose1 == tonight)
        #expect(decide(.discard(reference: short), after).refusal == .alreadyDiscarded)
        // Its date come, with no mark remembered: the discard alone keeps it aside.
        let later = now.addingTimeInterval(86_400 + 60)
        #expect(DoseLog(events: [future, tonight, event(kind, now)], now: later).sessions.map(\.dose1) == [tonight])

        // Only an entry set aside; a counted one is undone, not discarded.
        let counted = decide(.discard(reference: SetAsideNotice.shortID(tonight.id)), log)
        #expect(counted.refusal == .notSetAside)
        #expect(counted.message.contains("dosetap dose undo") == true)
        #expect(decide(.discard(reference: "00000000"), log).refusal == .noSuchEvent)
        #expect(decide(.discard(reference: "1234567"), log).refusal == .noSuchEvent) // too short
        #expect(decide(.discard(reference: "zzzzzzzz"), log).refusal == .noSuchEvent)
        #expect(decide(.discard(reference: "\u{1B}[31m12345678"), log).message.contains("\u{1B}") == false)
    }

    @Test("a discard names one entry: a prefix two ids share is refused")
    func ambiguousPrefix() {
        let a = DoseEvent(id: UUID(uuidString: "ABCDEF01-0000-4000-8000-000000000001")!, kind: .dose1(targetMinutes: 165),
                          at: now.addingTimeInterval(86_400), timeZone: "UTC", source: .cli)
        let b = DoseEvent(id: UUID(uuidString: "ABCDEF01-0000-4000-8000-000000000002")!, kind: .dose1(targetMinutes: 165),
                          at: now.addingTimeInterval(2 * 86_400), timeZone: "UTC", source: .cli)
        let log = DoseLog(events: [a, b], now: now)
        #expect(decide(.discard(reference: "abcdef01"), log).message == "abcdef01 names more than one entry: give more of its id")
        #expect(decide(.discard(reference: "abcdef01-0000-4000-8000-000000000002"), log).recorded == .discard(of: b.id))
    }

    @Test("the notice: when, how far ahead, and the command")
    func notice() {
        let future = event(.dose1(targetMinutes: 165), now.addingTimeInterval(23 * 3600 + 120))
        #expect(SetAsideNotice.sentence(future, now: now, in: utc)
            == "Set aside: Dose 1 dated 2026-01-16 21:42 (23 h after now) — recorded while a clock was ahead; it does not count. Discard it: dosetap dose discard \(SetAsideNotice.shortID(future.id))")
        #expect(SetAsideNotice.ahead(now.addingTimeInterval(38 * 60), of: now) == "38 min")
        #expect(SetAsideNotice.ahead(now.addingTimeInterval(62 * 86_400), of: now) == "62 days")
        #expect(SetAsideNotice.ahead(now.addingTimeInterval(173 * 365.25 * 86_400), of: now) == "173 years")
    }

    static let offsets = Gen.double(in: -30_000...400_000).array(of: 1...6)

    @Test("property: entries dated beyond the tolerance change nothing the rules decide")
    func neverDecides() async {
        await propertyCheck(count: 200, input: Self.offsets, Gen.int(in: 0...5).array(of: 6)) { offsets, kinds in
            let base = localDate("2026-01-15 22:40:00", utc)
            var past: [DoseEvent] = []
            var all: [DoseEvent] = []
            for (i, offset) in offsets.enumerated() {
                let kind: DoseEvent.Kind = switch kinds[i % kinds.count] {
                case 0, 1: .dose1(targetMinutes: 165)
                case 2: .dose2(late: false)
                case 3: .snooze
                case 4: .skip(nil)
                default: .undo(of: all.last?.id ?? UUID())
                }
                let e = DoseEvent(id: UUID(), kind: kind, at: base.addingTimeInterval(offset), timeZone: "UTC", source: .cli)
                all.append(e)
                if offset <= DoseRules.futureTolerance { past.append(e) }
            }
            let withFuture = DoseLog(events: all, now: base)
            let without = DoseLog(events: past, now: base)
            #expect(withFuture.sessions == without.sessions)
            #expect(withFuture.setAside.count == all.count - past.count)
            for command in [DoseCommand.take(confirmLate: false), .take(confirmLate: true), .snooze, .skip(nil), .undo] {
                let a = DosePolicy.decide(DoseInput(command: command, source: .cli, issuedAt: base), log: withFuture, now: base,
                                          timeZone: utc, targetMinutes: 165)
                let b = DosePolicy.decide(DoseInput(command: command, source: .cli, issuedAt: base), log: without, now: base,
                                          timeZone: utc, targetMinutes: 165)
                // The one thing a set-aside entry does: a Dose 1 dated under 12 h ahead holds back a new Dose 1.
                if a != b {
                    #expect(a.refusal == .setAsideDose1 && b.recorded == .dose1(targetMinutes: 165), "\(a) against \(b)")
                    #expect(withFuture.setAside.contains { e in
                        if case .dose1 = e.kind { return e.at.timeIntervalSince(base) < DoseRules.nearFutureDose1 } else { return false }
                    })
                }
            }
        }
    }
}
