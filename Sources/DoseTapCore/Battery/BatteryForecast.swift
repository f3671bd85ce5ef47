import Foundation

/// Whether the battery will last until a moment, with everything a person needs to judge it.
public struct BatteryForecast: Sendable, Equatable {
    public var at: Date
    public var hoursUntil: Double
    public var level: Double?
    public var drain: DrainEstimate
    public var charging: Bool
    /// nil when unknown (the drain is not known yet).
    public var risk: BatteryRisk?
    public var predictedLevel: Int?
    public var nudge: Nudge?
    /// Why the forecast is incomplete or trivially safe, or nil.
    public var reason: String?
    /// The night the number assumes (awake, asleep, or awake then asleep) and the drains it used; nil when
    /// no drain was applied (on AC, no battery, level unknown).
    public var assumption: NightAssumption?
    /// For an alarm forecast with the machine's nights (`BatteryStatus.alarmForecast`, #52): whether its nudge is
    /// shown now, by the deadline; `nudge` is then the decision's. nil for the seed's model alone or another moment.
    public var decision: NudgeDecision?

    /// - Parameters:
    ///   - momentName: how the headline names the moment ("alarm", "reminder").
    ///   - powerOff: the machine's power-off level (UPower's `PercentageAction`, read by the caller): a
    ///     prediction at or below it is critical, and the nudge says so.
    ///   - night: what the machine does until the moment (awake, asleep, both) and its drain asleep; nil: it
    ///     stays awake, at `drain`, the seed's model.
    public static func make(state: PowerState, drain: DrainEstimate, at moment: Date, now: Date,
                            momentName: String = "alarm", powerOff: PowerOffPolicy = .upowerDefault,
                            night: NightOutlook? = nil) -> BatteryForecast {
        let hours = max(0, moment.timeIntervalSince(now) / 3600)
        var forecast = BatteryForecast(at: moment, hoursUntil: hours, level: state.level, drain: drain,
                                       charging: state.onAC, risk: nil, predictedLevel: nil, nudge: nil,
                                       reason: nil)
        guard state.present else {
            forecast.risk = .safe
            forecast.reason = "no system battery: this machine runs on external power"
            return forecast
        }
        guard let level = state.level else {
            forecast.reason = "the battery does not report its level"
            return forecast
        }
        if state.onAC {
            let input = RiskInput(level: level, drainPercentPerHour: 0, hours: hours, charging: true)
            guard let prediction = try? RiskPredictor.predict(input) else {
                forecast.reason = "the battery readings are out of range"
                return forecast
            }
            forecast.risk = prediction.risk
            forecast.predictedLevel = prediction.predictedLevel
            return forecast
        }
        let assumption = night?.assume(now: now, moment: moment, awakeDrain: drain.percentPerHour,
                                       wakesForIt: momentName == "alarm")
            ?? NightAssumption(kind: .awake, sleepFrom: nil, awakeHours: hours, asleepHours: 0, ringingHours: 0,
                               awakeDrain: drain.percentPerHour, asleepDrain: nil, asleepDrainLearned: false,
                               because: "no night history")
        guard assumption.drop != nil else {
            forecast.reason = "the drain is not known yet: no hardware rate and not enough history"
            return forecast
        }
        forecast.assumption = assumption
        guard let prediction = assumption.prediction(level: level, powerOff: powerOff) else {
            forecast.reason = "the battery readings are out of range"
            forecast.assumption = nil
            return forecast
        }
        forecast.risk = prediction.risk
        forecast.predictedLevel = prediction.predictedLevel
        forecast.nudge = Nudge.forPrediction(prediction, moment: momentName, policy: powerOff)
        if let night {
            forecast.nudge?.assumption = assumption.text(momentName: momentName, in: night.timeZone)
        }
        return forecast
    }
}
