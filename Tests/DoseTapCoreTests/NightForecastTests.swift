import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// The forecast of the night the machine will really have (#24): its drain asleep learned from its own
/// suspends, its evenings, and the split of the hours until the alarm into awake, asleep and ringing.
@Suite("Night forecast: sleep drain, evenings, awake and asleep")
struct NightForecastTests {
    static let zone = TimeZone(identifier: "America/Los_Angeles")!
    static func at(_ text: String) -> Date { localDate(text, zone) }

    static func episode(_ start: String, hours: Double, from: Double, to: Double, asleep: Double? = nil,
                        onAC: Bool = false, resolution: Double = 0.1, kind: SleepEpisode.Kind = .suspend) -> SleepEpisode {
        let s = at(start)
        return SleepEpisode(start: s, end: s.addingTimeInterval(hours * 3600), asleepSeconds: asleep, levelBefore: from,
                            levelAfter: to, onACBefore: onAC, onACAfter: onAC, resolution: resolution, kind: kind)
    }

    static func battery(_ level: Double, onAC: Bool = false) -> PowerState {
        PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
            "type": "Battery", "present": "1", "status": onAC ? "Charging" : "Discharging",
            "energy_now": String(Int(level * 1_000_000)), "energy_full": "100000000",
        ])])
    }

    // MARK: learning the drain asleep

    @Test("until three suspends are learned the drain asleep is the stated prior, 3 %/h; then it is learned")
    func priorThenLearned() {
        var model = SleepDrainModel()
        #expect(model.estimate == SleepDrainEstimate(percentPerHour: 3, learned: false, observations: 0))
        model.learn(Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 78))
        model.learn(Self.episode("2026-11-02 23:00:00", hours: 8, from: 80, to: 78))
        #expect(model.estimate.learned == false, "two are not enough")
        #expect(model.estimate.percentPerHour == 3)
        model.learn(Self.episode("2026-11-03 23:00:00", hours: 8, from: 80, to: 78))
        let learned = model.estimate
        #expect(learned.learned)
        #expect(abs(learned.drop(hours: 8) - 2) < 1e-9, "three identical nights of 2 points: a night costs 2 points")
    }

    @Test("a line through naps and nights: the fixed cost of a suspend is not spread over a whole night")
    func fixedAndRate() {
        var model = SleepDrainModel()
        // 1 point per sleep plus 0.1 %/h, as a deep-sleep laptop shows it.
        for (i, hours) in [1.0, 2, 8, 10, 0.75, 9, 3].enumerated() {
            model.learn(Self.episode("2026-11-0\(i + 1) 23:00:00", hours: hours, from: 80, to: 80 - (1 + 0.1 * hours)))
        }
        let e = model.estimate
        #expect(abs(e.percentPerHour - 0.1) < 1e-6)
        #expect(abs(e.fixed - 1) < 1e-6)
        #expect(abs(e.drop(hours: 10) - 2) < 1e-6, "a 10 h night costs 2 points, not 10 × the naps' 1.1 %/h")
        #expect(e.drop(hours: 0) == 0)
    }

    @Test("what a suspend cannot teach: on AC, hibernate, too short, no level change, a rise, an absurd drop, NaN")
    func ignored() {
        let cases: [(SleepEpisode, String)] = [
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 78, onAC: true), "on external power"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 78, kind: .hibernate), "hibernate"),
            (Self.episode("2026-11-01 23:00:00", hours: 0.49, from: 80, to: 78), "shorter than 30 minutes"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 80), "no level change"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 79.5, resolution: 1), "no level change"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 70, to: 75), "rose"),
            (Self.episode("2026-11-01 23:00:00", hours: 1, from: 80, to: 40), "no suspended machine"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: .nan, to: 40), "not a percentage"),
            (Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 140), "not a percentage"),
        ]
        for (episode, why) in cases {
            var model = SleepDrainModel()
            guard case .ignored(let reason) = model.learn(episode) else {
                Issue.record("learned from \(episode)")
                continue
            }
            #expect(reason.contains(why), "\(reason)")
            #expect(model.observations.isEmpty)
        }
    }

    @Test("both sides of each boundary: 30 minutes asleep, a drop of one resolution step, a rise of one point")
    func boundaries() {
        var model = SleepDrainModel()
        #expect(model.learn(Self.episode("2026-11-01 23:00:00", hours: 0.5, from: 80, to: 79)) == .learned(percentPerHour: 2))
        #expect(model.learn(Self.episode("2026-11-01 23:00:00", hours: 0.5 - 1 / 3600, from: 80, to: 79)) != .learned(percentPerHour: 2))
        #expect(model.learn(Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 79, resolution: 1)) == .learned(percentPerHour: 0.125))
        if case .learned = model.learn(Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 79.01, resolution: 1)) {
            Issue.record("a drop under the gauge's step is not a drain")
        }
        // A rise of 1 point (noise) is no drop; of more, a recalibration: neither is learned.
        if case .learned = model.learn(Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 81)) { Issue.record("rise learned") }
    }

    @Test("a clock step during the sleep: the machine's own count of suspended time wins over the wall clock")
    func clockStep() {
        var model = SleepDrainModel()
        // The wall clock says 1 h (it was set back 7 h during the night); the machine slept 8 h.
        let verdict = model.learn(Self.episode("2026-11-01 23:00:00", hours: 1, from: 80, to: 78, asleep: 8 * 3600))
        #expect(verdict == .learned(percentPerHour: 0.25))
        // Backwards wall clock and no count: unknown, not learned.
        let back = SleepEpisode(start: Self.at("2026-11-02 23:00:00"), end: Self.at("2026-11-02 22:00:00"), levelBefore: 80, levelAfter: 78)
        guard case .ignored(let why) = model.learn(back) else { Issue.record("learned a negative sleep"); return }
        #expect(why.contains("clock went backwards"))
    }

    @Test("a recalibration jump among normal nights does not move the learned drain much (robust fit)")
    func recalibrationOutlier() {
        var model = SleepDrainModel()
        for day in 1...9 { model.learn(Self.episode("2026-11-0\(day) 23:00:00", hours: 8, from: 80, to: 78.4)) }
        let before = model.estimate.drop(hours: 8)
        model.learn(Self.episode("2026-11-10 23:00:00", hours: 8, from: 80, to: 55)) // the gauge fell 25 points at once
        #expect(abs(model.estimate.drop(hours: 8) - before) < 0.5)
    }

    @Test("what was learned survives a round trip through JSON (the store keeps it as such)")
    func codable() throws {
        var learning = NightLearning()
        learning.slept(Self.episode("2026-11-01 23:00:00", hours: 8, from: 80, to: 78), in: Self.zone)
        learning.habits.awake(at: Self.at("2026-11-02 21:00:00"), in: Self.zone)
        learning.conditions = NightConditions(canWake: false, sleepBlockedBy: ["player"])
        let data = try JSONEncoder().encode(learning)
        #expect(try JSONDecoder().decode(NightLearning.self, from: data) == learning)
    }

    // MARK: the evenings

    /// Nights on which the machine was awake from 19:00 and slept at `onset` until 07:00.
    static func habits(onsets: [String?], firstNight: Int = 1) -> SleepHabits {
        var habits = SleepHabits()
        for (i, onset) in onsets.enumerated() {
            let day = String(format: "2026-10-%02d", firstNight + i)
            let next = String(format: "2026-10-%02d", firstNight + i + 1)
            habits.awake(at: at("\(day) 19:00:00"), in: zone)
            if let onset {
                let start = onset < "12:00" ? at("\(next) \(onset):00") : at("\(day) \(onset):00")
                habits.awake(at: start, since: at("\(day) 19:00:00"), in: zone)
                habits.slept(from: start, hours: at("\(next) 07:00:00").timeIntervalSince(start) / 3600, in: zone)
                habits.awake(at: at("\(next) 07:00:00"), in: zone)
            } else {
                habits.awake(at: at("\(next) 07:00:00"), since: at("\(day) 19:00:00"), in: zone)
            }
        }
        return habits
    }

    @Test("fewer than seven nights seen: awake (it has not shown yet that it sleeps); seven: it sleeps")
    func minimumNights() {
        let now = Self.at("2026-10-20 21:00:00")
        let alarm = Self.at("2026-10-21 06:30:00")
        let six = Self.habits(onsets: Array(repeating: "23:00", count: 6), firstNight: 13)
        #expect(six.plan(now: now, moment: alarm, conditions: .init(), in: Self.zone)
            == .awake(because: "6 of the 7 nights needed to learn when it sleeps"))
        let seven = Self.habits(onsets: Array(repeating: "23:00", count: 7), firstNight: 13)
        #expect(seven.plan(now: now, moment: alarm, conditions: .init(), in: Self.zone)
            == .sleeps(from: Self.at("2026-10-20 23:00:00"), because: "as on most evenings"))
    }

    @Test("a late quantile: one evening in five awake all night makes the plan awake; one in ten does not")
    func lateQuantile() {
        let now = Self.at("2026-10-20 21:00:00")
        let alarm = Self.at("2026-10-21 06:30:00")
        let someAllNight = Self.habits(onsets: ["23:00", "23:00", "23:00", nil, "23:00", "23:00", "23:00", "23:00", nil, "23:00"],
                                       firstNight: 10)
        #expect(someAllNight.plan(now: now, moment: alarm, conditions: .init(), in: Self.zone)
            == .awake(because: "on some evenings like this it stayed awake all night"))
        let rare = Self.habits(onsets: ["23:00", "23:00", "23:00", nil, "23:00", "23:00", "23:00", "23:00", "23:00", "23:00"],
                               firstNight: 10)
        #expect(rare.plan(now: now, moment: alarm, conditions: .init(), in: Self.zone)
            == .sleeps(from: Self.at("2026-10-20 23:00:00"), because: "as on most evenings"))
    }

    @Test("still awake past its usual time: the plan moves later, from the nights that were awake then")
    func laterThanUsual() {
        let onsets = ["22:30", "22:40", "22:50", "23:00", "23:05", "23:10", "23:20",
                      "00:10", "00:20", "00:30", "00:40", "00:50", "01:00", "01:10"]
        let habits = Self.habits(onsets: onsets, firstNight: 1)
        let alarm = Self.at("2026-10-21 06:30:00")
        guard case .sleeps(let early, _) = habits.plan(now: Self.at("2026-10-20 21:00:00"), moment: alarm, conditions: .init(), in: Self.zone),
              case .sleeps(let late, _) = habits.plan(now: Self.at("2026-10-20 23:40:00"), moment: alarm, conditions: .init(), in: Self.zone)
        else { Issue.record("no sleep planned"); return }
        // At 21:00 all 14 nights count; the 12th of 14 waits (more than 80% at or before it): 00:50.
        #expect(early == Self.at("2026-10-21 00:50:00"))
        // At 23:40 only the 7 nights still awake then count: 30…90 minutes more; the 6th of 7: 80 minutes.
        #expect(late == Self.at("2026-10-21 01:00:00"))
        #expect(habits.plan(now: Self.at("2026-10-21 01:30:00"), moment: alarm, conditions: .init(), in: Self.zone)
            == .awake(because: "0 of the 7 nights needed to learn when it sleeps"))
    }

    @Test("a machine that cannot wake for the alarm, or that another program keeps awake, is planned awake; going to sleep is asleep now")
    func conditions() {
        let habits = Self.habits(onsets: Array(repeating: "23:00", count: 10), firstNight: 10)
        let now = Self.at("2026-10-20 21:00:00")
        let alarm = Self.at("2026-10-21 06:30:00")
        #expect(habits.plan(now: now, moment: alarm, conditions: .init(canWake: false), in: Self.zone)
            == .awake(because: "it cannot wake itself for the alarm"))
        #expect(habits.plan(now: now, moment: alarm, conditions: .init(sleepBlockedBy: ["vlc\u{1b}[31m"]), in: Self.zone)
            == .awake(because: "vlc\\x1b[31m keeps it from sleeping"))
        #expect(habits.plan(now: now, moment: alarm, conditions: .init(goingToSleep: true), in: Self.zone)
            == .sleeps(from: now, because: "it is going to sleep now"))
        #expect(SleepHabits().plan(now: now, moment: alarm, conditions: .init(canWake: false, goingToSleep: true), in: Self.zone)
            == .awake(because: "it cannot wake itself for the alarm"), "cannot wake wins even going to sleep")
    }

    @Test("a machine that never sleeps (a Pi): every night awake, the plan stays awake")
    func neverSleeps() {
        let habits = Self.habits(onsets: Array(repeating: nil, count: 14), firstNight: 1)
        #expect(habits.nights.count == 14)
        #expect(habits.plan(now: Self.at("2026-10-15 22:00:00"), moment: Self.at("2026-10-16 06:30:00"), conditions: .init(), in: Self.zone)
            == .awake(because: "on some evenings like this it stayed awake all night"))
    }

    // MARK: the forecast

    static let learned: NightLearning = {
        var learning = NightLearning()
        for day in 1...5 { learning.slept(episode("2026-10-0\(day) 23:00:00", hours: 8, from: 80, to: 78), in: zone) }
        return learning
    }()

    @Test("the seed's cases are unchanged when the machine stays awake; asleep, 80% at 16 %/h is safe for 8 h")
    func awakeVersusAsleep() {
        let now = Self.at("2026-10-20 22:30:00")
        let alarm = now.addingTimeInterval(8 * 3600)
        let awake = BatteryForecast.make(state: Self.battery(80), drain: .init(percentPerHour: 16, source: .hardware), at: alarm, now: now)
        #expect(awake.risk == .critical)
        #expect(awake.predictedLevel == 0)
        let outlook = NightOutlook(learning: Self.learned, conditions: .init(goingToSleep: true), timeZone: Self.zone)
        let asleep = BatteryForecast.make(state: Self.battery(80), drain: .init(percentPerHour: 16, source: .hardware), at: alarm, now: now,
                                          night: outlook)
        #expect(asleep.risk == .safe)
        // 80 − 2 (the night) − 16 × 10 min (ringing) = 75.33 → 75.
        #expect(asleep.predictedLevel == 75)
        #expect(asleep.assumption?.kind == .asleep)
        #expect(asleep.nudge == nil, "safe: nothing at all")
    }

    @Test("mixed: awake until its usual time, then asleep; the nudge says the assumption beside the seed's copy")
    func mixedNudge() {
        var learning = Self.learned
        learning.habits = Self.habits(onsets: Array(repeating: "23:10", count: 10), firstNight: 10)
        let now = Self.at("2026-10-20 22:10:00")
        let alarm = Self.at("2026-10-21 06:10:00")
        let outlook = NightOutlook(learning: learning, conditions: .init(), timeZone: Self.zone)
        let f = BatteryForecast.make(state: Self.battery(30), drain: .init(percentPerHour: 12, source: .history), at: alarm, now: now,
                                     night: outlook)
        #expect(f.assumption?.kind == .mixed)
        #expect(f.assumption?.awakeHours == 1)
        // 30 − 12 × 1 h − 2 (the night, as learned) − 12 × 10 min = 14 → warning.
        #expect(f.predictedLevel == 14)
        #expect(f.risk == .warning)
        #expect(f.nudge?.header == "Low Battery Warning")
        #expect(f.nudge?.headline == "Estimated battery at alarm: 14%")
        #expect(f.nudge?.assumption == "if this machine sleeps from about 23:10 until the alarm wakes it")
        #expect(f.nudge?.fullText == "Estimated battery at alarm: 14% — Consider plugging in. Assuming: if this machine sleeps from about 23:10 until the alarm wakes it.")
    }

    @Test("caution stays: a borderline night rounds down to the higher risk (20.999 → warning; 21 → safe)")
    func borderline() {
        let now = Self.at("2026-10-20 22:30:00")
        let alarm = now.addingTimeInterval(8 * 3600)
        let outlook = NightOutlook(learning: Self.learned, conditions: .init(goingToSleep: true), timeZone: Self.zone, ringing: 0)
        let just = BatteryForecast.make(state: Self.battery(22.999), drain: .init(percentPerHour: 16, source: .hardware), at: alarm, now: now,
                                        night: outlook)
        #expect(just.predictedLevel == 20)
        #expect(just.risk == .warning)
        let safe = BatteryForecast.make(state: Self.battery(23), drain: .init(percentPerHour: 16, source: .hardware), at: alarm, now: now,
                                        night: outlook)
        #expect(safe.predictedLevel == 21)
        #expect(safe.risk == .safe)
    }

    @Test("asleep with no awake drain known yet (just resumed): forecast all the same; awake with none: unknown")
    func unknownAwakeDrain() {
        let now = Self.at("2026-10-20 22:30:00")
        let alarm = now.addingTimeInterval(8 * 3600)
        let asleep = NightOutlook(learning: Self.learned, conditions: .init(goingToSleep: true), timeZone: Self.zone)
        let f = BatteryForecast.make(state: Self.battery(50), drain: .unknown, at: alarm, now: now, night: asleep)
        #expect(f.risk == .safe)
        let awake = NightOutlook(learning: Self.learned, conditions: .init(), timeZone: Self.zone)
        let g = BatteryForecast.make(state: Self.battery(50), drain: .unknown, at: alarm, now: now, night: awake)
        #expect(g.risk == nil)
        #expect(g.reason?.contains("not known") == true)
    }

    @Test("a Pi with a capacity-only battery: learned nothing, stays awake, the awake drain is the truth")
    func piCapacityOnly() {
        let pi = PowerState(raw: [RawPowerSupply(name: "ups", attributes: ["type": "Battery", "present": "1", "status": "Discharging", "capacity": "79"])])
        let now = Self.at("2026-10-20 22:00:00")
        let outlook = NightOutlook(learning: NightLearning(), conditions: .init(), timeZone: Self.zone)
        let f = BatteryForecast.make(state: pi, drain: .init(percentPerHour: 19, source: .history), at: now.addingTimeInterval(4 * 3600),
                                     now: now, night: outlook)
        #expect(f.assumption?.kind == .awake)
        #expect(f.predictedLevel == 3)
        #expect(f.risk == .critical)
    }

    @Test("property: asleep never forecasts a lower level than awake for the same night, and charging is always safe")
    func properties() async {
        await propertyCheck(count: 300, input: Gen.double(in: 0...100), Gen.double(in: 0...40), Gen.double(in: 0...14)) { level, drain, hours in
            let now = Self.at("2026-10-20 22:30:00")
            let alarm = now.addingTimeInterval(hours * 3600)
            let state = Self.battery(level)
            let d = DrainEstimate(percentPerHour: drain, source: .hardware)
            let awake = BatteryForecast.make(state: state, drain: d, at: alarm, now: now,
                                             night: NightOutlook(learning: Self.learned, conditions: .init(), timeZone: Self.zone, ringing: 0))
            let asleep = BatteryForecast.make(state: state, drain: d, at: alarm, now: now,
                                              night: NightOutlook(learning: Self.learned, conditions: .init(goingToSleep: true),
                                                                  timeZone: Self.zone, ringing: 0))
            if drain >= SleepDrainModel.prior {
                #expect((asleep.predictedLevel ?? 0) >= (awake.predictedLevel ?? 0))
            }
            let charging = BatteryForecast.make(state: Self.battery(level, onAC: true), drain: d, at: alarm, now: now,
                                                night: NightOutlook(learning: Self.learned, conditions: .init(goingToSleep: true), timeZone: Self.zone))
            #expect(charging.risk == .safe)
        }
    }

    @Test("property: the learned drain is never negative, whatever the suspends")
    func learnedNeverNegative() async {
        await propertyCheck(count: 200, input: Gen.double(in: 0.4...30).array(of: 3...12), Gen.double(in: -5...40).array(of: 12)) { hours, drops in
            var model = SleepDrainModel()
            for (h, d) in zip(hours, drops) {
                model.learn(SleepEpisode(start: Self.at("2026-10-01 23:00:00"), end: Self.at("2026-10-01 23:00:00").addingTimeInterval(h * 3600),
                                         levelBefore: 60, levelAfter: max(0, 60 - d)))
            }
            let e = model.estimate
            #expect(e.percentPerHour >= 0)
            #expect(e.fixed >= 0)
            #expect(e.drop(hours: 8).isFinite)
        }
    }

    // MARK: the replay

    static func trace(_ rows: [(String, Double, String)], tz: String = "America/Los_Angeles") -> String {
        let zone = TimeZone(identifier: tz)!
        return "# tz=\(tz)\nt_unix,level_percent,state\n"
            + rows.map { "\(Int(localDate($0.0, zone).timeIntervalSince1970)),\($0.1),\($0.2)" }.joined(separator: "\n") + "\n"
    }

    @Test("trace: a header is required, an unknown zone is an error, bad rows are skipped and named, order restored")
    func traceParsing() throws {
        #expect(throws: BatteryTrace.ParseError.self) { try BatteryTrace.parse("1,2,discharging\n") }
        #expect(throws: BatteryTrace.ParseError.self) { try BatteryTrace.parse("# tz=Mars/Olympus\nt_unix,level_percent,state\n") }
        let t = try BatteryTrace.parse("# tz=UTC\nt_unix,level_percent,state\n20,50,discharging\n10,NaN,discharging\n5,150,full\n"
            + "10,51,discharging\n7,52\n")
        #expect(t.readings.map(\.level) == [51, 50])
        #expect(t.skipped.count == 3)
        #expect(t.skipped.first?.hasPrefix("line 4") == true)
    }

    @Test("replay: a sleep night is scored at PrepareForSleep(true); a never-sleeping machine's evening is an awake night")
    func replay() throws {
        // Four hours awake at 16 %/h from 20:00, then asleep until 08:00, then awake.
        var rows: [(String, Double, String)] = []
        var level = 95.0
        for minute in stride(from: 0, to: 60, by: 1) {
            rows.append((String(format: "2026-10-20 22:%02d:00", minute), level, "discharging"))
            level -= 16.0 / 60
        }
        rows.append(("2026-10-21 08:00:00", level - 2, "discharging"))
        let sleep = try BatteryTrace.parse(Self.trace(rows))
        let outcomes = ForecastReplay().replay(sleep).outcomes
        let dosetap = outcomes.filter { $0.method == .dosetap }
        #expect(dosetap.count == 1)
        #expect(dosetap.first?.kind == .sleep)
        #expect(dosetap.first?.assumption == .asleep)
        #expect(outcomes.first { $0.method == .awakeDrain }?.risk == .critical, "today's agent cries wolf")
        #expect(dosetap.first?.risk == .safe)

        // A Pi: awake from 21:00 to 03:00 at 16 %/h, never asleep.
        var pi: [(String, Double, String)] = []
        level = 97
        var t = Self.at("2026-10-20 21:00:00")
        while t < Self.at("2026-10-21 03:00:00") {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = Self.zone
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: t)
            pi.append((String(format: "%04d-%02d-%02d %02d:%02d:00", c.year!, c.month!, c.day!, c.hour!, c.minute!), level, "discharging"))
            level -= 16.0 / 60
            t.addTimeInterval(60)
        }
        let awake = ForecastReplay().replay(try BatteryTrace.parse(Self.trace(pi))).outcomes
        let mine = awake.filter { $0.method == .dosetap }
        #expect(mine.count == 1)
        #expect(mine.first?.kind == .awake)
        #expect(mine.first?.assumption == .awake)
        #expect(mine.first?.risk == .critical, "the Pi really runs down: the awake drain is the truth")
        #expect((mine.first?.actual ?? 100) <= 5)
        let scores = ForecastReplay.scores(awake)
        #expect(scores[.dosetap]?.all.missedCritical == 0)
    }
}
