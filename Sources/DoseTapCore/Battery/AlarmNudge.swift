import Foundation

/// The battery at an alarm as every face shows it (#52): the forecast (the night model's number, unchanged), and the
/// nudge decided by the deadline (`NudgeDecision`), not by the forecast's guess of when the machine sleeps tonight.
/// `alarm add`/`on`/`edit`/`list`, `battery --alarm`, the one-shot front, the dashboard, the status bar, the agent's
/// re-check at each reading, its timer at `deadline − margin` and its re-check at `PrepareForSleep` all ask here.
extension BatteryStatus {
    /// The forecast at an alarm's occurrence. With the machine's nights (`night`), `decision` is set and `nudge` is
    /// the decision's (nil: silence); without them (the seed's model alone) the forecast's own nudge stays.
    public func alarmForecast(at alarm: Date, now: Date) -> BatteryForecast {
        var made = forecast(at: alarm, now: now)
        guard let night else { return made }
        let decision = NudgeDecision.make(state: state, drain: drain, alarm: alarm, now: now, night: night, powerOff: powerOff)
        made.decision = decision
        made.nudge = decision.shownNudge(night: night)
        // The awake drain is not measured yet, but even asleep from now the alarm is at risk: awake drains at least as
        // fast, so that forecast is the best one known — the risk the nudge shows is the risk the forecast states.
        if made.risk == nil, made.nudge != nil, decision.why == .atRiskAsleep, let asleep = decision.prediction {
            made.risk = asleep.risk
            made.predictedLevel = asleep.predictedLevel
            made.reason = "the awake drain is not known yet: this is the forecast if it sleeps from now until the alarm"
        }
        return made
    }

    /// The same forecast decided again at a later instant from the deadline it found (the agent's timer at
    /// `deadline − margin`: no new reading came, so the deadline and the forecasts it rests on stay those of the
    /// last reading, and only the time left to it changes).
    public func alarmForecast(_ made: BatteryForecast, decidedAt now: Date) -> BatteryForecast {
        guard let night, let before = made.decision else { return made }
        var again = made
        let decision = NudgeDecision.decide(before.deadline, now: now, conditions: night.conditions, habits: night.learning.habits,
                                            powerOff: powerOff)
        again.decision = decision
        again.nudge = decision.shownNudge(night: night)
        return again
    }
}

extension NudgeDecision {
    /// The nudge as faces show it: the seed's copy and power-off fact, the night its number assumes, and — when it is
    /// shown because the deadline is near — the deadline ("At risk unless this machine sleeps or is plugged in by
    /// 02:45."). nil: silence.
    public func shownNudge(night: NightOutlook) -> Nudge? {
        guard var shown = nudge else { return nil }
        switch why {
        case .atRiskAsleep:
            shown.assumption = "if this machine sleeps from now until the alarm wakes it"
        case .willNotSleep:
            let reason = Self.willNotSleep(conditions: night.conditions, habits: night.learning.habits) ?? "it will not sleep"
            shown.assumption = "if this machine stays awake until the alarm (\(reason))"
        case .deadlineNear:
            shown.assumption = "if this machine stays awake until the alarm"
            if let at = deadline.deadline {
                shown.deadlineText = "At risk unless this machine sleeps or is plugged in by \(ClockText(timeZone: night.timeZone).time(at))."
            }
        case .sleepSavesIt, .safe, .unknown:
            break
        }
        return shown
    }

    /// When the agent should decide again without a new reading: `deadline − margin`, for a silent decision that rests on
    /// a deadline still further than the margin; nil otherwise (a nudge already shown, no deadline, nothing known).
    public var recheckAt: Date? {
        guard nudge == nil, why == .sleepSavesIt, deadline.kind == .at, let at = deadline.deadline else { return nil }
        return at.addingTimeInterval(-Self.margin)
    }
}
