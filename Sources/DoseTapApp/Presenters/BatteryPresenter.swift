import DoseTapCore
import Foundation

extension Nudge {
    /// `{"severity","header","headline","action"}`, plus `"powerOff"` (the fact, e.g. "This machine powers
    /// itself off at 2%.") only when the prediction is at or below the machine's power-off level.
    public var json: JSON {
        var fields: [(String, JSON)] = [
            ("severity", .string(severity.rawValue)),
            ("header", .string(header)),
            ("headline", .string(headline)),
            ("action", .string(action)),
        ]
        if let powerOff { fields.append(("powerOff", .string(powerOff))) }
        if let assumption { fields.append(("assumption", .string(assumption))) }
        return .object(fields)
    }
}

extension BatteryForecast {
    /// `{"risk","predictedLevel","assumption","awakeDrain","asleepDrain","asleepDrainLearned","sleepFrom","because"}`
    /// (#24): the risk and the level, and the night behind the number — `assumption` is `awake`, `asleep`
    /// or `mixed`, the drains are %/h (null when not used), `sleepFrom` when the sleep begins. nil when the
    /// forecast could not be made.
    public func forecastJSON(in timeZone: TimeZone) -> JSON? {
        guard let risk, let predictedLevel else { return nil }
        return .object([("risk", .string(risk.rawValue)), ("predictedLevel", .int(predictedLevel))] + nightFields(in: timeZone))
    }

    /// The night behind the number (see `forecastJSON`); none when no drain was applied.
    func nightFields(in timeZone: TimeZone) -> [(String, JSON)] {
        var fields: [(String, JSON)] = []
        if let assumption {
            fields += [
                ("assumption", .string(assumption.kind.rawValue)),
                ("awakeDrain", .optional(assumption.awakeDrain, places: 3)),
                ("asleepDrain", .optional(assumption.asleepDrain, places: 3)),
                ("asleepDrainLearned", .bool(assumption.asleepDrainLearned)),
                ("sleepFrom", assumption.sleepFrom.map { .string($0.rfc3339(in: timeZone)) } ?? .null),
                ("ringingMinutes", .int(Int((assumption.ringingHours * 60).rounded()))),
                ("because", .string(assumption.because)),
                ("text", .string(assumption.text(in: timeZone))),
            ]
        }
        return fields
    }
}

extension RiskPrediction {
    /// `{"risk","predictedLevel"}`.
    public var json: JSON {
        .object([("risk", .string(risk.rawValue)), ("predictedLevel", .int(predictedLevel))])
    }
}

extension BatteryStatus {
    /// The system battery (combined) and every supply as read.
    public var json: JSON {
        var system: [(String, JSON)] = [
            ("present", .bool(state.present)),
            ("level", JSON.optional(state.level.map { Int($0.rounded()) })),
            ("status", .string(state.status.rawValue)),
            ("onAC", .bool(state.onAC)),
            ("drainPercentPerHour", .optional(drain.percentPerHour)),
            ("drainSource", .string(drain.source.rawValue)),
            ("hoursToEmpty", .optional(hoursToEmpty)),
        ]
        if let rate = state.rateW { system.append(("rateW", .number(rate.rounded(places: 3)))) }
        if let night {
            // What this machine taught of its nights (#24): its drain asleep (a line: fixed points per sleep plus a
            // rate), how many suspends and evenings it learned from.
            let sleep = night.learning.sleepDrain.estimate
            system.append(("asleep", .object([
                ("percentPerHour", .number(sleep.percentPerHour.rounded(places: 3))),
                ("pointsPerSleep", .number(sleep.fixed.rounded(places: 3))),
                ("learned", .bool(sleep.learned)),
                ("suspends", .int(sleep.observations)),
                ("evenings", .int(night.learning.habits.nights.count)),
            ])))
        }
        let supplies: [JSON] = state.supplies.map { s in
            var fields: [(String, JSON)] = [
                ("name", .string(s.name)),
                ("type", .string(s.type.name)),
                ("scope", .string(s.scope.rawValue)),
                ("present", .bool(s.present)),
                ("status", .string(s.status.rawValue)),
                ("online", JSON.optional(s.online)),
                ("level", JSON.optional(s.level.map { Int($0.rounded()) })),
            ]
            let optional: [(String, Double?)] = [
                ("energyWh", s.energyWh), ("energyFullWh", s.energyFullWh),
                ("energyFullDesignWh", s.energyFullDesignWh), ("rateW", s.rateW), ("voltageV", s.voltageV),
            ]
            for (key, value) in optional {
                if let value { fields.append((key, .number(value.rounded(places: 3)))) }
            }
            if let model = s.model { fields.append(("model", .string(model))) }
            if !s.problems.isEmpty { fields.append(("problems", .array(s.problems.map { .string($0) }))) }
            return .object(fields)
        }
        return .object([("system", .object(system)), ("supplies", .array(supplies))])
    }
}

extension BatteryForecast {
    /// Will the battery last until the alarm: the prediction, its inputs and the nudge.
    public func json(in timeZone: TimeZone) -> JSON {
        .object([
            ("alarmAt", .string(at.rfc3339(in: timeZone))),
            ("hoursUntil", .number(hoursUntil.rounded(places: 2))),
            ("level", JSON.optional(level.map { Int($0.rounded()) })),
            ("drainPercentPerHour", .optional(drain.percentPerHour)),
            ("drainSource", .string(drain.source.rawValue)),
            ("charging", .bool(charging)),
            ("risk", .string(risk?.rawValue ?? "unknown")),
            ("predictedLevel", JSON.optional(predictedLevel)),
            ("nudge", nudge?.json ?? .null),
            ("reason", JSON.optional(reason)),
            ("forecast", forecastJSON(in: timeZone) ?? .null),
        ])
    }
}
