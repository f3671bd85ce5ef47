import Foundation
import Synchronization

/// Whether a burst of changes in the data folder must wake the agent's planners (the scheduler, the alarms, the
/// household, the buttons, Home Assistant, the dashboard's streams: `DirectoryWatcher`'s subscribers). Not when
/// the burst touched only the database's own files and nothing that may change a plan was committed since the
/// last burst: the agent's own battery sample, written with `wakesPlanners: false` (the monitor publishes it on
/// the event bus, where whoever shows the battery hears it). Every other burst wakes them: another file of the
/// folder, a commit of another process (the command line), a write of this process that may change a plan, and
/// a mark that cannot be read (fail closed: one look too many, never one too few).
///
/// A writer of another process is seen by the event that follows its commit being visible (`announceCommit`, or
/// its close): the appends before that may come before the commit is visible, and then find the mark unmoved.
public final class DatabaseChangeGate: Sendable {
    private let database: DoseTapDatabase
    /// The database file and its companions (WAL, shared-memory index, rollback journal), by name.
    private let files: Set<String>
    /// The mark at the last burst (at first: when the gate was made, before the planners first plan).
    private let last: Mutex<DoseTapDatabase.ChangeMark?>

    /// Make it before the planners first read the database (the agent's wiring does): what was committed before
    /// that is in their first plan.
    public init(database: DoseTapDatabase) {
        self.database = database
        let name = URL(fileURLWithPath: database.path).lastPathComponent
        files = [name, name + "-wal", name + "-shm", name + "-journal"]
        last = Mutex(database.changeMark())
    }

    /// Decides for one burst, given the names of the files it changed ("" for an event without a name).
    public func wakes(changed names: Set<String>) -> Bool {
        last.withLock { last in
            let mark = database.changeMark()
            defer { last = mark }
            guard names.isSubset(of: files), let mark, let previous = last else { return true }
            return mark != previous
        }
    }
}
