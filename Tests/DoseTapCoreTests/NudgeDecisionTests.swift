import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

/// The nudge by the deadline, not by a guess of the evening (#52).
@Suite("Nudge decision: at risk asleep, deadline near, will not sleep; otherwise silent")
struct NudgeDecisionTests {
    static let zone = TimeZone(identifier: "UTC")!
    static let now = localDate("2026-12-01 22:00:00", zone)
    static let alarm = localDate("2026-12-02 06:00:00", zone)
    static let safe = RiskPrediction(risk: .safe, predictedLevel: 40)
    static let critical = RiskPrediction(risk: .critical, predictedLevel: 0)
    static let warning = RiskPrediction(risk: .warning, predictedLevel: 20)

    static func at(_ seconds: TimeInterval, awake: RiskPrediction = critical) -> AlarmDeadline {
        AlarmDeadline(kind: .at, deadline: now.addingTimeInterval(seconds), because: "safe if it sleeps or is plugged in by then",
                      alarm: alarm, asleepNow: safe, awake: awake)
    }

    static func decide(_ d: AlarmDeadline, _ conditions: NightConditions = NightConditions(), habits: SleepHabits = SleepHabits())
        -> NudgeDecision {
        NudgeDecision.decide(d, now: now, conditions: conditions, habits: habits)
    }

    static func battery(_ level: Double, onAC: Bool = false) -> PowerState {
        PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
            "type": "Battery", "present": "1", "status": onAC ? "Charging" : "Discharging",
            "energy_now": String(Int((level * 1_000_000).rounded())), "energy_full": "100000000",
        ])])
    }

    @Test("the margin is 20 minutes: a deadline 20 minutes away nudges, 20 minutes and a second away is silent")
    func marginBoundary() throws {
        #expect(NudgeDecision.margin == 20 * 60)
        let near = Self.decide(Self.at(20 * 60))
        #expect(near.why == .deadlineNear)
        let nudge = try #require(near.nudge)
        #expect(nudge.header == "Alarm at Risk")
        #expect(nudge.headline == "Estimated battery at alarm: 0%")
        #expect(nudge.action == "Plug in now.")
        #expect(nudge.color == .red)
        #expect(near.prediction == Self.critical, "what happens if nothing changes: awake until the alarm")
        #expect(Self.decide(Self.at(20 * 60 - 1)).nudge != nil)
        #expect(Self.decide(Self.at(0)).why == .deadlineNear)
        let far = Self.decide(Self.at(20 * 60 + 1))
        #expect(far.nudge == nil)
        #expect(far.why == .sleepSavesIt)
        #expect(far.prediction == Self.safe)
    }

    @Test("near the deadline the seed's tiers and copy: a warning awake reads as the warning")
    func warningTier() throws {
        let nudge = try #require(Self.decide(Self.at(600, awake: Self.warning)).nudge)
        #expect(nudge.severity == .warning)
        #expect(nudge.header == "Low Battery Warning")
        #expect(nudge.headline == "Estimated battery at alarm: 20%")
        #expect(nudge.action == "Consider plugging in.")
        #expect(nudge.color == .orange)
    }

    @Test("at risk even if it slept now: nudged with the forecast asleep, whatever the evening")
    func atRiskAsleep() throws {
        let d = AlarmDeadline(kind: .now, because: "at risk even if it sleeps now", alarm: Self.alarm, asleepNow: Self.warning,
                              awake: Self.critical)
        let decision = Self.decide(d)
        #expect(decision.why == .atRiskAsleep)
        #expect(decision.nudge?.headline == "Estimated battery at alarm: 20%")
        #expect(decision.nudge?.severity == .warning)
        let going = Self.decide(d, NightConditions(goingToSleep: true))
        #expect(going.why == .atRiskAsleep)
        #expect(going.nudge != nil)
    }

    @Test("no deadline (on external power, or safe awake): silent, also on a machine that cannot wake or will not sleep")
    func noDeadlineIsSilent() {
        let none = AlarmDeadline(kind: .none, because: "on external power", alarm: Self.alarm)
        #expect(Self.decide(none).nudge == nil)
        #expect(Self.decide(none).why == .safe)
        #expect(Self.decide(none, NightConditions(canWake: false)).nudge == nil)
        let unknown = AlarmDeadline(kind: .unknown, because: "the drain awake is not known yet", alarm: Self.alarm, asleepNow: Self.safe)
        #expect(Self.decide(unknown).nudge == nil)
        #expect(Self.decide(unknown).why == .unknown)
    }

    @Test("a machine that will not sleep is nudged by its forecast awake, however far the deadline; one that may sleep is not")
    func willNotSleep() throws {
        let far = Self.at(3 * 3600)
        #expect(Self.decide(far).nudge == nil)
        let cannotWake = Self.decide(far, NightConditions(canWake: false))
        #expect(cannotWake.why == .willNotSleep)
        #expect(cannotWake.nudge?.header == "Alarm at Risk")
        #expect(cannotWake.because.contains("cannot wake itself"))
        let blocked = Self.decide(far, NightConditions(sleepBlockedBy: ["backup-tool"]))
        #expect(blocked.why == .willNotSleep)
        #expect(blocked.because.contains("backup-tool"))
        // Going to sleep does not make a machine that cannot wake safe: asleep, it rings nothing.
        #expect(Self.decide(far, NightConditions(canWake: false, goingToSleep: true)).why == .willNotSleep)
    }

    @Test("a machine seen awake all night on its last 7 whole nights never sleeps (a Pi); 6 nights, or one night asleep, is not that")
    func neverSleeps() {
        func night(_ day: Int, onset: Int? = nil, until: Int = SleepHabits.nightMinutes) -> NightRecord {
            NightRecord(night: "2026-11-\(day.zeroPadded(2))", awakeFrom: 0, awakeUntil: until, onset: onset)
        }
        let seven = SleepHabits(nights: (1...7).map { night($0) })
        #expect(seven.neverSleeps)
        #expect(!SleepHabits(nights: (1...6).map { night($0) }).neverSleeps)
        #expect(!SleepHabits(nights: (1...7).map { night($0) } + [night(8, onset: 300)]).neverSleeps)
        #expect(!SleepHabits(nights: (1...6).map { night($0) } + [night(8, until: 300)]).neverSleeps, "a night not seen whole says nothing")
        let pi = Self.decide(Self.at(3 * 3600), habits: seven)
        #expect(pi.why == .willNotSleep)
        #expect(pi.nudge != nil)
        #expect(Self.decide(Self.at(3 * 3600), habits: SleepHabits(nights: (1...6).map { night($0) })).nudge == nil)
    }

    @Test("going to sleep before the deadline: silent even when the deadline is near; at risk asleep though safe awake: nudged")
    func goingToSleep() {
        #expect(Self.decide(Self.at(300), NightConditions(goingToSleep: true)).nudge == nil)
        #expect(Self.decide(Self.at(300), NightConditions(goingToSleep: true)).why == .sleepSavesIt)
        // An idle machine that drains less awake than the prior says asleep: safe awake, not asleep.
        let idle = AlarmDeadline(kind: .none, because: "safe even if it stays awake until the alarm", alarm: Self.alarm,
                                 asleepNow: Self.warning, awake: Self.safe)
        #expect(Self.decide(idle).nudge == nil)
        #expect(Self.decide(idle, NightConditions(goingToSleep: true)).why == .atRiskAsleep)
    }

    /// A laptop on a new install (nothing learned: the 3 %/h prior asleep) draining 10 %/h awake from 95 % at 18:00,
    /// alarm 06:00. Asleep from t hours after 18:00: 95 − 10 t − 3 (12 − t) − 10/6 = 57.33 − 7 t ≥ 21 until t = 5.19 h:
    /// the deadline is 23:11, and the nudge is due from 22:51.
    static func evening(until end: String, sleepsAtEnd: Bool) -> [(Date, NudgeDecision)] {
        let start = localDate("2026-12-01 18:00:00", zone)
        let alarm = localDate("2026-12-02 06:00:00", zone)
        let stop = localDate(end, zone)
        var result: [(Date, NudgeDecision)] = []
        var t = start
        while t <= stop {
            let going = sleepsAtEnd && t == stop
            let level = 95 - 10 * t.timeIntervalSince(start) / 3600
            let outlook = NightOutlook(learning: NightLearning(), conditions: NightConditions(goingToSleep: going), timeZone: zone)
            result.append((t, NudgeDecision.make(state: battery(level), drain: DrainEstimate(percentPerHour: 10, source: .history),
                                                 alarm: alarm, now: t, night: outlook)))
            t = t.addingTimeInterval(60)
        }
        return result
    }

    @Test("a new install's evening stays silent on a laptop that then sleeps at 22:00, re-check at the suspend included")
    func freshEveningSilent() throws {
        let evening = Self.evening(until: "2026-12-01 22:00:00", sleepsAtEnd: true)
        #expect(evening.count == 241)
        #expect(evening.allSatisfy { $0.1.nudge == nil })
        #expect(evening.allSatisfy { $0.1.why == .sleepSavesIt })
        let first = try #require(evening.first?.1.deadline.deadline)
        #expect(abs(first.timeIntervalSince(localDate("2026-12-01 23:11:25", Self.zone))) <= 60)
        // Today's night model says the opposite on that evening: awake until the alarm (nothing learned) — at risk.
        let outlook = NightOutlook(learning: NightLearning(), conditions: NightConditions(), timeZone: Self.zone)
        let old = BatteryForecast.make(state: Self.battery(55), drain: DrainEstimate(percentPerHour: 10, source: .history),
                                       at: localDate("2026-12-02 06:00:00", Self.zone), now: localDate("2026-12-01 22:00:00", Self.zone),
                                       night: outlook)
        #expect(old.risk == .critical)
    }

    @Test("the same laptop left awake: silent until 20 minutes before its deadline, then nudged at every re-check")
    func leftAwakeNudgesAtTheDeadline() throws {
        let evening = Self.evening(until: "2026-12-01 23:30:00", sleepsAtEnd: false)
        let deadline = try #require(evening.first?.1.deadline.deadline)
        let first = try #require(evening.first { $0.1.nudge != nil })
        #expect(first.1.why == .deadlineNear)
        #expect(first.0 >= deadline.addingTimeInterval(-NudgeDecision.margin))
        #expect(first.0 < deadline.addingTimeInterval(-NudgeDecision.margin + 60))
        #expect(first.1.nudge?.header == "Alarm at Risk")
        #expect(evening.filter { $0.0 >= first.0 }.allSatisfy { $0.1.nudge != nil })
        // Past the deadline, sleeping is not enough any more: the reason says so.
        #expect(evening.last?.1.why == .atRiskAsleep)
    }
}
