import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle

/// The buttons on DoseTap's notifications — Take Now, Snooze 10min, Skip — decided by the dose engine's
/// one policy, with the outcome played back as "dose recorded" or "action rejected" feedback.
/// Buttons of other applications' notifications are ignored.
public final class NotificationActions: Service, Sendable, CustomStringConvertible {
    public var description: String { "NotificationActions" }

    private let desktop: DesktopNotifications
    private let feedback: FeedbackNotifier
    private let repository: DoseRepository
    private let clock: any WallClock
    private let logger: Logger
    private let onRecorded: @Sendable () -> Void

    public init(desktop: DesktopNotifications, feedback: FeedbackNotifier, repository: DoseRepository, clock: any WallClock,
                logger: Logger, onRecorded: @escaping @Sendable () -> Void = {}) {
        self.desktop = desktop
        self.feedback = feedback
        self.repository = repository
        self.clock = clock
        self.logger = logger
        self.onRecorded = onRecorded
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
        let now = clock.now()
        do {
            let outcome = try repository.submit(DoseInput(command: command, source: .notification, issuedAt: now),
                                                now: now, timeZone: clock.timeZone)
            switch outcome {
            case .recorded(_, let confirmation, _):
                logger.notice("notification action recorded", metadata: ["action": "\(invocation.action)", "result": "\(confirmation)"])
                onRecorded()
                await feedback.play(.doseRecorded, title: confirmation, body: "")
            case .refused(let refusal, _):
                logger.notice("notification action refused", metadata: ["action": "\(invocation.action)", "reason": "\(refusal.message)"])
                await feedback.play(.actionRejected, title: refusal.message, body: "")
            }
            return outcome
        } catch {
            logger.error("cannot record the notification action", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
