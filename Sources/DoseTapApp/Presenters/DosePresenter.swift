import DoseTapCore
import Foundation

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
