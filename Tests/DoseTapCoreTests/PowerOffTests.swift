import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// UPower's PercentageAction read as UPower reads it, and the level counting as empty in predictions.
@Suite("Power-off level (UPower's PercentageAction)")
struct PowerOffTests {
    typealias File = UPowerConfiguration.File

    static func parse(_ main: String?, _ dropIns: [(String, String)] = []) -> UPowerConfiguration.Result {
        UPowerConfiguration.parse(main: main.map { File(name: "UPower.conf", text: $0) },
                                  dropIns: dropIns.map { File(name: $0.0, text: $0.1) })
    }

    @Test("no files: UPower's default 2 %, by percentage, no action named")
    func missing() {
        let r = Self.parse(nil)
        #expect(r.policy == PowerOffPolicy(percentage: 2))
        #expect(r.policy == .upowerDefault)
        #expect(r.notes.isEmpty)
    }

    @Test("the main file: PercentageAction and CriticalPowerAction; Debian's shipped file reads as 2 % hybrid sleep")
    func mainFile() {
        let r = Self.parse("# comment\n[UPower]\nPercentageLow=20\nPercentageCritical=5\nPercentageAction=3\nCriticalPowerAction=PowerOff\n")
        #expect(r.policy == PowerOffPolicy(percentage: 3, action: .powerOff))
        #expect(r.notes.isEmpty)
        let debian = Self.parse("[UPower]\nUsePercentageForPolicy=true\nPercentageLow=20\nPercentageCritical=5\nPercentageAction=2\nCriticalPowerAction=HybridSleep\n")
        #expect(debian.policy == PowerOffPolicy(percentage: 2, action: .hybridSleep))
        // A file without CriticalPowerAction: UPower's default action.
        #expect(Self.parse("[UPower]\n").policy.action == .hybridSleep)
    }

    @Test("decimals as UPower 1.90 writes them; spaces around = and the value")
    func decimals() {
        #expect(Self.parse("[UPower]\nPercentageAction = 2.5  \n").policy.percentage == 2.5)
        #expect(Self.parse("[UPower]\n  PercentageAction=4.0\r\n").policy.percentage == 4)
    }

    @Test("keys of other groups and localized keys do not count")
    func otherGroups() {
        let r = Self.parse("PercentageAction=4\n[Other]\nPercentageAction=4\n[UPower]\nPercentageAction[fr]=4\n")
        #expect(r.policy.percentage == 2)
    }

    @Test("drop-ins override the main file key by key, in name order; UPower's upstream example gives 7.5")
    func dropIns() {
        let main = "[UPower]\nPercentageLow=20.0\nPercentageCritical=5.0\nPercentageAction=2.0\nCriticalPowerAction=Hibernate\n"
        let r = Self.parse(main, [
            ("99-change-percentages-local.conf", "[UPower]\nPercentageAction=7.5\n"),
            ("70-change-percentages.conf", "[UPower]\nPercentageLow=15.0\nPercentageCritical=10.0\nPercentageAction=5.0\n"),
        ])
        #expect(r.policy == PowerOffPolicy(percentage: 7.5, action: .hibernate))
        #expect(r.notes.isEmpty)
        // Only the main file's value when the drop-in does not set the key.
        #expect(Self.parse("[UPower]\nPercentageAction=3\n", [("10-x.conf", "[UPower]\nCriticalPowerAction=PowerOff\n")]).policy
            == PowerOffPolicy(percentage: 3, action: .powerOff))
        // A drop-in alone (no main file) is read too.
        #expect(Self.parse(nil, [("50-a.conf", "[UPower]\nPercentageAction=4\n")]).policy.percentage == 4)
    }

    @Test("drop-ins UPower would skip are skipped here, with a note", arguments: [
        "0000-upower-abcd1234.conf", "001-upower-@bcd.config", "5-x.conf", "ab-x.conf", "50-x.conf.bak", "50-x y.conf", "50-é.conf",
    ])
    func dropInNames(name: String) {
        #expect(!UPowerConfiguration.isDropInName(name))
        let r = Self.parse("[UPower]\nPercentageAction=3\n", [(name, "[UPower]\nPercentageAction=4\n")])
        #expect(r.policy.percentage == 3)
        #expect(r.notes.count == 1)
    }

    @Test("drop-in names UPower reads", arguments: ["01-upower-example.conf", "02-upower-test-123.conf", "03-upower-1a2b-3c4D__.conf", "99-.conf"])
    func goodNames(name: String) {
        #expect(UPowerConfiguration.isDropInName(name))
    }

    @Test("hostile values are ignored with a note and the default kept", arguments: [
        "abc", "", "nan", "NaN", "inf", "-infinity", "-1", "-0.5", "0x2", "1e1", "２", "٣", "2%", "2,5", "2.", ".5", "1.2.3",
        String(repeating: "9", count: 400),
    ])
    func hostile(value: String) {
        let r = Self.parse("[UPower]\nPercentageAction=\(value)\n")
        #expect(r.policy.percentage == 2, "\(value)")
        #expect(r.notes.count == 1, "\(value): \(r.notes)")
    }

    @Test("100 or more, or not descending: UPower's defaults 20, 5, 2 for all three", arguments: [
        ("PercentageAction=100", 2.0), ("PercentageAction=250", 2.0), ("PercentageAction=10", 2.0), ("PercentageAction=5", 2.0),
        ("PercentageLow=100\nPercentageCritical=10\nPercentageAction=7", 2.0),
        ("PercentageLow=30\nPercentageCritical=20\nPercentageAction=10", 10.0),
        ("PercentageAction=4.99", 4.99), ("PercentageAction=0", 0.0),
    ])
    func descending(lines: String, expected: Double) {
        let r = Self.parse("[UPower]\n\(lines)\n")
        #expect(r.policy.percentage == expected)
        #expect(r.notes.count == (expected == 2 ? 1 : 0), "\(r.notes)")
    }

    @Test("a key set twice in one file: the last counts (GLib's key files), noted")
    func duplicates() {
        let r = Self.parse("[UPower]\nPercentageAction=3\nPercentageAction=4\n")
        #expect(r.policy.percentage == 4)
        #expect(r.notes.count == 1)
        // Twice with a bad last value: the bad one is ignored as if not written, so the first counts.
        #expect(Self.parse("[UPower]\nPercentageAction=3\nPercentageAction=x\n").policy.percentage == 3)
        // The same across files: a bad drop-in value leaves the main file's.
        #expect(Self.parse("[UPower]\nPercentageAction=3\n", [("50-x.conf", "[UPower]\nPercentageAction=-1\n")]).policy.percentage == 3)
    }

    @Test("garbage lines are ignored with a note; the rest of the file still counts")
    func garbageLines() {
        let r = Self.parse("[UPower\nthis is not a key\n[UPower]\n\u{0}\u{1b}[2J\nPercentageAction=3\n")
        #expect(r.policy.percentage == 3)
        #expect(r.notes.count == 3, "\(r.notes)")
    }

    @Test("UsePercentageForPolicy=false: UPower acts on TimeAction seconds left; a bad value keeps true")
    func timePolicy() {
        let r = Self.parse("[UPower]\nUsePercentageForPolicy=false\nTimeAction=360\nTimeCritical=600\n")
        #expect(r.policy.timeLeftSeconds == 360)
        // 360 s at 10 %/h is 1 %.
        #expect(r.policy.level(drainPercentPerHour: 10) == 1)
        // No drain: UPower has no time estimate and decides by percentage.
        #expect(r.policy.level(drainPercentPerHour: 0) == 2)
        #expect(Self.parse("[UPower]\nUsePercentageForPolicy=false\n").policy.timeLeftSeconds == 120)
        #expect(Self.parse("[UPower]\nUsePercentageForPolicy=true\nTimeAction=360\n").policy.timeLeftSeconds == nil)
        let bad = Self.parse("[UPower]\nUsePercentageForPolicy=maybe\n")
        #expect(bad.policy.timeLeftSeconds == nil)
        #expect(bad.notes.count == 1)
        #expect(Self.parse("[UPower]\nUsePercentageForPolicy=false\nTimeAction=400\n").policy.timeLeftSeconds == 120)
    }

    @Test("an unknown CriticalPowerAction is noted; the level still counts")
    func unknownAction() {
        let r = Self.parse("[UPower]\nCriticalPowerAction=Explode\nPercentageAction=3\n")
        #expect(r.policy.percentage == 3)
        #expect(r.policy.action == .hybridSleep)
        #expect(r.notes.count == 1)
    }

    @Test("the fact reads with the action's verb and at most one decimal")
    func fact() {
        #expect(PowerOffPolicy.upowerDefault.fact(level: 2) == "This machine powers itself off at 2%.")
        #expect(PowerOffPolicy(percentage: 7.5, action: .hibernate).fact(level: 7.5) == "This machine hibernates at 7.5%.")
        #expect(PowerOffPolicy(percentage: 2, action: .hybridSleep).fact(level: 2) == "This machine goes into hybrid sleep at 2%.")
        #expect(PowerOffPolicy(percentage: 2, action: .suspend).fact(level: 0.1666) == "This machine suspends itself at 0.2%.")
        #expect(PowerOffPolicy(percentage: 2, action: .powerOff).fact(level: 3) == "This machine powers itself off at 3%.")
    }

    // MARK: predictions at the action level

    static func predict(_ predicted: Double, powerOff: Double?) throws -> RiskPrediction {
        try RiskPredictor.predict(RiskInput(level: predicted, drainPercentPerHour: 0, hours: 3, charging: false), powerOffLevel: powerOff)
    }

    @Test("at or below the power-off level: critical, and it says so; just above: the usual tiers", arguments: [
        // (predicted, power-off level, risk, flagged)
        (2.0, 2.0, BatteryRisk.critical, true), (2.99, 2.0, .critical, true), (3.0, 2.0, .critical, false),
        (0.0, 2.0, .critical, true),
        (10.0, 10.0, .critical, true), (10.99, 10.0, .critical, true), (11.0, 10.0, .warning, false),
        (7.0, 7.5, .critical, true), (7.99, 7.5, .critical, true), (8.0, 7.5, .warning, false),
        (25.0, 25.0, .critical, true), (26.0, 25.0, .safe, false),
        (0.0, 0.0, .critical, false), (21.0, 2.0, .safe, false), (6.0, 2.0, .warning, false),
    ])
    func actionLevel(predicted: Double, level: Double, risk: BatteryRisk, flagged: Bool) throws {
        let p = try Self.predict(predicted, powerOff: level)
        #expect(p.risk == risk)
        #expect((p.powerOffLevel != nil) == flagged)
        let nudge = Nudge.forPrediction(p, policy: PowerOffPolicy(percentage: level))
        #expect((nudge?.powerOff != nil) == flagged)
        if flagged { #expect(nudge?.powerOff == "This machine powers itself off at \(PowerOffPolicy.percentText(level))%.") }
    }

    @Test("charging is safe whatever the power-off level")
    func charging() throws {
        let p = try RiskPredictor.predict(RiskInput(level: 1, drainPercentPerHour: 5, hours: 3, charging: true), powerOffLevel: 2)
        #expect(p.risk == .safe)
        #expect(p.powerOffLevel == nil)
    }

    @Test("the nudge keeps the seed's copy for every tier; the fact is an extra line")
    func copy() throws {
        let critical = try #require(Nudge.forPrediction(try Self.predict(1, powerOff: 2)))
        #expect(critical.header == "Alarm at Risk")
        #expect(critical.headline == "Estimated battery at alarm: 1%")
        #expect(critical.action == "Plug in now.")
        #expect(critical.powerOff == "This machine powers itself off at 2%.")
        #expect(critical.fullText == "Estimated battery at alarm: 1% — Plug in now. This machine powers itself off at 2%.")
        let criticalAbove = try #require(Nudge.forPrediction(try Self.predict(4, powerOff: 2)))
        #expect(criticalAbove.severity == .critical)
        #expect(criticalAbove.powerOff == nil)
        #expect(criticalAbove.fullText == criticalAbove.oneLine)
        let warning = try #require(Nudge.forPrediction(try Self.predict(12, powerOff: 2)))
        #expect(warning.header == "Low Battery Warning")
        #expect(warning.headline == "Estimated battery at alarm: 12%")
        #expect(warning.action == "Consider plugging in.")
        #expect(warning.powerOff == nil)
        #expect(Nudge.forPrediction(try Self.predict(21, powerOff: 2)) == nil)
        // A power-off level above the warning tier turns a would-be warning into critical, with the fact.
        let raised = try #require(Nudge.forPrediction(try Self.predict(9, powerOff: 10), policy: PowerOffPolicy(percentage: 10, action: .powerOff)))
        #expect(raised.header == "Alarm at Risk")
        #expect(raised.action == "Plug in now.")
        #expect(raised.powerOff == "This machine powers itself off at 10%.")
    }

    @Test("property: a nudge exists iff predicted ≤ the warning ceiling or ≤ the power-off level; the fact iff ≤ the power-off level")
    func nudgeIff() async {
        await propertyCheck(count: 1000, input: Gen.int(in: 0...10_000), Gen.int(in: 0...2000), Gen.int(in: 0...240), Gen.int(in: 0...999)) {
            levelHundredths, drainHundredths, hoursTenths, powerOffTenths in
            let input = RiskInput(level: Double(levelHundredths) / 100, drainPercentPerHour: Double(drainHundredths) / 100,
                                  hours: Double(hoursTenths) / 10, charging: false)
            let powerOff = Double(powerOffTenths) / 10
            guard let p = try? RiskPredictor.predict(input, powerOffLevel: powerOff) else {
                Issue.record("valid input refused")
                return
            }
            let nudge = Nudge.forPrediction(p, policy: PowerOffPolicy(percentage: powerOff))
            let atOrBelowPowerOff = powerOff > 0 && Double(p.predictedLevel) <= powerOff
            #expect((nudge != nil) == (p.predictedLevel <= RiskPredictor.warningCeiling || atOrBelowPowerOff))
            #expect((nudge?.powerOff != nil) == atOrBelowPowerOff)
            if atOrBelowPowerOff { #expect(p.risk == .critical) }
            // Never lower than the seed's own tier.
            let seed = RiskPredictor.classify(wholePercent: p.predictedLevel)
            #expect(rank(p.risk) >= rank(seed))
        }
    }

    func rank(_ risk: BatteryRisk) -> Int { risk == .safe ? 0 : risk == .warning ? 1 : 2 }

    @Test("the forecast counts the power-off level: 3 % predicted with PercentageAction 5 is critical with the fact")
    func forecast() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let state = PowerState(raw: [.battery(capacity: 13, energyNowWh: 6.5, energyFullWh: 50, powerW: 0), .mains(online: false)])
        let drain = DrainEstimate(percentPerHour: 2, source: .history)
        let at = now.addingTimeInterval(5 * 3600) // 13 − 2 × 5 = 3
        let plain = BatteryForecast.make(state: state, drain: drain, at: at, now: now, powerOff: PowerOffPolicy(percentage: 2))
        #expect(plain.predictedLevel == 3)
        #expect(plain.risk == .critical)
        #expect(plain.nudge?.powerOff == nil)
        let five = BatteryForecast.make(state: state, drain: drain, at: at, now: now, powerOff: PowerOffPolicy(percentage: 5, action: .powerOff))
        #expect(five.nudge?.powerOff == "This machine powers itself off at 5%.")
        // The reminder's nudge counts it the same way.
        let reminder = BatteryForecast.make(state: state, drain: drain, at: at, now: now, momentName: "reminder",
                                            powerOff: PowerOffPolicy(percentage: 5))
        #expect(reminder.nudge?.headline == "Estimated battery at reminder: 3%")
        #expect(reminder.nudge?.powerOff == "This machine powers itself off at 5%.")
        // Unknown drain: no risk, no nudge, a reason.
        let unknown = BatteryForecast.make(state: state, drain: DrainEstimate(percentPerHour: nil, source: .unknown), at: at, now: now)
        #expect(unknown.risk == nil)
        #expect(unknown.nudge == nil)
        #expect(unknown.reason?.contains("not known yet") == true)
    }
}
