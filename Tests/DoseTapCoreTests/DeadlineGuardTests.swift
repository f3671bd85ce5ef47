import DoseTapCore
import Foundation
import Testing

/// The guard at the last safe moment (#52 §3): each rule on both sides of its boundary.
@Suite("DeadlineGuard")
struct DeadlineGuardTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let alarm = now.addingTimeInterval(8 * 3600)
    static let key = DeadlineGuard.Key(alarm: 1, occurrence: alarm)

    static func at(_ offset: TimeInterval, alarm: Date = alarm) -> AlarmDeadline {
        AlarmDeadline(kind: .at, deadline: now.addingTimeInterval(offset), because: "safe if it sleeps by then", alarm: alarm)
    }

    static let ready = GuardFacts(idle: true, idleSince: now.addingTimeInterval(-DeadlineGuard.idleFor))

    @Test("a deadline has come at its instant, not a second before; .now has come; none, unknown and a passed alarm have not")
    func hasCome() {
        #expect(DeadlineGuard.hasCome(Self.at(0), now: Self.now))
        #expect(!DeadlineGuard.hasCome(Self.at(1), now: Self.now))
        #expect(DeadlineGuard.hasCome(Self.at(-3600), now: Self.now))
        #expect(DeadlineGuard.hasCome(AlarmDeadline(kind: .now, because: "", alarm: Self.alarm), now: Self.now))
        #expect(!DeadlineGuard.hasCome(AlarmDeadline(kind: .none, because: "", alarm: Self.alarm), now: Self.now))
        #expect(!DeadlineGuard.hasCome(AlarmDeadline(kind: .unknown, because: "", alarm: Self.alarm), now: Self.now))
        #expect(!DeadlineGuard.hasCome(AlarmDeadline(kind: .now, because: "", alarm: Self.now), now: Self.now), "the alarm itself has come")
        #expect(DeadlineGuard.hasCome(AlarmDeadline(kind: .now, because: "", alarm: Self.now.addingTimeInterval(1)), now: Self.now))
    }

    @Test("the next deadline: the earliest still ahead, never one passed or of a passed alarm")
    func nextDeadline() {
        #expect(DeadlineGuard.nextDeadline([Self.at(600), Self.at(300), Self.at(-1)], now: Self.now) == Self.now.addingTimeInterval(300))
        #expect(DeadlineGuard.nextDeadline([Self.at(0)], now: Self.now) == nil)
        #expect(DeadlineGuard.nextDeadline([AlarmDeadline(kind: .now, because: "", alarm: Self.alarm)], now: Self.now) == nil)
    }

    @Test("the deadline nudge plays once per occurrence; a suspend does not repeat it; the next occurrence is news")
    func nudgeOnce() {
        var g = DeadlineGuard()
        #expect(g.step([(Self.key, Self.at(1))], onAC: false, mode: .sleep, now: Self.now) == DeadlineGuard.Plan())
        let first = g.step([(Self.key, Self.at(0))], onAC: false, mode: .sleep, now: Self.now)
        #expect(first.nudge == [Self.key])
        #expect(first.guarding == Self.key)
        #expect(first.askFacts)
        #expect(g.step([(Self.key, Self.at(-60))], onAC: false, mode: .sleep, now: Self.now).nudge.isEmpty)
        g.suspending()
        #expect(g.step([(Self.key, Self.at(-60))], onAC: false, mode: .sleep, now: Self.now).nudge.isEmpty)
        let tomorrow = DeadlineGuard.Key(alarm: 1, occurrence: Self.alarm.addingTimeInterval(86_400))
        let later = Self.now.addingTimeInterval(86_400)
        #expect(g.step([(tomorrow, AlarmDeadline(kind: .at, deadline: later, because: "", alarm: tomorrow.occurrence))],
                       onAC: false, mode: .sleep, now: later).nudge == [tomorrow])
    }

    @Test("on external power, or the guard off: nothing; guard nudge: the nudge but never the facts")
    func modesAndPower() {
        var g = DeadlineGuard()
        #expect(g.step([(Self.key, Self.at(0))], onAC: true, mode: .sleep, now: Self.now) == DeadlineGuard.Plan())
        #expect(g.step([(Self.key, Self.at(0))], onAC: false, mode: .off, now: Self.now) == DeadlineGuard.Plan())
        let nudge = g.step([(Self.key, Self.at(0))], onAC: false, mode: .nudge, now: Self.now)
        #expect(nudge.nudge == [Self.key])
        #expect(!nudge.askFacts)
    }

    @Test("suspend is asked once per awake stretch: after asking, no facts again until a suspend")
    func askedOnce() {
        var g = DeadlineGuard()
        #expect(g.step([(Self.key, Self.at(0))], onAC: false, mode: .sleep, now: Self.now).askFacts)
        g.asked(Self.key)
        #expect(!g.step([(Self.key, Self.at(0))], onAC: false, mode: .sleep, now: Self.now).askFacts)
        g.suspending()
        #expect(g.step([(Self.key, Self.at(0))], onAC: false, mode: .sleep, now: Self.now).askFacts)
    }

    @Test("the verdict: suspend when idle 2 minutes, can wake, unblocked, allowed; each fact on both sides")
    func verdict() {
        var g = DeadlineGuard()
        #expect(g.verdict(Self.ready, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .suspend(notification: "Going to sleep to keep the 06:30 alarm: battery 31 %"))
        var short = Self.ready
        short.idleSince = Self.now.addingTimeInterval(-DeadlineGuard.idleFor + 1)
        #expect(g.verdict(short, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .wait(because: "idle for 119 s: it waits until nobody has used it for 2 minutes"))
        #expect(g.verdict(GuardFacts(idle: false), mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .wait(because: "someone is using it (logind: not every session is idle)"))
        var blocked = Self.ready
        blocked.blockedBy = ["Totem"]
        #expect(g.verdict(blocked, mode: .sleep, alarm: "06:30", level: 31, now: Self.now) == .wait(because: "Totem keeps it from sleeping"))
        var cannot = Self.ready
        cannot.cannotWake = "no RTC"
        #expect(g.verdict(cannot, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .never(because: "it cannot wake itself for the alarm: no RTC"))
        for answer in ["no", "na", "challenge"] {
            var refused = Self.ready
            refused.canSuspend = answer
            #expect(g.verdict(refused, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
                == .never(because: "logind does not let DoseTap suspend it (CanSuspend: \(answer))"))
        }
        var silent = Self.ready
        silent.canSuspend = nil
        #expect(g.verdict(silent, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .never(because: "logind does not answer whether it may suspend it (CanSuspend)"))
        #expect(g.verdict(Self.ready, mode: .nudge, alarm: "06:30", level: 31, now: Self.now)
            == .never(because: "the guard only nudges ([battery] guard = \"nudge\")"))
        #expect(g.verdict(Self.ready, mode: .sleep, alarm: "06:30", level: nil, now: Self.now)
            == .suspend(notification: "Going to sleep to keep the 06:30 alarm"))
    }

    @Test("a blocker's name is shown escaped; a cannot-wake reason too")
    func escaped() {
        var g = DeadlineGuard()
        var blocked = Self.ready
        blocked.blockedBy = ["Evil\u{1B}[2J"]
        #expect(g.verdict(blocked, mode: .sleep, alarm: "06:30", level: 31, now: Self.now).because.unicodeScalars.allSatisfy { $0.value >= 0x20 })
    }

    @Test("logind without IdleSinceHint: idle counted from when the guard first saw it; busy again starts the count anew")
    func idleSeen() {
        var g = DeadlineGuard()
        let idle = GuardFacts(idle: true, idleSince: nil)
        #expect(g.verdict(idle, mode: .sleep, alarm: "06:30", level: 31, now: Self.now)
            == .wait(because: "idle for 0 s: it waits until nobody has used it for 2 minutes"))
        #expect(g.verdict(idle, mode: .sleep, alarm: "06:30", level: 31, now: Self.now.addingTimeInterval(119)).because.hasPrefix("idle for 119 s"))
        #expect(g.verdict(idle, mode: .sleep, alarm: "06:30", level: 31, now: Self.now.addingTimeInterval(120))
            == .suspend(notification: "Going to sleep to keep the 06:30 alarm: battery 31 %"))
        _ = g.verdict(GuardFacts(idle: false), mode: .sleep, alarm: "06:30", level: 31, now: Self.now.addingTimeInterval(130))
        #expect(g.verdict(idle, mode: .sleep, alarm: "06:30", level: 31, now: Self.now.addingTimeInterval(200)).because.hasPrefix("idle for 0 s"))
        // An IdleSinceHint in the future (a clock that moved back) is not trusted: counted from when it was first seen.
        var ahead = GuardFacts(idle: true, idleSince: Self.now.addingTimeInterval(3600))
        var fresh = DeadlineGuard()
        #expect(fresh.verdict(ahead, mode: .sleep, alarm: "06:30", level: 31, now: Self.now).because.hasPrefix("idle for 0 s"))
        ahead.idleSince = Self.now.addingTimeInterval(-600)
        #expect(fresh.verdict(ahead, mode: .sleep, alarm: "06:30", level: 31, now: Self.now).because.hasPrefix("Going to sleep"))
    }
}
