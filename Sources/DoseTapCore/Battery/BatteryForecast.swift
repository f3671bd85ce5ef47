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

    /// - Parameters:
    ///   - momentName: how the headline names the moment ("alarm", "reminder").
    ///   - powerOff: the machine's power-off level (UPower's `PercentageAction`, read by the caller): a
    ///     prediction at or below it is critical, and the nudge says so.
    public static func make(state: PowerState, drain: DrainEstimate, at moment: Date, now: Date,
                            momentName: String = "alarm", powerOff: PowerOffPolicy = .upowerDefault) -> BatteryForecast {
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
        let rate: Double
        if state.onAC {
            rate = 0
        } else if let known = drain.percentPerHour {
            rate = known
        } else {
            forecast.reason = "the drain is not known yet: no hardware rate and not enough history"
            return forecast
        }
        let input = RiskInput(level: level, drainPercentPerHour: rate, hours: hours, charging: state.onAC)
        guard let prediction = try? RiskPredictor.predict(input, powerOffLevel: powerOff.level(drainPercentPerHour: rate)) else {
            forecast.reason = "the battery readings are out of range"
            return forecast
        }
        forecast.risk = prediction.risk
        forecast.predictedLevel = prediction.predictedLevel
        forecast.nudge = Nudge.forPrediction(prediction, moment: momentName, policy: powerOff)
        return forecast
    }
}
