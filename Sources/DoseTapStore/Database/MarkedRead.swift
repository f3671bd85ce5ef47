import Foundation
import Synchronization

/// A value read from the database and kept while nothing it can depend on was committed: while the database's
/// `changeMark()` is the one it was read at. For a reader that runs at every battery reading (the alarm re-check,
/// the usage alerts, #29): on the agent's own sample the mark stays, and it answers from memory instead of reading
/// the file again through a reader connection (whose page cache the sample's commit emptied: on a machine that
/// reclaims cold page cache, a wait on the disk). Only for what no `wakesPlanners: false` write changes
/// (everything but the battery samples). Without a mark (a database opened for reading, the writer unreachable)
/// every call reads.
public final class MarkedRead<Value: Sendable>: Sendable {
    private let database: DoseTapDatabase
    private let kept = Mutex<(mark: DoseTapDatabase.ChangeMark, value: Value)?>(nil)

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// The kept value if the mark has not moved since it was read, else `read()`'s (kept with the mark taken
    /// before it ran: a commit during the read moves the mark, and the next call reads again). A read that
    /// throws leaves what was kept.
    public func value(_ read: () throws -> Value) throws -> Value {
        let mark = database.changeMark()
        if let mark, let kept = kept.withLock({ $0 }), kept.mark == mark { return kept.value }
        let value = try read()
        if let mark { kept.withLock { $0 = (mark, value) } }
        return value
    }
}
