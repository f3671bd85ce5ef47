import Foundation

/// The battery as the CLI and the agent both report it: the combined state, its drain, and the level at
/// which the machine stops itself (UPower's `PercentageAction`), which counts as empty in every forecast.
public struct BatteryStatus: Sendable, Equatable {
    public var state: PowerState
    public var drain: DrainEstimate
    public var powerOff: PowerOffPolicy
    /// The machine's nights (its drain asleep, when it sleeps, whether it can wake): the forecast splits the
    /// hours until the moment into awake and asleep (#24). nil: awake all the way, the seed's model.
    public var night: NightOutlook?

    public init(state: PowerState, drain: DrainEstimate, powerOff: PowerOffPolicy = .upowerDefault, night: NightOutlook? = nil) {
        self.state = state
        self.drain = drain
        self.powerOff = powerOff
        self.night = night
    }

    /// The forecast at `moment` with this battery, its drain, its nights and its power-off level.
    public func forecast(at moment: Date, now: Date, momentName: String = "alarm") -> BatteryForecast {
        BatteryForecast.make(state: state, drain: drain, at: moment, now: now, momentName: momentName, powerOff: powerOff,
                             night: night)
    }

    /// Reads the supplies now and fits the drain from the recorded history when the hardware rate is
    /// not usable. The current reading joins the history for the fit but is not stored.
    public static func read(source: any PowerSupplySource, history: (any BatteryHistoryStore)?,
                            now: Date, configuration: DrainEstimator.Configuration = .init(),
                            powerOff: PowerOffPolicy = .upowerDefault, night: NightOutlook? = nil) throws -> BatteryStatus {
        let state = PowerState(raw: try source.snapshot())
        var estimator = DrainEstimator(configuration: configuration)
        if state.hardwareDrainPercentPerHour == nil, state.present, !state.onAC, let history {
            let stored = try history.samples(since: now.addingTimeInterval(-configuration.window))
            estimator = DrainEstimator(samples: stored.filter { $0.at <= now }, configuration: configuration)
            if let current = state.sample(at: now) { estimator.record(current) }
        }
        return BatteryStatus(state: state, drain: estimator.estimate(for: state), powerOff: powerOff, night: night)
    }

    /// Hours until empty at the estimated drain, or nil.
    public var hoursToEmpty: Double? {
        guard !state.onAC, let level = state.fineLevel, let drain = drain.percentPerHour, drain > 0 else { return nil }
        return level / drain
    }
}

extension BatteryStatus {
    /// The battery at tonight's Dose 2 reminder, when it is at risk and the reminder is still ahead (the status bar's
    /// glance): the same prediction as the nudge given when Dose 1 was taken, made now. `battery` is read only then.
    public static func reminderNudge(for night: NightStatus, battery: () -> BatteryStatus?) -> Nudge? {
        guard let reminder = night.reminderAt, reminder > night.now, let status = battery(),
              status.state.present, !status.state.onAC else { return nil }
        return status.forecast(at: reminder, now: night.now, momentName: "reminder").nudge
    }
}

extension NightOutlook {
    /// The night as a one-shot command sees it: what the agent learned (nothing yet without a database), its last
    /// word on logind, not going to sleep now, and whether the machine can wake itself for the alarm (the running
    /// agent's finding, else this process's own check).
    public static func commandLine(learning: NightLearning, canWake: Bool, timeZone: TimeZone) -> NightOutlook {
        var conditions = learning.conditions ?? NightConditions()
        conditions.goingToSleep = false
        conditions.canWake = canWake
        return NightOutlook(learning: learning, conditions: conditions, timeZone: timeZone)
    }
}
