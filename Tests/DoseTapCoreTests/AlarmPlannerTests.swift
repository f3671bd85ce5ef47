import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("Alarm planner: what rings now, what was missed, what is next")
struct AlarmPlannerTests {
    let ny = TimeZone(identifier: "America/New_York")!

    func at(_ text: String) -> Date {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = ny
        f.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return f.date(from: text)!
    }

    func track(_ time: String, _ repetition: AlarmRepeat = .daily, enabled: Bool = true, armed: String = "2026-01-14 12:00:00",
               lastScheduled: AlarmRing? = nil, latest: AlarmRing? = nil) throws -> AlarmTrack {
        AlarmTrack(alarm: try Alarm(id: 1, time: try TimeOfDay(parsing: time), label: "Work", repetition: repetition, enabled: enabled),
                   armedAt: at(armed), lastScheduled: lastScheduled, latest: latest)
    }

    func ring(_ kind: AlarmRingKind, due: String, outcome: AlarmRingOutcome, ended: String? = nil, snoozeUntil: String? = nil) -> AlarmRing {
        AlarmRing(id: 1, alarmID: 1, kind: kind, dueAt: at(due), startedAt: at(due), endedAt: ended.map(at), outcome: outcome,
                  endedBy: outcome == .ringing ? nil : .cli, snoozeUntil: snoozeUntil.map(at))
    }

    @Test("before the occurrence: nothing rings, the occurrence is next; at it: it rings")
    func onTime() throws {
        let t = try track("06:30")
        let before = AlarmPlanner.plan([t], now: at("2026-01-15 06:29:59"), in: ny)
        #expect(before.ringNow.isEmpty && before.missed.isEmpty)
        #expect(before.nextAt == at("2026-01-15 06:30:00"))
        let due = AlarmPlanner.plan([t], now: at("2026-01-15 06:30:00"), in: ny)
        #expect(due.ringNow == [.init(alarmID: 1, kind: .scheduled, dueAt: at("2026-01-15 06:30:00"))])
        #expect(due.missed.isEmpty)
    }

    @Test("found late: at most 10 minutes rings at once, a second more is recorded as missed and not rung")
    func lateLimit() throws {
        let t = try track("06:30")
        let inTime = AlarmPlanner.plan([t], now: at("2026-01-15 06:40:00"), in: ny)
        #expect(inTime.ringNow.map(\.dueAt) == [at("2026-01-15 06:30:00")] && inTime.missed.isEmpty)
        let late = AlarmPlanner.plan([t], now: at("2026-01-15 06:40:01"), in: ny)
        #expect(late.ringNow.isEmpty)
        #expect(late.missed.map(\.dueAt) == [at("2026-01-15 06:30:00")])
        #expect(late.nextAt == nil, "the next one is planned after the miss is recorded")
    }

    @Test("a machine off for a week: one miss (the latest occurrence), not seven; an occurrence just now still rings")
    func week() throws {
        let t = try track("06:30", armed: "2026-01-07 12:00:00")
        let plan = AlarmPlanner.plan([t], now: at("2026-01-15 09:00:00"), in: ny)
        #expect(plan.missed.map(\.dueAt) == [at("2026-01-15 06:30:00")])
        #expect(plan.ringNow.isEmpty)
        let justNow = AlarmPlanner.plan([t], now: at("2026-01-15 06:35:00"), in: ny)
        #expect(justNow.ringNow.map(\.dueAt) == [at("2026-01-15 06:30:00")])
        #expect(justNow.missed.map(\.dueAt) == [at("2026-01-14 06:30:00")])
    }

    @Test("an occurrence before the alarm was armed never rings; one already dealt with is not planned again")
    func armedAndDealtWith() throws {
        let added = try track("06:30", armed: "2026-01-15 06:31:00")
        let plan = AlarmPlanner.plan([added], now: at("2026-01-15 06:32:00"), in: ny)
        #expect(plan.ringNow.isEmpty && plan.missed.isEmpty)
        #expect(plan.nextAt == at("2026-01-16 06:30:00"))
        let stopped = ring(.scheduled, due: "2026-01-15 06:30:00", outcome: .stopped, ended: "2026-01-15 06:31:00")
        let done = try track("06:30", lastScheduled: stopped, latest: stopped)
        let after = AlarmPlanner.plan([done], now: at("2026-01-15 06:32:00"), in: ny)
        #expect(after.ringNow.isEmpty && after.missed.isEmpty && after.nextAt == at("2026-01-16 06:30:00"))
    }

    @Test("a snooze is an occurrence too: due at its end, missed when found more than 10 minutes late, void once re-armed")
    func snooze() throws {
        let first = ring(.scheduled, due: "2026-01-15 06:30:00", outcome: .snoozed, ended: "2026-01-15 06:31:00",
                         snoozeUntil: "2026-01-15 06:40:00")
        let t = try track("06:30", lastScheduled: first, latest: first)
        #expect(AlarmPlanner.plan([t], now: at("2026-01-15 06:35:00"), in: ny).nextAt == at("2026-01-15 06:40:00"))
        #expect(AlarmPlanner.plan([t], now: at("2026-01-15 06:40:00"), in: ny).ringNow
                == [.init(alarmID: 1, kind: .snooze, dueAt: at("2026-01-15 06:40:00"))])
        let missed = AlarmPlanner.plan([t], now: at("2026-01-15 06:50:01"), in: ny)
        #expect(missed.missed == [.init(alarmID: 1, kind: .snooze, dueAt: at("2026-01-15 06:40:00"))] && missed.ringNow.isEmpty)
        var rearmed = t
        rearmed.armedAt = at("2026-01-15 06:32:00")
        let void = AlarmPlanner.plan([rearmed], now: at("2026-01-15 06:40:00"), in: ny)
        #expect(void.ringNow.isEmpty && void.nextAt == at("2026-01-16 06:30:00"))
    }

    @Test("off, or ringing now: nothing planned for it")
    func offOrRinging() throws {
        #expect(AlarmPlanner.plan([try track("06:30", enabled: false)], now: at("2026-01-15 06:30:00"), in: ny) == .init())
        let ringing = ring(.scheduled, due: "2026-01-15 06:30:00", outcome: .ringing)
        let t = try track("06:30", lastScheduled: ringing, latest: ringing)
        #expect(AlarmPlanner.plan([t], now: at("2026-01-15 06:31:00"), in: ny) == .init())
    }

    @Test("spring forward: a 02:30 alarm rings at 03:00, and found at 03:05 it still rings")
    func springForward() throws {
        let t = try track("02:30", armed: "2026-03-07 12:00:00")
        #expect(AlarmPlanner.plan([t], now: at("2026-03-08 01:59:00"), in: ny).nextAt == at("2026-03-08 03:00:00"))
        #expect(AlarmPlanner.plan([t], now: at("2026-03-08 03:05:00"), in: ny).ringNow.map(\.dueAt) == [at("2026-03-08 03:00:00")])
    }

    @Test("the volume rises from 30 % to full over 30 s, and stays there")
    func volume() {
        #expect(AlarmVolume.at(elapsed: 0) == 0.3)
        #expect(AlarmVolume.at(elapsed: -5) == 0.3)
        #expect(AlarmVolume.at(elapsed: .nan) == 0.3)
        #expect(abs(AlarmVolume.at(elapsed: 15) - 0.65) < 1e-9)
        #expect(AlarmVolume.at(elapsed: 29.9) < 1)
        #expect(AlarmVolume.at(elapsed: 30) == 1)
        #expect(AlarmVolume.at(elapsed: 600) == 1)
    }

    @Test("property: every ring is at most 10 minutes late, every miss more (or followed by a ring), nothing is both, the next is ahead")
    func property() async {
        let zones = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "UTC"]
        await propertyCheck(count: 400, input: Gen.int(in: 0...23), Gen.int(in: 0...59), Gen.int(in: 1...127),
                            Gen.int(in: 0...(60 * 86_400)), Gen.int(in: 0...(20 * 86_400)), Gen.int(in: 0...3)) { hour, minute, mask, armedOffset, gap, zoneIndex in
            let zone = TimeZone(identifier: zones[zoneIndex])!
            let days = Set(Weekday.allCases.filter { mask & (1 << ($0.rawValue - 1)) != 0 })
            let repetition: AlarmRepeat = days.count == 7 ? .daily : .days(days)
            let armed = Date(timeIntervalSince1970: 1_767_225_600 + Double(armedOffset))
            let now = armed.addingTimeInterval(Double(gap))
            let alarm = try! Alarm(id: 1, time: try! TimeOfDay(hour: hour, minute: minute), repetition: repetition)
            let plan = AlarmPlanner.plan([AlarmTrack(alarm: alarm, armedAt: armed, lastScheduled: nil, latest: nil)], now: now, in: zone)
            for due in plan.ringNow {
                #expect(due.dueAt <= now && now.timeIntervalSince(due.dueAt) <= AlarmRingRules.lateLimit)
                #expect(due.dueAt > armed)
            }
            for due in plan.missed {
                #expect(due.dueAt > armed && due.dueAt <= now)
                #expect(now.timeIntervalSince(due.dueAt) > AlarmRingRules.lateLimit || !plan.ringNow.isEmpty)
            }
            #expect(Set(plan.ringNow.map(\.dueAt)).isDisjoint(with: plan.missed.map(\.dueAt)))
            #expect(plan.ringNow.count + plan.missed.count <= 2)
            if let next = plan.nextAt { #expect(next > now) }
            if plan.ringNow.isEmpty && plan.missed.isEmpty { #expect(plan.nextAt != nil) }
        }
    }
}
