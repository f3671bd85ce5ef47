import DoseTapCore
import Foundation

// The JSON of Core's own values (a prediction, a nudge, a forecast, tonight, a dose event, a refusal): what
// `predict --json`, `dose status --json` and every dose answer print, in the full binary and in the
// one-shot front alike.

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
        if let deadlineText { fields.append(("deadlineText", .string(deadlineText))) }
        return .object(fields)
    }
}

extension NudgeDecision {
    /// `deadline` (ISO 8601: the last moment to be asleep or plugged in, null when no deadline applies: on external
    /// power, safe even awake, at risk even asleep now, not known yet), `deadlineWhy` (the deadline's reason) and
    /// `nudgeWhy` (`NudgeDecision.Why`: why the nudge is shown, or why it is silent) — #52.
    public func deadlineFields(in timeZone: TimeZone) -> [(String, JSON)] {
        [
            ("deadline", deadline.kind == .at ? deadline.deadline.map { .string($0.rfc3339(in: timeZone)) } ?? .null : .null),
            ("deadlineWhy", .string(deadline.because)),
            ("nudgeWhy", .string(why.rawValue)),
        ]
    }

    /// The same keys when no decision was made: no deadline, and why (`nudgeWhy` null).
    public static func noDeadlineFields(because: String) -> [(String, JSON)] {
        [("deadline", .null), ("deadlineWhy", .string(because)), ("nudgeWhy", .null)]
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
    public func nightFields(in timeZone: TimeZone) -> [(String, JSON)] {
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

extension DoseEvent {
    /// The kind as faces spell it: dose1, dose2, dose2-late, snooze, skip, undo.
    public var kindName: String {
        switch kind {
        case .dose1: "dose1"
        case .dose2(let late): late ? "dose2-late" : "dose2"
        case .snooze: "snooze"
        case .skip: "skip"
        case .undo: "undo"
        case .discard: "discard"
        }
    }

    /// `{"id","kind","at","source"}`.
    public func json(in timeZone: TimeZone) -> JSON {
        .object([
            ("id", .string(id.uuidString)),
            ("kind", .string(kindName)),
            ("at", .string(at.rfc3339(in: timeZone))),
            ("source", .string(source.rawValue)),
        ])
    }
}

extension NightStatus {
    /// Tonight as `dose status --json` and every dose answer show it.
    public func json(in timeZone: TimeZone) -> JSON {
        func time(_ d: Date?) -> JSON { d.map { .string($0.rfc3339(in: timeZone)) } ?? .null }
        return .object([
            ("phase", .string(phase.rawValue)),
            ("nightDate", .string(nightDate.description)),
            ("dose1At", time(session?.dose1.at)),
            ("dose2At", time(session?.dose2?.at)),
            ("windowOpensAt", time(session?.windowOpensAt)),
            ("windowClosesAt", time(session?.windowClosesAt)),
            ("reminderAt", time(reminderAt)),
            ("minutesRemaining", JSON.optional(minutesRemaining)),
            ("snoozesUsed", .int(snoozesUsed)),
            ("snoozesLeft", .int(snoozesLeft)),
            ("skipReason", JSON.optional(skipReason?.rawValue)),
            ("onTime", JSON.optional(onTime)),
            // What Undo and Snooze name (the web's forms and its API): the last action, and the reminder's setter.
            ("lastAction", lastAction.map { $0.json(in: timeZone) } ?? .null),
            ("reminderSetBy", JSON.optional(reminderSetBy?.id.uuidString)),
            // Events dated in the future, set aside (#51): they decide nothing; each with its discard command.
            ("setAside", .array(setAside.map { event in
                .object([("id", .string(event.id.uuidString)), ("kind", .string(event.kindName)),
                         ("at", .string(event.at.rfc3339(in: timeZone))),
                         ("notice", .string(SetAsideNotice.sentence(event, now: now, in: timeZone)))])
            })),
        ])
    }
}

extension DoseRefusal {
    /// `{"code","message"}`.
    public var json: JSON {
        .object([("code", .string(code.rawValue)), ("message", .string(message))])
    }
}
