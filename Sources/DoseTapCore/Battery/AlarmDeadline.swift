import Foundation

/// The last safe moment (#52): until when this machine may stay awake on its battery and still ring the alarm.
///
/// "Will this machine sleep tonight, and when?" cannot be known at bedtime; this can. From the level now, the
/// awake drain, the drain asleep this machine taught (or the stated prior, `SleepDrainModel.prior`), the alarm's
/// ringing (awake minutes after it wakes the machine) and the power-off level counted as empty, the deadline is
/// the latest instant at which the machine may fall asleep — and sleep until the alarm wakes it — for the
/// forecast at the alarm to be *safe* (the seed's tiers and caution rounding: above 20 % after rounding down,
/// and above the power-off level). Plugging in by then is as good.
///
/// The arithmetic is the forecast's own (`NightAssumption` and `RiskPredictor`, the same path as
/// `BatteryForecast.make`): awake for `t` hours at the awake drain, then asleep until the alarm (`fixed + rate ×
/// hours` asleep), then ringing at the awake drain. That is a straight line in `t`, falling when the machine
/// drains more awake than asleep; the deadline is where it crosses the lowest safe level
/// (`RiskPredictor.lowestSafeLevel`), rounded down to a whole second and checked against the predictor.
///
/// The answers:
/// - `.at`: asleep (or on external power) by `deadline` and the alarm is safe; strictly before the alarm;
/// - `.now`: even sleeping now is not enough (the forecast asleep from now is warning or critical);
/// - `.none`: no deadline applies: on external power, no system battery, or safe even staying awake until the
///   alarm and through its ringing;
/// - `.unknown`: the level or the awake drain is not known yet, and sleeping now would be safe.
public struct AlarmDeadline: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, Codable {
        case at
        case now
        case none
        case unknown
    }

    public var kind: Kind
    /// Set for `.at` only: the latest moment to be asleep or plugged in.
    public var deadline: Date?
    /// Why, for a person and the log: "safe even if it stays awake until the alarm".
    public var because: String
    /// The alarm's instant.
    public var alarm: Date
    /// The forecast if the machine slept from now until the alarm wakes it (nil: on external power, no battery,
    /// level unknown or out of range).
    public var asleepNow: RiskPrediction?
    /// The forecast if it stays awake until the alarm and through its ringing (nil: the awake drain is not known,
    /// or as for `asleepNow`).
    public var awake: RiskPrediction?

    public init(kind: Kind, deadline: Date? = nil, because: String, alarm: Date, asleepNow: RiskPrediction? = nil,
                awake: RiskPrediction? = nil) {
        self.kind = kind
        self.deadline = deadline
        self.because = because
        self.alarm = alarm
        self.asleepNow = asleepNow
        self.awake = awake
    }

    /// The deadline from the parts themselves.
    /// - Parameters:
    ///   - level: the battery now, 0…100 (nil: not reported).
    ///   - onAC: on external power (charging, full, or not charging): no deadline.
    ///   - awakeDrain: %/h while awake (nil: not known yet).
    ///   - asleep: the drain asleep, learned or the prior (`SleepDrainModel.estimate`).
    ///   - ringing: how long the alarm rings awake after it wakes the machine (`AlarmRingRules.ringDuration`).
    ///   - powerOff: the machine's power-off level (UPower's `PercentageAction` or `TimeAction`).
    public static func make(level: Double?, onAC: Bool, awakeDrain: Double?, asleep: SleepDrainEstimate,
                            ringing: TimeInterval = AlarmRingRules.ringDuration, powerOff: PowerOffPolicy = .upowerDefault,
                            alarm: Date, now: Date) -> AlarmDeadline {
        if onAC { return AlarmDeadline(kind: .none, because: "on external power", alarm: alarm) }
        guard let level, level.isFinite, (0...100).contains(level) else {
            return AlarmDeadline(kind: .unknown, because: "the battery does not report its level", alarm: alarm)
        }
        let awakeDrain = awakeDrain.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        func asleepFrom(_ from: Date) -> RiskPrediction? {
            NightAssumption.sleeping(from: from, now: now, moment: alarm, awakeDrain: awakeDrain, asleep: asleep, ringing: ringing,
                                     because: "the deadline").prediction(level: level, powerOff: powerOff)
        }
        let hours = max(0, alarm.timeIntervalSince(now) / 3600)
        let stayingAwake = NightAssumption(kind: .awake, sleepFrom: nil, awakeHours: hours, asleepHours: 0,
                                           ringingHours: max(0, ringing) / 3600, awakeDrain: awakeDrain, asleepDrain: nil,
                                           asleepDrainLearned: asleep.learned, because: "the deadline")
        let awake = awakeDrain == nil ? nil : stayingAwake.prediction(level: level, powerOff: powerOff)
        let asleepNow = asleepFrom(now)
        var result = AlarmDeadline(kind: .none, because: "", alarm: alarm, asleepNow: asleepNow, awake: awake)
        if awake?.risk == .safe {
            result.because = "safe even if it stays awake until the alarm"
            return result
        }
        guard let asleepNow else {
            result.kind = .unknown
            result.because = "the battery readings are out of range"
            return result
        }
        if asleepNow.risk != .safe {
            result.kind = .now
            result.because = "at risk even if it sleeps now"
            return result
        }
        guard let awakeDrain else {
            result.kind = .unknown
            result.because = "the drain awake is not known yet: no hardware rate and not enough history"
            return result
        }
        // The line: the level at the alarm if it sleeps `t` hours from now falls by (awake − asleep rate) a point per hour.
        let slope = awakeDrain - asleep.percentPerHour
        let lowest = RiskPredictor.lowestSafeLevel(powerOffLevel: powerOff.level(drainPercentPerHour: awakeDrain))
        let atAlarmAsleepNow = NightAssumption.sleeping(from: now, now: now, moment: alarm, awakeDrain: awakeDrain, asleep: asleep,
                                                        ringing: ringing, because: "the deadline").drop.map { level - $0 } ?? 0
        var seconds = slope > 0 ? ((atAlarmAsleepNow - lowest) / slope * 3600).rounded(.down) : 0
        // Strictly before the alarm (awake until the alarm is not safe), and at or after now (asleep now is).
        seconds = max(0, min(seconds, (hours * 3600).rounded(.up) - 1))
        // The predictor has the last word (floating-point noise at the boundary): step back until it says safe.
        var steps = 0
        while seconds > 0, asleepFrom(now.addingTimeInterval(seconds))?.risk != .safe, steps < 120 {
            seconds = max(0, seconds - 1)
            steps += 1
        }
        result.kind = .at
        result.deadline = now.addingTimeInterval(seconds)
        result.because = "safe if it sleeps or is plugged in by then"
        return result
    }

    /// The deadline for an alarm as the agent sees the machine: the battery now, its awake drain, and the night
    /// outlook (the drain asleep learned or the prior, the ringing).
    public static func make(state: PowerState, drain: DrainEstimate, alarm: Date, now: Date, night: NightOutlook,
                            powerOff: PowerOffPolicy = .upowerDefault) -> AlarmDeadline {
        guard state.present else {
            return AlarmDeadline(kind: .none, because: "no system battery: this machine runs on external power", alarm: alarm)
        }
        return make(level: state.level, onAC: state.onAC, awakeDrain: drain.percentPerHour, asleep: night.learning.sleepDrain.estimate,
                    ringing: night.ringing, powerOff: powerOff, alarm: alarm, now: now)
    }
}

extension RiskPredictor {
    /// The lowest predicted level (before rounding) that `predict` classifies safe: a whole percent above
    /// `warningCeiling` and above the power-off level, less the noise `wholePercentDown` forgives.
    public static func lowestSafeLevel(powerOffLevel: Double?) -> Double {
        var whole = warningCeiling + 1
        if let off = powerOffLevel, off.isFinite, off > 0 { whole = max(whole, Int(min(off, 1000).rounded(.down)) + 1) }
        return Double(whole) - 1e-9
    }
}
