import Foundation

/// Whether the battery nudge is shown now for an alarm (#52): by the deadline (`AlarmDeadline`), not by a guess
/// of when the machine will sleep tonight. Asked at alarm set, at `alarm on`, at every evening re-check (each
/// battery reading), at the timer set for `deadline − margin`, and at `PrepareForSleep(true)`.
///
/// The nudge is shown (the seed's `Nudge`: tiers, copy and caution rounding unchanged) when
/// - the alarm is at risk even if the machine slept now (`atRiskAsleep`: the forecast asleep from now);
/// - the machine will not sleep — it cannot wake itself for the alarm, another program holds a blocking
///   `sleep` inhibitor, or it has never slept on its last nights (a Pi) — and staying awake is at risk
///   (`willNotSleep`: the forecast awake until the alarm and through its ringing);
/// - the deadline is at most `margin` away (`deadlineNear`: the forecast awake until the alarm, which is what
///   happens if nothing changes).
///
/// Otherwise silence, the seed's safe state: no deadline (`safe`: on external power, no battery, or safe even
/// awake), a deadline further than the margin or a machine going to sleep before it (`sleepSavesIt`), or
/// nothing known yet (`unknown`: the awake drain is not measured yet and sleeping now would be safe).
public struct NudgeDecision: Sendable, Equatable {
    public enum Why: String, Sendable, Equatable, Codable {
        case atRiskAsleep
        case willNotSleep
        case deadlineNear
        case sleepSavesIt
        case safe
        case unknown
    }

    /// How long before the deadline the nudge is shown: time to read it, finish what one is doing and close
    /// the lid or plug in (a person reading the nudge at the last battery reading before it — readings come
    /// every minute or so on battery — still has about this long). Not fitted to any trace.
    public static let margin: TimeInterval = 20 * 60

    /// The nudge to show, or nil: silence.
    public var nudge: Nudge?
    public var why: Why
    /// One line for the log and the JSON: "the deadline 02:45 is 12 minutes away".
    public var because: String
    public var deadline: AlarmDeadline
    /// The forecast the nudge shows, or the one the silence rests on (asleep from now when sleep saves it, awake
    /// when no deadline applies); nil when none can be made.
    public var prediction: RiskPrediction?

    public init(nudge: Nudge?, why: Why, because: String, deadline: AlarmDeadline, prediction: RiskPrediction?) {
        self.nudge = nudge
        self.why = why
        self.because = because
        self.deadline = deadline
        self.prediction = prediction
    }

    /// Why the machine will not sleep before the alarm, or nil when it may (the sleep guard's and logind's facts,
    /// and its history: seen through `SleepHabits.minimumNights` whole nights and asleep in none of them).
    public static func willNotSleep(conditions: NightConditions, habits: SleepHabits) -> String? {
        if !conditions.canWake { return "it cannot wake itself for the alarm" }
        if let blocker = conditions.sleepBlockedBy.first {
            return "\(DisplayText.escaped(blocker, maxLength: 40)) keeps it from sleeping"
        }
        if conditions.goingToSleep { return nil }
        if habits.neverSleeps { return "it stayed awake all night on every night it was seen" }
        return nil
    }

    /// The decision for one alarm, from its deadline.
    /// - Parameters:
    ///   - moment: how the nudge's headline names it ("alarm").
    ///   - powerOff: how the nudge's power-off fact reads.
    public static func decide(_ deadline: AlarmDeadline, now: Date, conditions: NightConditions, habits: SleepHabits,
                              moment: String = "alarm", powerOff: PowerOffPolicy = .upowerDefault) -> NudgeDecision {
        func shown(_ prediction: RiskPrediction, _ why: Why, _ because: String) -> NudgeDecision {
            NudgeDecision(nudge: Nudge.forPrediction(prediction, moment: moment, policy: powerOff), why: why, because: because,
                          deadline: deadline, prediction: prediction)
        }
        func silent(_ why: Why, _ because: String, _ prediction: RiskPrediction?) -> NudgeDecision {
            NudgeDecision(nudge: nil, why: why, because: because, deadline: deadline, prediction: prediction)
        }
        // Going to sleep now: only the night asleep from now counts (even where staying awake would have been safe).
        if conditions.goingToSleep, conditions.canWake, conditions.sleepBlockedBy.isEmpty, let asleep = deadline.asleepNow {
            return asleep.risk == .safe ? silent(.sleepSavesIt, "it is going to sleep now", asleep)
                : shown(asleep, .atRiskAsleep, "at risk even though it is going to sleep now")
        }
        if deadline.kind == .none { return silent(.safe, deadline.because, deadline.awake ?? deadline.asleepNow) }
        if let why = willNotSleep(conditions: conditions, habits: habits) {
            if let awake = deadline.awake {
                // Not `.none`, so staying awake is not safe.
                return shown(awake, .willNotSleep, "at risk awake, and \(why)")
            }
            if deadline.kind == .now, let asleep = deadline.asleepNow {
                return shown(asleep, .atRiskAsleep, "at risk even asleep, and \(why)")
            }
            return silent(.unknown, deadline.because, deadline.asleepNow)
        }
        switch deadline.kind {
        case .now:
            guard let asleep = deadline.asleepNow else { return silent(.unknown, deadline.because, nil) }
            return shown(asleep, .atRiskAsleep, deadline.because)
        case .at:
            guard let at = deadline.deadline, let awake = deadline.awake else {
                return silent(.unknown, deadline.because, deadline.asleepNow)
            }
            let left = at.timeIntervalSince(now)
            if left <= margin {
                return shown(awake, .deadlineNear, "the deadline is \(max(0, Int((left / 60).rounded(.down)))) minutes away")
            }
            return silent(.sleepSavesIt, "safe if it sleeps or is plugged in within \(Int((left / 60).rounded(.down))) minutes",
                          deadline.asleepNow)
        case .unknown, .none:
            return silent(.unknown, deadline.because, deadline.asleepNow)
        }
    }

    /// The decision as the agent makes it: the deadline from the battery now, its awake drain and the night outlook,
    /// then `decide` with the outlook's conditions and habits.
    public static func make(state: PowerState, drain: DrainEstimate, alarm: Date, now: Date, night: NightOutlook,
                            moment: String = "alarm", powerOff: PowerOffPolicy = .upowerDefault) -> NudgeDecision {
        let deadline = AlarmDeadline.make(state: state, drain: drain, alarm: alarm, now: now, night: night, powerOff: powerOff)
        return decide(deadline, now: now, conditions: night.conditions, habits: night.learning.habits, moment: moment,
                      powerOff: powerOff)
    }
}

extension SleepHabits {
    /// Seen through at least `minimumNights` whole nights (awake until 06:00 or asleep for the night) and asleep
    /// for the night in none of them: a machine that does not sleep (a Pi, a laptop always left running).
    public var neverSleeps: Bool {
        let known = nights.compactMap(\.sleptAt)
        return known.count >= Self.minimumNights && known.allSatisfy { $0 == Int.max }
    }
}
