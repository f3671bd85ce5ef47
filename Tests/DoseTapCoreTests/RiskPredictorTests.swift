import DoseTapCore
import DoseTapTesting
import PropertyBased
import Testing

@Suite("RiskPredictor")
struct RiskPredictorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var level: Double, drain: Double, hours: Double, charging: Bool
        var risk: BatteryRisk, predicted: Int
        var testDescription: String { "\(level)% \(drain)%/h \(hours)h charging=\(charging) → \(risk) \(predicted)%" }
    }

    @Test("the seed's acceptance cases", arguments: [
        Case(level: 34, drain: 8, hours: 6, charging: false, risk: .critical, predicted: 0),
        Case(level: 34, drain: 8, hours: 6, charging: true, risk: .safe, predicted: 34),
        Case(level: 80, drain: 3, hours: 8, charging: false, risk: .safe, predicted: 56),
        Case(level: 55, drain: 6, hours: 7, charging: false, risk: .warning, predicted: 13),
        Case(level: 45, drain: 5, hours: 8, charging: false, risk: .critical, predicted: 5),
    ])
    func seed(_ c: Case) throws {
        let p = try RiskPredictor.predict(RiskInput(level: c.level, drainPercentPerHour: c.drain, hours: c.hours, charging: c.charging))
        #expect(p.risk == c.risk)
        #expect(p.predictedLevel == c.predicted)
    }

    @Test("each threshold on both sides, rounding down", arguments: [
        (21.0, BatteryRisk.safe, 21), (20.99, .warning, 20), (20.0, .warning, 20),
        (6.0, .warning, 6), (5.99, .critical, 5), (5.0, .critical, 5), (0.4, .critical, 0), (0.0, .critical, 0),
        (100.0, .safe, 100),
    ])
    func thresholds(predicted: Double, risk: BatteryRisk, whole: Int) throws {
        // level − 0 × hours = level: the predicted level is exactly the input.
        let p = try RiskPredictor.predict(RiskInput(level: predicted, drainPercentPerHour: 0, hours: 5, charging: false))
        #expect(p.risk == risk)
        #expect(p.predictedLevel == whole)
    }

    @Test("floating-point noise does not push a whole percent down")
    func noise() throws {
        // 29 − 0.3 × 30 is 19.999999999999996 in binary floating point.
        let p = try RiskPredictor.predict(RiskInput(level: 29, drainPercentPerHour: 0.3, hours: 30, charging: false))
        #expect(p.predictedLevel == 20)
        #expect(p.risk == .warning)
    }

    @Test("the prediction is clamped at 0")
    func clamp() throws {
        let p = try RiskPredictor.predict(RiskInput(level: 10, drainPercentPerHour: 50, hours: 10, charging: false))
        #expect(p.predictedLevel == 0)
        #expect(p.risk == .critical)
    }

    @Test("invalid inputs are refused with a reason", arguments: [
        (150.0, 1.0, 1.0, RiskInputError.level(150)),
        (-0.5, 1.0, 1.0, .level(-0.5)),
        (100.01, 1.0, 1.0, .level(100.01)),
        (50, -1, 1, .drain(-1)),
        (50, .infinity, 1, .drain(.infinity)),
        (50, 1, -0.1, .hours(-0.1)),
        (50, 1, .infinity, .hours(.infinity)),
    ])
    func invalid(level: Double, drain: Double, hours: Double, error: RiskInputError) {
        #expect(throws: error) {
            try RiskPredictor.predict(RiskInput(level: level, drainPercentPerHour: drain, hours: hours, charging: false))
        }
    }

    @Test("NaN anywhere is refused")
    func nan() {
        for input in [RiskInput(level: .nan, drainPercentPerHour: 1, hours: 1, charging: false),
                      RiskInput(level: 50, drainPercentPerHour: .nan, hours: 1, charging: false),
                      RiskInput(level: 50, drainPercentPerHour: 1, hours: .nan, charging: true)] {
            #expect(throws: RiskInputError.self) { try RiskPredictor.predict(input) }
        }
        #expect(RiskInputError.hours(.nan).description == "hours must be a finite number of at least 0 (got NaN)")
        #expect(RiskInputError.level(150).description == "level must be a finite percentage between 0 and 100 (got 150)")
    }

    @Test("the edges of the valid ranges are accepted")
    func edges() throws {
        #expect(try RiskPredictor.predict(RiskInput(level: 0, drainPercentPerHour: 0, hours: 0, charging: false)).risk == .critical)
        #expect(try RiskPredictor.predict(RiskInput(level: 100, drainPercentPerHour: 0, hours: 0, charging: false)).risk == .safe)
    }

    @Test("property: the prediction stays within 0…level and more time never lowers the risk")
    func monotonic() async {
        let levels = Gen.double(in: 0...100)
        let drains = Gen.double(in: 0...400)
        let hours = Gen.double(in: 0...48)
        await propertyCheck(count: 500, input: levels, drains, hours, hours) { level, drain, h1, h2 in
            let early = try! RiskPredictor.predict(RiskInput(level: level, drainPercentPerHour: drain, hours: min(h1, h2), charging: false))
            let late = try! RiskPredictor.predict(RiskInput(level: level, drainPercentPerHour: drain, hours: max(h1, h2), charging: false))
            #expect(early.predictedLevel >= 0 && Double(early.predictedLevel) <= level + 1e-6)
            #expect(late.predictedLevel <= early.predictedLevel)
            #expect(severity(late.risk) >= severity(early.risk))
            let plugged = try! RiskPredictor.predict(RiskInput(level: level, drainPercentPerHour: drain, hours: h1, charging: true))
            #expect(plugged.risk == .safe)
        }
    }

    func severity(_ r: BatteryRisk) -> Int { r == .safe ? 0 : r == .warning ? 1 : 2 }
}

@Suite("Nudge")
struct NudgeTests {
    @Test("critical copy")
    func critical() {
        let n = Nudge.forPrediction(RiskPrediction(risk: .critical, predictedLevel: 4))
        #expect(n == Nudge(severity: .critical, header: "Alarm at Risk", headline: "Estimated battery at alarm: 4%",
                           action: "Plug in now.", color: .red))
    }

    @Test("warning copy")
    func warning() {
        let n = Nudge.forPrediction(RiskPrediction(risk: .warning, predictedLevel: 13))
        #expect(n == Nudge(severity: .warning, header: "Low Battery Warning", headline: "Estimated battery at alarm: 13%",
                           action: "Consider plugging in.", color: .orange))
    }

    @Test("safe has no nudge at all")
    func safe() {
        #expect(Nudge.forPrediction(RiskPrediction(risk: .safe, predictedLevel: 56)) == nil)
    }

    @Test("the moment is named in the headline")
    func moment() {
        let n = Nudge.forPrediction(RiskPrediction(risk: .critical, predictedLevel: 4), moment: "reminder")
        #expect(n?.oneLine == "Estimated battery at reminder: 4% — Plug in now.")
    }
}
