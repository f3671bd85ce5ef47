import DoseTapCore
import Foundation

/// The recent dose log folded once and kept, so a burst of presses does not read and decode the log for
/// every decision. Valid while no other connection committed (`data_version`) and nothing else was
/// written through the same instance (`localWrites`), and only for a horizon no earlier than `since`.
struct DoseLogCache: Sendable {
    var dataVersion: Int64
    var localWrites: Int
    var since: Date
    var events: [DoseEvent]
    var unreadable: [Int64]
    /// The events remembered as set aside, and those of them discarded (`dose_event_future`).
    var setAside: Set<UUID>
    var discarded: Set<UUID>
    var settings: UserSettings
}
