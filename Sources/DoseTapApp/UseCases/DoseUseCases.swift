import DoseTapCore
import DoseTapStore
import Foundation

/// The outcome of one dose input as every face shows it.
public struct DoseSubmission: Sendable {
    public var outcome: DoseOutcome
    /// After a Dose 1 on battery: will the battery last until the reminder? nil when safe, on AC, or unknown.
    public var nudge: Nudge?
}

/// The use case every face calls for a dose input — the command line, the buttons, the notification
/// actions, the agent's automatic close, and later the web page and MQTT: the one policy and the commit
/// (in the store's transaction), the battery-at-reminder nudge after a Dose 1, and the event for every
/// subscriber. No face writes dose events itself.
public final class DoseUseCases: Sendable {
    public let repository: DoseRepository
    let clock: any WallClock
    private let battery: (@Sendable () -> BatteryStatus?)?
    private let events: EventBus?

    /// - Parameter battery: the battery now (and its drain), or nil where there is none to ask.
    public init(repository: DoseRepository, clock: any WallClock, battery: (@Sendable () -> BatteryStatus?)? = nil,
                events: EventBus? = nil) {
        self.repository = repository
        self.clock = clock
        self.battery = battery
        self.events = events
    }

    /// The dose log read-only (the history page, the exports), on the same database and clock.
    public var history: DoseHistory { DoseHistory(store: DataStore(database: repository.database), clock: clock) }

    /// The night's settings (setup's answers) of the same database, read-only.
    public var night: UserSettings { SettingsUseCases(settings: SettingsRepository(database: repository.database)).night() }

    /// Decides and (when accepted) records one input. `issuedAt` is when the person acted (a button's
    /// press time); the decision is made now.
    public func submit(_ command: DoseCommand, source: InputSource, issuedAt: Date? = nil) throws -> DoseSubmission {
        let now = clock.now()
        let input = DoseInput(command: command, source: source, issuedAt: issuedAt ?? now)
        let outcome: DoseOutcome
        do {
            outcome = try repository.submit(input, now: now, timeZone: clock.timeZone)
        } catch let error as StoreError {
            // A storage failure is already one sentence ("cannot write …: the disk is full; … nothing was recorded").
            throw UseCaseError.unavailable(error.description)
        }
        switch outcome {
        case .recorded(let event, let confirmation, let status):
            let nudge = reminderNudge(after: event, now: now)
            events?.publish(.doseRecorded(event, confirmation: confirmation, status: status, nudge: nudge))
            return DoseSubmission(outcome: outcome, nudge: nudge)
        case .refused(let refusal, _):
            events?.publish(.doseRefused(refusal, source: source))
            return DoseSubmission(outcome: outcome, nudge: nil)
        }
    }

    /// The battery at tonight's Dose 2 reminder, when it is at risk and the reminder is still ahead (the
    /// status bar's glance): the same prediction as the nudge given when Dose 1 was taken, made now.
    public func reminderNudge(for night: NightStatus) -> Nudge? {
        BatteryStatus.reminderNudge(for: night) { battery?() }
    }

    /// The battery at the reminder of a Dose 1 just taken, when it is at risk.
    func reminderNudge(after event: DoseEvent, now: Date) -> Nudge? {
        guard case .dose1(let target) = event.kind, let status = battery?(),
              status.state.present, !status.state.onAC else { return nil }
        let reminder = event.at.addingTimeInterval(TimeInterval(target) * 60)
        return status.forecast(at: reminder, now: now, momentName: "reminder").nudge
    }
}
