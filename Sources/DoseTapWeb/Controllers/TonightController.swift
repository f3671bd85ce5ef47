import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Tonight's page and `/api/dose/…`: the dose commands of the command line, with the same refusals.
extension WebDashboard {
    /// When tonight's text would next change: the next minute of the night (its minutes count from Dose 1's
    /// second) or of the wall clock (the night's date, bedtime), whichever comes first.
    static func nextChange(_ status: NightStatus) -> Date {
        ViewCache.nextMinute(after: status.now, anchoredAt: status.session?.dose1.at)
    }

    /// Undo and Snooze name the event they act on (`event`: `lastAction.id` and `reminderSetBy` of
    /// `GET /api/tonight`, hidden fields of the page's forms), so a second submit of the same click does nothing.
    static func command(_ name: String, late: Bool, reason: String?, event: String? = nil) throws -> DoseCommand {
        func named(_ what: String) throws -> UUID {
            guard let event, !event.isEmpty else {
                throw WebInputError(.badRequest, "\(what) names the event it acts on: send event (\(what == "undo" ? "lastAction.id" : "reminderSetBy") of GET /api/tonight)")
            }
            guard let id = UUID(uuidString: event) else {
                throw WebInputError(.badRequest, "event must be an event id, not '\(DisplayText.escaped(event, maxLength: 40))'")
            }
            return id
        }
        switch name {
        case "take": return .take(confirmLate: late)
        case "snooze": return .snoozeReminder(setBy: try named("snooze"))
        case "undo": return .undoEvent(try named("undo"))
        case "skip":
            guard let reason, !reason.isEmpty else { return .skip(nil) }
            guard let parsed = SkipReason(rawValue: reason), SkipReason.userChoices.contains(parsed) else {
                throw WebInputError(.badRequest, "reason must be alert, side-effects or other (not '\(DisplayText.escaped(reason, maxLength: 40))')")
            }
            return .skip(parsed)
        default:
            throw WebInputError(.notFound, "no such action: \(DisplayText.escaped(name, maxLength: 40))")
        }
    }

    static func flash(_ submission: DoseSubmission) -> Flash {
        switch submission.outcome {
        case .recorded(_, let confirmation, _): Flash(recorded: true, message: confirmation, nudge: submission.nudge)
        case .refused(let refusal, _): Flash(recorded: false, message: refusal.message)
        }
    }
}

extension DoseSubmission {
    var status: NightStatus {
        switch outcome {
        case .recorded(_, _, let status), .refused(_, let status): status
        }
    }
}
