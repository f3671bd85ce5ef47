import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

extension AlarmRiskMonitor.Guardian {
    /// The machine's side of the deadline guard (#52 §3): logind on the system bus (connected at the first deadline
    /// that needs it, then kept: no bus traffic on an ordinary evening), the wake-up's capability read anew at each
    /// decision (a machine that cannot wake itself is never suspended), and a desktop notification without sound (the
    /// deadline nudge just sounded).
    public static func logind(connect: @escaping @Sendable () throws -> DBusConnection, wake: any WakeAlarm,
                              desktop: DesktopNotifications?, logger: Logger) -> Self {
        let client = Mutex<LogindClient?>(nil)
        @Sendable func logind() throws -> LogindClient {
            try client.withLock { held in
                if let held { return held }
                let made = LogindClient(connection: try connect(), logger: logger)
                held = made
                return made
            }
        }
        @Sendable func cannotWake() -> String? {
            if case .failure(let problem) = wake.capability() { return problem.reason }
            return nil
        }
        return Self(
            facts: {
                let cannotWake = cannotWake()
                do {
                    return try await logind().guardFacts(cannotWake: cannotWake)
                } catch {
                    logger.notice("the sleep guard cannot reach logind on the system bus",
                                  metadata: ["error": "\(DisplayText.escaped("\(error)", maxLength: 500))"])
                    return GuardFacts(idle: false, cannotWake: cannotWake, canSuspend: nil)
                }
            },
            notify: { text in
                guard let desktop else { return }
                do {
                    try await desktop.notify(title: text, body: "The alarm's deadline has come and nobody is using this machine: "
                                             + "asleep, its battery lasts; the alarm wakes it.",
                                             urgency: .normal, soundName: nil, suppressSound: true, actions: [], category: "x-dosetap.battery")
                } catch {
                    logger.notice("the sleep guard's notification was not shown",
                                  metadata: ["error": "\(DisplayText.escaped("\(error)", maxLength: 500))"])
                }
            },
            suspend: { try await logind().suspend() },
            cannotWake: cannotWake)
    }
}
