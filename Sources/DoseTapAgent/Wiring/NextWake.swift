import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging

extension Agent {
    /// When the machine must next be awake, read fresh at each call (the sleep guard calls it as the machine
    /// is about to suspend): the earliest of the next occurrence of every enabled alarm and the night's next
    /// dose reminder not yet rung (`ReminderPlanner.nextDue`, as `DoseScheduler` plans it), and the end of
    /// every snooze in progress (a snooze is an occurrence too). A store that cannot be read is logged and
    /// counts as nothing.
    public static func nextWake(alarms: AlarmRepository, doses: DoseRepository, clock: any WallClock,
                                logger: Logger) -> @Sendable () -> Date? {
        {
            let now = clock.now()
            var enabled: [Alarm] = []
            var snoozes: [Date?] = []
            var reminder: Date?
            do {
                let tracks = try AlarmRingRepository(database: alarms.database).tracks()
                enabled = tracks.map(\.alarm).filter(\.enabled)
                snoozes = tracks.flatMap { AlarmPlanner.pending($0, in: clock.timeZone) }.filter { $0.kind == .snooze }.map(\.dueAt)
            } catch {
                logger.error("cannot read the alarms to arm the wake-up", metadata: ["error": "\(error)"])
            }
            do {
                if let session = try doses.recentLog(now: now).sessions.last {
                    reminder = ReminderPlanner.nextDue(session, fired: try doses.firedReminders(session: session.id), now: now)
                }
            } catch {
                logger.error("cannot read the dose log to arm the wake-up", metadata: ["error": "\(error)"])
            }
            return WakeTarget.next(alarms: enabled, others: [reminder] + snoozes, after: now, in: clock.timeZone)
        }
    }
}
