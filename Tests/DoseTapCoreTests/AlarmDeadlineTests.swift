import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// The last safe moment (#52): until when the machine may stay awake on its battery and still ring the alarm.
@Suite("Alarm deadline: the last moment to be asleep or plugged in")
struct AlarmDeadlineTests {
    static let zone = TimeZone(identifier: "UTC")!
    static let now = localDate("2026-12-01 22:00:00", zone)
    /// 8 hours on: 06:00.
    static let alarm = now.addingTimeInterval(8 * 3600)
    /// A deep-sleep laptop: 1 point a sleep and 0.4 %/h.
    static let sleep = SleepDrainEstimate(percentPerHour: 0.4, fixed: 1, learned: true, observations: 5)
    /// 15 minutes of ringing: at 16 %/h awake, 4 points.
    static let ringing: TimeInterval = 15 * 60

    static func deadline(_ level: Double?, awake: Double? = 16, asleep: SleepDrainEstimate = sleep, onAC: Bool = false,
                         ringing: TimeInterval = ringing, powerOff: PowerOffPolicy = .upowerDefault, alarm: Date = alarm,
                         now: Date = now) -> AlarmDeadline {
        AlarmDeadline.make(level: level, onAC: onAC, awakeDrain: awake, asleep: asleep, ringing: ringing, powerOff: powerOff,
                           alarm: alarm, now: now)
    }

    /// now < deadline < alarm as a number: "now" is −1, a deadline its seconds from now, none +∞.
    static func rank(_ d: AlarmDeadline, now: Date = now) -> Double {
        switch d.kind {
        case .now: -1
        case .at: d.deadline!.timeIntervalSince(now)
        case .none: .infinity
        case .unknown: .nan
        }
    }

    // MARK: the worked example, and each boundary on both sides

    @Test("60 % at 22:00, 16 %/h awake, 1 point + 0.4 %/h asleep, alarm 06:00 with 15 min of ringing: asleep by 23:58:27")
    func workedExample() throws {
        // Asleep now: 60 − 4 (ringing) − 1 − 0.4 × 8 = 51.8; each hour awake costs 16 − 0.4 = 15.6 points more;
        // 51.8 − 15.6 t = 21 at t = 1.974358… h = 7107.69 s → 7107 s → 23:58:27.
        let d = Self.deadline(60)
        #expect(d.kind == .at)
        #expect(d.deadline == Self.now.addingTimeInterval(7107))
        #expect(d.asleepNow == RiskPrediction(risk: .safe, predictedLevel: 51))
        #expect(d.awake?.risk == .critical, "awake until 06:00 and through the ringing: 60 − 132 → 0 %")
        #expect(d.because.contains("by then"))
    }

    @Test("asleep now exactly at the lowest safe level (21 %): a deadline of now; a tenth below: now, even sleeping is not enough")
    func sleepingNowBoundary() {
        // Asleep now costs 4 + 1 + 3.2 = 8.2 points.
        let just = Self.deadline(29.2)
        #expect(just.kind == .at)
        #expect(just.deadline == Self.now)
        #expect(just.asleepNow?.predictedLevel == 21)
        let below = Self.deadline(29.1)
        #expect(below.kind == .now)
        #expect(below.deadline == nil)
        #expect(below.asleepNow == RiskPrediction(risk: .warning, predictedLevel: 20))
        #expect(below.because.contains("even if it sleeps now"))
    }

    @Test("safe even awake until the alarm and through its ringing: no deadline; a tenth less: a deadline before the alarm")
    func stayingAwakeBoundary() throws {
        // 2 %/h awake: 8.25 h × 2 = 16.5 points.
        let safe = Self.deadline(37.5, awake: 2)
        #expect(safe.kind == .none)
        #expect(safe.deadline == nil)
        #expect(safe.awake == RiskPrediction(risk: .safe, predictedLevel: 21))
        let unsafe = Self.deadline(37.4, awake: 2)
        #expect(unsafe.kind == .at)
        let at = try #require(unsafe.deadline)
        // 37.4 − 0.5 − 1 − 3.2 = 32.7 asleep now; (32.7 − 21) / 1.6 = 7.3125 h.
        #expect(abs(at.timeIntervalSince(Self.now) - 7.3125 * 3600) <= 1)
        #expect(at < Self.alarm)
    }

    @Test("the power-off level counts as empty: with UPower acting at 25 %, asleep now must stay at 26 % or above")
    func powerOffBoundary() {
        let policy = PowerOffPolicy(percentage: 25)
        #expect(Self.deadline(34.2, powerOff: policy).kind == .at)
        #expect(Self.deadline(34.2, powerOff: policy).deadline == Self.now)
        let below = Self.deadline(34.1, powerOff: policy)
        #expect(below.kind == .now)
        #expect(below.asleepNow?.risk == .critical, "25.9 rounds to 25, at the power-off level")
        #expect(below.asleepNow?.powerOffLevel == 25)
        // The default policy (2 %) does not move the 21 % floor.
        #expect(Self.deadline(29.2).kind == .at)
    }

    @Test("the lowest safe level is the tiers' own: 21 % (or a whole percent above the power-off level), less the rounding noise")
    func lowestSafeLevel() throws {
        #expect(RiskPredictor.lowestSafeLevel(powerOffLevel: nil) == 21 - 1e-9)
        #expect(RiskPredictor.lowestSafeLevel(powerOffLevel: 2) == 21 - 1e-9)
        #expect(RiskPredictor.lowestSafeLevel(powerOffLevel: 20) == 21 - 1e-9)
        #expect(RiskPredictor.lowestSafeLevel(powerOffLevel: 20.5) == 21 - 1e-9)
        #expect(RiskPredictor.lowestSafeLevel(powerOffLevel: 21) == 22 - 1e-9)
        for off in [nil, 2.0, 21, 30.5] {
            let lowest = RiskPredictor.lowestSafeLevel(powerOffLevel: off)
            let at = try RiskPredictor.predict(RiskInput(level: lowest, drainPercentPerHour: 0, hours: 0, charging: false), powerOffLevel: off)
            let under = try RiskPredictor.predict(RiskInput(level: lowest - 0.01, drainPercentPerHour: 0, hours: 0, charging: false),
                                                  powerOffLevel: off)
            #expect(at.risk == .safe, "\(String(describing: off))")
            #expect(under.risk != .safe, "\(String(describing: off))")
        }
    }

    @Test("on external power, or no level: no deadline, or unknown; no awake drain: unknown unless sleeping now is already too little")
    func noDeadline() {
        #expect(Self.deadline(10, onAC: true).kind == .none)
        #expect(Self.deadline(nil).kind == .unknown)
        #expect(Self.deadline(.nan).kind == .unknown)
        #expect(Self.deadline(140).kind == .unknown)
        let unknown = Self.deadline(60, awake: nil)
        #expect(unknown.kind == .unknown)
        #expect(unknown.asleepNow?.risk == .safe)
        #expect(unknown.awake == nil)
        #expect(Self.deadline(12, awake: nil).kind == .now)
        let absent = PowerState(raw: [])
        let outlook = NightOutlook(learning: NightLearning(), conditions: NightConditions(), timeZone: Self.zone)
        #expect(AlarmDeadline.make(state: absent, drain: .unknown, alarm: Self.alarm, now: Self.now, night: outlook).kind == .none)
    }

    @Test("a machine still awake at its deadline, asked again then, is just safe asleep; a minute later, not")
    func reAskedAtTheDeadline() throws {
        let d = try #require(Self.deadline(60).deadline)
        let spent = 16 * d.timeIntervalSince(Self.now) / 3600
        let atDeadline = Self.deadline(60 - spent, now: d)
        #expect(atDeadline.asleepNow?.risk == .safe)
        #expect(atDeadline.kind == .at)
        #expect(abs(try #require(atDeadline.deadline).timeIntervalSince(d)) <= 1, "the deadline does not move while it drains as forecast")
        let late = d.addingTimeInterval(60)
        let minuteLater = Self.deadline(60 - 16 * late.timeIntervalSince(Self.now) / 3600, now: late)
        #expect(minuteLater.kind == .now)
        #expect(minuteLater.asleepNow?.risk == .warning)
    }

    @Test("the prior's drain asleep (3 %/h, a new install) gives an earlier deadline than a learned deep sleep")
    func priorIsEarlier() throws {
        let prior = SleepDrainModel().estimate
        #expect(prior.learned == false)
        let fresh = try #require(Self.deadline(60, asleep: prior).deadline)
        let learned = try #require(Self.deadline(60).deadline)
        #expect(fresh < learned)
    }

    // MARK: properties

    struct Scenario: Sendable, CustomStringConvertible {
        var level: Double
        var awake: Double
        var rate: Double
        var fixed: Double
        var hours: Double
        var ringing: Double
        var asleep: SleepDrainEstimate { SleepDrainEstimate(percentPerHour: rate, fixed: fixed, learned: true, observations: 3) }
        var alarm: Date { AlarmDeadlineTests.now.addingTimeInterval(hours * 3600) }
        func deadline(level: Double? = nil, awake: Double? = nil, rate: Double? = nil, fixed: Double? = nil) -> AlarmDeadline {
            AlarmDeadlineTests.deadline(level ?? self.level, awake: awake ?? self.awake,
                                        asleep: SleepDrainEstimate(percentPerHour: rate ?? self.rate, fixed: fixed ?? self.fixed,
                                                                   learned: true, observations: 3),
                                        ringing: ringing, alarm: alarm)
        }
        var description: String { "level \(level) awake \(awake) asleep \(fixed)+\(rate)/h hours \(hours) ringing \(ringing)" }
    }

    static let scenarios = zip(Gen.double(in: 0...100), Gen.double(in: 1...40), Gen.double(in: 0...0.9), Gen.double(in: 0...3),
                               Gen.double(in: 0...14), Gen.double(in: 0...1800))
        .map { Scenario(level: $0.0, awake: $0.1, rate: $0.2, fixed: $0.3, hours: $0.4, ringing: $0.5) }

    @Test("never after the alarm, never before now; now exactly when sleeping now is not enough; none exactly when awake is safe")
    func kinds() async {
        await propertyCheck(count: 1000, input: Self.scenarios) { s in
            let d = s.deadline()
            #expect(d.kind != .unknown, "\(s)")
            #expect((d.kind == .none) == (d.awake?.risk == .safe), "\(s)")
            #expect((d.kind == .now) == (d.awake?.risk != .safe && d.asleepNow?.risk != .safe), "\(s)")
            if d.kind == .at, let at = d.deadline {
                #expect(at >= Self.now, "\(s)")
                #expect(at < s.alarm, "\(s)")
            }
            #expect((d.kind == .at) == (d.deadline != nil), "\(s)")
        }
    }

    @Test("asleep by the deadline is safe, and a minute past it is not (the predictor, re-asked at that moment)")
    func boundaryOfEveryDeadline() async {
        await propertyCheck(count: 500, input: Self.scenarios) { s in
            guard case .at = s.deadline().kind, let at = s.deadline().deadline else { return }
            func asked(_ moment: Date) -> AlarmDeadline {
                let spent = s.awake * moment.timeIntervalSince(Self.now) / 3600
                return AlarmDeadlineTests.deadline(max(0, s.level - spent), awake: s.awake, asleep: s.asleep, ringing: s.ringing,
                                                   alarm: s.alarm, now: moment)
            }
            #expect(asked(at).asleepNow?.risk == .safe, "\(s)")
            let late = at.addingTimeInterval(60)
            if late < s.alarm {
                #expect(asked(late).asleepNow?.risk != .safe, "\(s)")
            }
        }
    }

    @Test("monotone: more battery never brings the deadline earlier")
    func monotoneInLevel() async {
        await propertyCheck(count: 500, input: Self.scenarios, Gen.double(in: 0...100)) { s, other in
            let low = s.deadline(level: min(s.level, other))
            let high = s.deadline(level: max(s.level, other))
            #expect(Self.rank(low) <= Self.rank(high), "\(s) other \(other)")
        }
    }

    @Test("monotone: a faster drain awake never brings the deadline later")
    func monotoneInAwakeDrain() async {
        await propertyCheck(count: 500, input: Self.scenarios, Gen.double(in: 1...40)) { s, other in
            let slow = s.deadline(awake: min(s.awake, other))
            let fast = s.deadline(awake: max(s.awake, other))
            #expect(Self.rank(fast) <= Self.rank(slow), "\(s) other \(other)")
        }
    }

    @Test("monotone: a costlier sleep (its rate or its fixed part) never brings the deadline later")
    func monotoneInSleepDrain() async {
        await propertyCheck(count: 500, input: Self.scenarios, Gen.double(in: 0...0.9), Gen.double(in: 0...3)) { s, rate, fixed in
            let cheapRate = s.deadline(rate: min(s.rate, rate))
            let dearRate = s.deadline(rate: max(s.rate, rate))
            #expect(Self.rank(dearRate) <= Self.rank(cheapRate), "\(s) rate \(rate)")
            let cheapFixed = s.deadline(fixed: min(s.fixed, fixed))
            let dearFixed = s.deadline(fixed: max(s.fixed, fixed))
            #expect(Self.rank(dearFixed) <= Self.rank(cheapFixed), "\(s) fixed \(fixed)")
        }
    }
}
