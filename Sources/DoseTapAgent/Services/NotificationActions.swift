import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle

/// The buttons on DoseTap's notifications — Take Now, Snooze 10min, Skip — submitted to the dose use case
/// (source `notification`); its events play the outcome back as "dose recorded" or "action rejected"
/// (`DoseInputFeedback`). Buttons of other applications' notifications are ignored.
public final class NotificationActions: Service, Sendable, CustomStringConvertible {
    public var description: String { "NotificationActions" }

    private let desktop: DesktopNotifications
    private let feedback: FeedbackNotifier
    private let doses: DoseUseCases
    private let logger: Logger
    /// The ringing alarm's notification (Stop, Snooze 9 min).
    private let ringer: AlarmBell?
    private let alarms: (any RingAnswering)?
    /// A usage alert's "Snooze 1h".
    private let usageAlerts: AlertUseCases?

    public init(desktop: DesktopNotifications, feedback: FeedbackNotifier, doses: DoseUseCases, logger: Logger,
                ringer: AlarmBell? = nil, alarms: (any RingAnswering)? = nil, usageAlerts: AlertUseCases? = nil) {
        self.usageAlerts = usageAlerts
        self.desktop = desktop
        self.feedback = feedback
        self.doses = doses
        self.logger = logger
        self.ringer = ringer
        self.alarms = alarms
    }

    public func run() async throws {
        let invocations = try await desktop.invocations()
        await withGracefulShutdownHandler {
            for await invocation in invocations {
                await handle(invocation)
            }
        } onGracefulShutdown: {
            self.desktop.connection.close()
        }
    }

    /// Decides one button press; returns the outcome (nil when it was not one of ours).
    @discardableResult
    public func handle(_ invocation: DesktopNotifications.Invocation) async -> DoseOutcome? {
        if let ringer, let alarms, ringer.ring(forNotification: invocation.id) != nil {
            switch AlarmBell.Action(rawValue: invocation.action) {
            case .stop: alarms.stop(by: .notification)
            case .snooze: alarms.snooze(by: .notification)
            case nil: logger.warning("unknown alarm notification action rejected", metadata: ["action": "\(DisplayText.escaped(invocation.action))"])
            }
            return nil
        }
        if feedback.tag(forNotification: invocation.id) == AlertService.notificationTag, let usageAlerts {
            guard invocation.action == AlertService.snoozeAction.key else {
                logger.warning("unknown alert notification action rejected", metadata: ["action": "\(DisplayText.escaped(invocation.action))"])
                return nil
            }
            do {
                let until = try usageAlerts.snooze(.oneHour)
                logger.notice("usage alerts snoozed from the notification", metadata: ["until": "\(until.map { "\($0)" } ?? "-")"])
            } catch {
                logger.error("cannot snooze the usage alerts", metadata: ["error": "\(error)"])
            }
            return nil
        }
        guard feedback.session(forNotification: invocation.id) != nil else {
            logger.debug("ignored action of a notification that is not ours", metadata: ["id": "\(invocation.id)"])
            return nil
        }
        let command: DoseCommand
        switch DoseNotification.Action(rawValue: invocation.action) {
        case .takeNow: command = .take(confirmLate: false)
        case .snooze: command = .snooze
        case .skip: command = .skip(nil)
        case nil:
            logger.warning("unknown notification action rejected", metadata: ["action": "\(invocation.action)"])
            return nil
        }
        do {
            let submission = try doses.submit(command, source: .notification)
            switch submission.outcome {
            case .recorded(_, let confirmation, _):
                logger.notice("notification action recorded", metadata: ["action": "\(invocation.action)", "result": "\(confirmation)"])
                if let nudge = submission.nudge {
                    logger.warning("\(nudge.header): \(nudge.oneLine)")
                }
            case .refused(let refusal, _):
                logger.notice("notification action refused", metadata: ["action": "\(invocation.action)", "reason": "\(refusal.message)"])
            }
            return submission.outcome
        } catch {
            logger.error("cannot record the notification action", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
