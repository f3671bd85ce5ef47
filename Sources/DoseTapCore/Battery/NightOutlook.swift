import Foundation

/// What the machine taught the agent about its nights: its drain asleep and its evenings. Kept in the
/// store (one JSON value), so a restart keeps what was learned.
public struct NightLearning: Sendable, Equatable, Codable {
    public var sleepDrain: SleepDrainModel
    public var habits: SleepHabits
    /// What the agent last read of logind and of the sleep guard (the command line shows it).
    public var conditions: NightConditions?

    public init(sleepDrain: SleepDrainModel = .init(), habits: SleepHabits = .init(), conditions: NightConditions? = nil) {
        self.sleepDrain = sleepDrain
        self.habits = habits
        self.conditions = conditions
    }

    /// One suspend, seen whole: learn its drain and whether it was the night's sleep.
    @discardableResult
    public mutating func slept(_ episode: SleepEpisode, in zone: TimeZone) -> SleepEpisodeVerdict {
        habits.awake(at: episode.start, in: zone)
        if let hours = episode.hoursAsleep { habits.slept(from: episode.start, hours: hours, in: zone) }
        habits.awake(at: episode.end, in: zone)
        return sleepDrain.learn(episode)
    }
}

/// What the forecast assumed the machine does until the moment.
public enum ForecastAssumption: String, Sendable, Equatable, Codable {
    /// Awake all the way: the drain of the last minutes awake (a Pi; a laptop that does not sleep).
    case awake
    /// Asleep from now until the alarm wakes it.
    case asleep
    /// Awake until it sleeps, then asleep.
    case mixed
}

/// The night the forecast assumes, with the drains it used: what the command line, the notification and
/// the dashboard say beside the number.
public struct NightAssumption: Sendable, Equatable {
    public var kind: ForecastAssumption
    /// When the sleep begins (asleep: now; mixed: later), nil when awake.
    public var sleepFrom: Date?
    public var awakeHours: Double
    public var asleepHours: Double
    /// The alarm's own ringing after the machine wakes for it (awake minutes too).
    public var ringingHours: Double
    public var awakeDrain: Double?
    public var asleepDrain: Double?
    public var asleepDrainLearned: Bool
    /// Why: "it cannot wake itself for the alarm", "as on most evenings".
    public var because: String

    /// "if this machine sleeps from about 23:10 until the alarm wakes it", in the zone of the person.
    public func text(momentName: String = "alarm", in zone: TimeZone) -> String {
        switch kind {
        case .awake:
            return "if this machine stays awake until the \(momentName) (\(because))"
        case .asleep:
            return "if this machine sleeps from now until the \(momentName) wakes it"
        case .mixed:
            let clock = sleepFrom.map { NightAssumption.clockText($0, in: zone) } ?? "later"
            return "if this machine sleeps from about \(clock) until the \(momentName) wakes it"
        }
    }

    /// "23:10", rounded to 5 minutes (the plan is not more precise than that).
    static func clockText(_ date: Date, in zone: TimeZone) -> String {
        let rounded = Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 300).rounded() * 300)
        return ClockText(timeZone: zone).time(rounded)
    }
}

/// Everything the forecast needs to tell the night the machine will really have.
public struct NightOutlook: Sendable, Equatable {
    public var learning: NightLearning
    public var conditions: NightConditions
    public var timeZone: TimeZone
    /// How long the alarm rings when nobody answers (the awake minutes after it wakes the machine).
    public var ringing: TimeInterval

    public init(learning: NightLearning, conditions: NightConditions, timeZone: TimeZone,
                ringing: TimeInterval = AlarmRingRules.ringDuration) {
        self.learning = learning
        self.conditions = conditions
        self.timeZone = timeZone
        self.ringing = ringing
    }

    /// Splits the hours until `moment` into awake and asleep, with the drain of each.
    /// - Parameter awakeDrain: the drain of the last minutes awake (nil: not known yet).
    public func assume(now: Date, moment: Date, awakeDrain: Double?, wakesForIt: Bool) -> NightAssumption {
        let hours = max(0, moment.timeIntervalSince(now) / 3600)
        let sleep = learning.sleepDrain.estimate
        let plan = learning.habits.plan(now: now, moment: moment, conditions: conditions, in: timeZone)
        switch plan {
        case .awake(let because):
            return NightAssumption(kind: .awake, sleepFrom: nil, awakeHours: hours, asleepHours: 0, ringingHours: 0,
                                   awakeDrain: awakeDrain, asleepDrain: nil, asleepDrainLearned: sleep.learned,
                                   because: because)
        case .sleeps(let from, let because):
            return assume(sleepingFrom: from, now: now, moment: moment, awakeDrain: awakeDrain, wakesForIt: wakesForIt,
                          because: because)
        }
    }

    /// The night if the machine stays awake until `from` (now or later) and then sleeps until `moment` wakes it,
    /// at the drain asleep this machine taught (or the prior): the plan's `.sleeps`, and the deadline's (#52) what-if.
    public func assume(sleepingFrom from: Date, now: Date, moment: Date, awakeDrain: Double?, wakesForIt: Bool,
                       because: String) -> NightAssumption {
        NightAssumption.sleeping(from: from, now: now, moment: moment, awakeDrain: awakeDrain, asleep: learning.sleepDrain.estimate,
                                 ringing: wakesForIt ? ringing : 0, because: because)
    }
}

extension NightAssumption {
    /// Awake from `now` until `from`, then asleep until `moment`, at `asleep`'s drain (its fixed part spread over
    /// the hours of this sleep), then `ringing` seconds awake.
    static func sleeping(from: Date, now: Date, moment: Date, awakeDrain: Double?, asleep sleep: SleepDrainEstimate,
                         ringing: TimeInterval, because: String) -> NightAssumption {
        let hours = max(0, moment.timeIntervalSince(now) / 3600)
        let awake = min(hours, max(0, from.timeIntervalSince(now) / 3600))
        let asleep = hours - awake
        // The drain of this night's sleep: its fixed part spread over its hours.
        let drain = asleep > 0 ? sleep.drop(hours: asleep) / asleep : sleep.percentPerHour
        return NightAssumption(kind: awake * 60 < 1 ? .asleep : .mixed, sleepFrom: max(from, now), awakeHours: awake,
                               asleepHours: asleep, ringingHours: max(0, ringing) / 3600,
                               awakeDrain: awakeDrain, asleepDrain: drain,
                               asleepDrainLearned: sleep.learned, because: because)
    }
}

extension NightAssumption {
    /// The points this night costs, or nil when a drain it needs is unknown.
    var drop: Double? {
        let awakePart = awakeHours + ringingHours
        let asleepPart = asleepHours * (asleepDrain ?? 0)
        if awakePart > 0 {
            // The ringing of a sleeper with no awake figure yet is small beside its night: without a known
            // awake drain only a forecast with no awake minutes but the ringing can be made, at the prior's
            // ten times (an awake laptop drains about ten times what it does asleep).
            guard let awake = awakeDrain ?? (awakeHours == 0 ? (asleepDrain ?? SleepDrainModel.prior) * 10 : nil) else {
                return nil
            }
            return awake * awakePart + asleepPart
        }
        return asleepPart
    }

    /// The total hours: awake, asleep and ringing.
    var totalHours: Double { awakeHours + asleepHours + ringingHours }

    /// The seed's arithmetic (`RiskPredictor`, level − drain × hours) with the drain of this night, and the
    /// machine's power-off level counted as empty; nil when a drain it needs is unknown or an input is out of
    /// range. What `BatteryForecast.make` and `AlarmDeadline` (#52) both classify.
    func prediction(level: Double, powerOff: PowerOffPolicy) -> RiskPrediction? {
        guard let drop else { return nil }
        let span = totalHours
        let rate = span > 0 ? drop / span : 0
        let input = RiskInput(level: level, drainPercentPerHour: rate, hours: span, charging: false)
        // At the moment it rings the machine is awake: a power-off set by time left counts at the awake drain.
        let offLevel = powerOff.level(drainPercentPerHour: awakeDrain ?? rate)
        return try? RiskPredictor.predict(input, powerOffLevel: offLevel)
    }
}
