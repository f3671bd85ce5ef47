import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

/// The battery at an alarm as every face shows it (#52): `BatteryStatus.alarmForecast`, the nudge by the deadline.
@Suite("Alarm nudge: the forecast's nudge decided by the deadline, as the faces show it")
struct AlarmNudgeTests {
    static let zone = TimeZone(identifier: "UTC")!
    static let now = localDate("2026-12-01 20:00:00", zone)
    /// 8 h ahead.
    static let alarm = localDate("2026-12-02 04:00:00", zone)

    /// A laptop at `level` draining 10 %/h awake; a fresh install (nothing learned: asleep at the 3 %/h prior, and
    /// forecast awake by the night model: it has not shown yet that it sleeps).
    static func status(_ level: Double, onAC: Bool = false, canWake: Bool = true, learning: NightLearning = NightLearning(),
                       night: Bool = true) -> BatteryStatus {
        let state = PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
            "type": "Battery", "present": "1", "status": onAC ? "Charging" : "Discharging",
            "energy_now": String(Int((level * 1_000_000).rounded())), "energy_full": "100000000",
        ])])
        let outlook = NightOutlook(learning: learning, conditions: NightConditions(canWake: canWake), timeZone: zone)
        return BatteryStatus(state: state, drain: DrainEstimate(percentPerHour: 10, source: .hardware), night: night ? outlook : nil)
    }

    // 80 %, 10 %/h awake, 3 %/h asleep, 8 h, 10 min of ringing: awake until the alarm 80 − 81.7 → critical 0 %; asleep
    // from now 80 − 24 − 1.7 = 54 % safe. The deadline: 54.33 − 7 t = 21 → t = 4.76 h → 00:45:42.

    @Test("a fresh install's evening: the night model forecasts critical, but sleep saves it: silence, and the deadline in the decision")
    func freshEveningIsSilent() throws {
        let f = Self.status(80).alarmForecast(at: Self.alarm, now: Self.now)
        #expect(f.risk == .critical, "the forecast itself is the night model's, unchanged")
        #expect(Self.status(80).forecast(at: Self.alarm, now: Self.now).nudge != nil, "before #52 this evening nudged")
        #expect(f.nudge == nil)
        let decision = try #require(f.decision)
        #expect(decision.why == .sleepSavesIt)
        let deadline = try #require(decision.deadline.deadline)
        #expect(ClockText(timeZone: Self.zone).timeWithSeconds(deadline) == "00:45:42")
        #expect(decision.recheckAt == deadline.addingTimeInterval(-NudgeDecision.margin))
    }

    @Test("decided again at deadline − margin the nudge shows, with the deadline line; a second before, silence")
    func decidedAgainAtTheTimer() throws {
        let status = Self.status(80)
        let f = status.alarmForecast(at: Self.alarm, now: Self.now)
        let at = try #require(f.decision?.recheckAt)
        let before = status.alarmForecast(f, decidedAt: at.addingTimeInterval(-1))
        #expect(before.nudge == nil)
        #expect(before.decision?.why == .sleepSavesIt)
        let due = status.alarmForecast(f, decidedAt: at)
        #expect(due.decision?.why == .deadlineNear)
        let nudge = try #require(due.nudge)
        #expect(nudge.header == "Alarm at Risk")
        #expect(nudge.headline == "Estimated battery at alarm: 0%")
        #expect(nudge.action == "Plug in now.")
        #expect(nudge.assumption == "if this machine stays awake until the alarm")
        #expect(nudge.deadlineText == "At risk unless this machine sleeps or is plugged in by 00:45.")
        #expect(nudge.fullText.hasSuffix("Assuming: if this machine stays awake until the alarm. At risk unless this machine sleeps or is plugged in by 00:45."))
        #expect(due.decision?.recheckAt == nil, "shown: no further timer")
        #expect(due.risk == f.risk && due.predictedLevel == f.predictedLevel, "the forecast's own number stays")
    }

    @Test("the deadline read anew 20 minutes before it nudges; 20 minutes and a second before, silence")
    func freshReadingNearTheDeadline() throws {
        // Awake from 20:00 to t (after midnight) at 10 %/h: the level at t. The deadline from there stays 00:45:42.
        func at(_ clock: String) -> BatteryForecast {
            let t = localDate("2026-12-02 \(clock)", Self.zone)
            return Self.status(80 - 10 * t.timeIntervalSince(Self.now) / 3600).alarmForecast(at: Self.alarm, now: t)
        }
        #expect(at("00:25:42").decision?.why == .deadlineNear)
        #expect(at("00:25:42").nudge?.deadlineText == "At risk unless this machine sleeps or is plugged in by 00:45.")
        #expect(at("00:25:41").nudge == nil)
        #expect(at("00:25:41").decision?.why == .sleepSavesIt)
    }

    @Test("at risk even asleep now: the nudge shows the night asleep from now, no deadline line")
    func atRiskAsleep() throws {
        // 30 %: asleep from now 30 − 25.7 = 4 % critical.
        let f = Self.status(30).alarmForecast(at: Self.alarm, now: Self.now)
        #expect(f.decision?.why == .atRiskAsleep)
        let nudge = try #require(f.nudge)
        #expect(nudge.headline == "Estimated battery at alarm: 4%")
        #expect(nudge.assumption == "if this machine sleeps from now until the alarm wakes it")
        #expect(nudge.deadlineText == nil)
        #expect(f.decision?.recheckAt == nil)
    }

    @Test("a machine that cannot wake itself will not sleep: the nudge at once, awake, saying why; the same machine that can wake is silent")
    func cannotWake() throws {
        let f = Self.status(80, canWake: false).alarmForecast(at: Self.alarm, now: Self.now)
        #expect(f.decision?.why == .willNotSleep)
        let nudge = try #require(f.nudge)
        #expect(nudge.severity == .critical)
        #expect(nudge.assumption == "if this machine stays awake until the alarm (it cannot wake itself for the alarm)")
        #expect(nudge.deadlineText == nil)
        #expect(Self.status(80, canWake: true).alarmForecast(at: Self.alarm, now: Self.now).nudge == nil)
    }

    @Test("on AC no deadline and no nudge; without the machine's nights the seed's forecast and nudge, undecided")
    func noDeadline() throws {
        let plugged = Self.status(30, onAC: true).alarmForecast(at: Self.alarm, now: Self.now)
        #expect(plugged.nudge == nil)
        #expect(plugged.decision?.why == .safe)
        #expect(plugged.decision?.deadline.kind == AlarmDeadline.Kind.none)
        #expect(plugged.decision?.recheckAt == nil)
        let seed = Self.status(80, night: false).alarmForecast(at: Self.alarm, now: Self.now)
        #expect(seed.decision == nil)
        #expect(seed.nudge?.severity == .critical)
        #expect(seed == Self.status(80, night: false).forecast(at: Self.alarm, now: Self.now))
    }
}
