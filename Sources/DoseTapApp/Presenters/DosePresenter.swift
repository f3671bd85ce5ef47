import DoseTapCore
import Foundation

extension DoseEvent {
    /// The kind as faces spell it: dose1, dose2, dose2-late, snooze, skip, undo.
    public var kindName: String {
        switch kind {
        case .dose1: "dose1"
        case .dose2(let late): late ? "dose2-late" : "dose2"
        case .snooze: "snooze"
        case .skip: "skip"
        case .undo: "undo"
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
        ])
    }
}

extension DoseRefusal {
    /// `{"code","message"}`.
    public var json: JSON {
        .object([("code", .string(code.rawValue)), ("message", .string(message))])
    }
}

extension DoseSubmission {
    /// The answer to one dose input: recorded (the event, its confirmation, the battery nudge, tonight) or
    /// refused (the reason, tonight).
    public func json(in timeZone: TimeZone) -> JSON {
        switch outcome {
        case .recorded(let event, let confirmation, let status):
            .object([
                ("recorded", .bool(true)),
                ("event", event.json(in: timeZone)),
                ("message", .string(confirmation)),
                ("batteryNudge", nudge?.json ?? .null),
                ("status", status.json(in: timeZone)),
            ])
        case .refused(let refusal, let status):
            .object([
                ("recorded", .bool(false)),
                ("refusal", refusal.json),
                ("status", status.json(in: timeZone)),
            ])
        }
    }
}
