import DoseTapCore
import Foundation

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
    /// Will the battery last until the alarm: the prediction, its inputs and the nudge; the deadline (#52:
    /// `deadline`, `deadlineWhy`, `nudgeWhy`, see `NudgeDecision.deadlineFields`).
    public func json(in timeZone: TimeZone) -> JSON {
        let deadline = decision?.deadlineFields(in: timeZone)
            ?? NudgeDecision.noDeadlineFields(because: reason ?? (charging ? "on external power" : "no night outlook: forecast awake"))
        return .object([
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
        ] + deadline)
    }
}
