import DoseTapCore
import Foundation
internal import GRDB

/// The result of one dose input, decided and (when accepted) committed in one transaction.
public enum DoseOutcome: Sendable {
    case recorded(DoseEvent, confirmation: String, status: NightStatus)
    case refused(DoseRefusal, status: NightStatus)
}

/// The append-only dose log. Every input runs its policy check and its insert inside one
/// `BEGIN IMMEDIATE` transaction, so two processes pressing "take" at the same instant record one dose:
/// the second waits for the first to commit, then decides on the log that includes it.
public struct DoseRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// How far back the current night's events can be: a night lasts 270 minutes, plus the same night's
    /// date boundary. Two days is ample and keeps the read small.
    static let recentHorizon = DoseEventRow.recentHorizon

    public func submit(_ input: DoseInput, now: Date, timeZone: TimeZone) throws -> DoseOutcome {
        let database = self.database
        return try database.writeWithoutTransaction { db in
            var outcome: DoseOutcome!
            var pendingCache: DoseLogCache?
            try db.inTransaction(.immediate) {
                // Under the write lock: the log read here is the one the decision and the insert see.
                let since = now.addingTimeInterval(-Self.recentHorizon)
                let version = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? -1
                let writes = database.localWrites.load(ordering: .sequentiallyConsistent)
                var cached = database.doseLogCache.withLock { $0 }
                if let c = cached, c.dataVersion != version || c.localWrites != writes || since < c.since {
                    cached = nil
                }
                var current: DoseLogCache
                if let cached {
                    current = cached
                    // The same window a fresh read would give: events since the horizon, plus the last 64.
                    let cutoff = current.events.count - 64
                    if cutoff > 0, current.events[..<cutoff].contains(where: { $0.at < since }) {
                        current.events = current.events.enumerated()
                            .filter { $0.offset >= cutoff || $0.element.at >= since }.map(\.element)
                    }
                } else {
                    let read = try Self.events(db, since: since)
                    current = DoseLogCache(dataVersion: version, localWrites: writes, since: since, events: read.events,
                                           unreadable: read.unreadable, setAside: read.setAside, discarded: read.discarded,
                                           settings: try SettingsRepository.load(db))
                }
                let log = DoseLog(events: current.events, unreadable: current.unreadable, setAside: current.setAside,
                                  discarded: current.discarded, now: now)
                // An event seen dated in the future is remembered so, whatever this input's outcome (#51).
                let remembered = try Self.rememberSetAside(log.newlySetAside, now: now, db)
                if remembered { current.setAside.formUnion(log.newlySetAside) }
                switch DosePolicy.decide(input, log: log, now: now, timeZone: timeZone,
                                         targetMinutes: current.settings.dose2TargetMinutes) {
                case .refuse(let refusal):
                    // Nothing written (or only the marks): the next decision may use the same read (this write adds one).
                    var kept = current
                    kept.localWrites = writes + 1
                    database.doseLogCache.withLock { $0 = remembered ? nil : kept }
                    outcome = .refused(refusal, status: log.status(at: now, in: timeZone))
                    if remembered { pendingCache = kept }
                    return remembered ? .commit : .rollback
                case .record(let kind, let confirmation):
                    let event = DoseEvent(id: UUID(), kind: kind, at: now, timeZone: timeZone.identifier, source: input.source)
                    try Self.insert(event, db)
                    var after = current
                    after.events.append(event)
                    if case .discard(let target) = kind {
                        try db.execute(sql: """
                            INSERT INTO dose_event_future (id, seen_at, discarded_at) VALUES (?, ?, ?)
                            ON CONFLICT (id) DO UPDATE SET discarded_at = excluded.discarded_at
                            """, arguments: [target.uuidString, now.timeIntervalSince1970, now.timeIntervalSince1970])
                        after.setAside.insert(target)
                        after.discarded.insert(target)
                    }
                    after.localWrites = writes + 1
                    // Kept only once the commit succeeded (below); a failed commit leaves no cache.
                    database.doseLogCache.withLock { $0 = nil }
                    let folded = DoseLog(events: after.events, unreadable: after.unreadable, setAside: after.setAside,
                                         discarded: after.discarded, now: now)
                    outcome = .recorded(event, confirmation: confirmation, status: folded.status(at: now, in: timeZone))
                    pendingCache = after
                    return .commit
                }
            }
            if let pending = pendingCache { database.doseLogCache.withLock { $0 = pending } }
            return outcome
        }
    }

    /// Remembers events as set aside (seen dated in the future); true when a row was added.
    static func rememberSetAside(_ ids: [UUID], now: Date, _ db: Database) throws -> Bool {
        guard !ids.isEmpty else { return false }
        let before = db.totalChangesCount
        for id in ids {
            try db.execute(sql: "INSERT OR IGNORE INTO dose_event_future (id, seen_at) VALUES (?, ?)",
                           arguments: [id.uuidString, now.timeIntervalSince1970])
        }
        return db.totalChangesCount > before
    }

    /// Remembers the events a read found dated in the future (`DoseLog.newlySetAside`), so they stay set aside when
    /// their date comes (the agent calls this as it reads the log).
    public func rememberSetAside(_ ids: [UUID], now: Date, patience: WritePatience = .standard) throws {
        guard !ids.isEmpty else { return }
        try database.write(patience: patience) { db in _ = try Self.rememberSetAside(ids, now: now, db) }
    }

    /// The night as it stands at `now`. Unreadable entries in the recent log are an error
    /// (`UnreadableLog`): showing "idle" over a Dose 1 that cannot be read could lead to a second one.
    public func status(now: Date, timeZone: TimeZone) throws -> NightStatus {
        let log = try recentLog(now: now)
        guard log.unreadable.isEmpty else { throw UnreadableLog(seqs: log.unreadable) }
        return log.status(at: now, in: timeZone)
    }

    /// The recent log (the current night and the one before) as it stands at `now`, with its unreadable entries
    /// listed and its events dated in the future set aside.
    public func recentLog(now: Date) throws -> DoseLog {
        try database.read { db in
            let read = try Self.events(db, since: now.addingTimeInterval(-Self.recentHorizon))
            return DoseLog(events: read.events, unreadable: read.unreadable, setAside: read.setAside,
                           discarded: read.discarded, now: now)
        }
    }

    /// The whole log as it stands at `now` (events dated in the future set aside).
    public func wholeLog(now: Date) throws -> DoseLog {
        try database.read { db in
            let read = try Self.events(db, since: nil)
            return DoseLog(events: read.events, unreadable: read.unreadable, setAside: read.setAside,
                           discarded: read.discarded, now: now)
        }
    }

    /// The whole log, in order, with the `seq` of every entry that could not be read.
    public func readAll() throws -> (events: [DoseEvent], unreadable: [Int64]) {
        try database.read { db in
            let read = try Self.events(db, since: nil)
            return (read.events, read.unreadable)
        }
    }

    /// The whole log, in order; unreadable entries are an error (`UnreadableLog`).
    public func allEvents() throws -> [DoseEvent] {
        let (events, unreadable) = try readAll()
        guard unreadable.isEmpty else { throw UnreadableLog(seqs: unreadable) }
        return events
    }

    /// An unreadable entry as it is stored: its columns as text (for `dosetap data unreadable`).
    public struct RawEntry: Sendable, Equatable {
        public var seq: Int64
        public var columns: [(name: String, value: String)]
        public var ignored: Bool
        public static func == (a: RawEntry, b: RawEntry) -> Bool {
            a.seq == b.seq && a.ignored == b.ignored && a.columns.map(\.name) == b.columns.map(\.name)
                && a.columns.map(\.value) == b.columns.map(\.value)
        }
    }

    /// Every entry that cannot be read, ignored or not, oldest first.
    public func unreadableEntries() throws -> [RawEntry] {
        try database.read { db in
            let ignored = Set(try Int64.fetchAll(db, sql: "SELECT seq FROM dose_event_ignored"))
            var out: [RawEntry] = []
            let rows = try Row.fetchCursor(db, sql: DoseEventRow.allSQL)
            while let row = try rows.next() {
                guard Self.decode(row) == nil else { continue }
                let seq = Int64.fromDatabaseValue(row[6] as DatabaseValue) ?? -1
                let names = ["id", "kind", "at", "time_zone", "source", "payload"]
                let columns = names.enumerated().map { (i, name) in (name, Self.rawText(row[i] as DatabaseValue)) }
                out.append(RawEntry(seq: seq, columns: columns, ignored: ignored.contains(seq)))
            }
            return out
        }
    }

    /// Sets unreadable entries aside: they stay in the log, and the policy stops counting them.
    /// Only unreadable entries can be set aside (the rest of the log is append-only).
    public func ignoreUnreadable(_ seqs: [Int64], now: Date) throws {
        try database.write { db in
            for seq in seqs {
                guard let row = try Row.fetchOne(db, sql: DoseEventRow.entrySQL, arguments: [seq]) else {
                    throw StoreError("no entry \(seq) in the dose log")
                }
                guard Self.decode(row) == nil else {
                    throw StoreError("entry \(seq) of the dose log is readable: only unreadable entries can be set aside (undo a dose with dosetap dose undo)")
                }
                try db.execute(sql: "INSERT OR IGNORE INTO dose_event_ignored (seq, ignored_at) VALUES (?, ?)",
                               arguments: [seq, now.timeIntervalSince1970])
            }
        }
    }

    static func rawText(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "NULL"
        case .int64(let i): String(i)
        case .double(let d): String(d)
        case .string(let s): "'\(s)'"
        case .blob(let data): "x'" + data.prefix(64).map { String(format: "%02x", $0) }.joined() + (data.count > 64 ? "…" : "") + "'"
        }
    }

    public func count() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dose_event") ?? 0 }
    }

    /// The reminders already fired for a night.
    public func firedReminders(session: UUID) throws -> Set<Reminder> {
        try database.read { db in
            Set(try Row.fetchAll(db, sql: "SELECT kind, due_at FROM reminder_fired WHERE session_id = ?",
                                 arguments: [session.uuidString]).compactMap { row -> Reminder? in
                guard let kind = String.fromDatabaseValue(row["kind"]).flatMap(ReminderKind.init(rawValue:)),
                      let due = Double.fromDatabaseValue(row["due_at"]), due.isFinite else { return nil }
                return Reminder(kind: kind, sessionID: session, dueAt: Date(timeIntervalSince1970: due))
            })
        }
    }

    /// Remembers that reminders were fired (or made pointless), so a restart never repeats them.
    public func markFired(_ reminders: [Reminder], at now: Date, patience: WritePatience = .standard) throws {
        guard !reminders.isEmpty else { return }
        try database.write(patience: patience) { db in
            for r in reminders {
                try db.execute(sql: "INSERT OR IGNORE INTO reminder_fired (session_id, kind, due_at, fired_at) VALUES (?, ?, ?, ?)",
                               arguments: [r.sessionID.uuidString, r.kind.rawValue, r.dueAt.timeIntervalSince1970, now.timeIntervalSince1970])
            }
        }
    }

    /// Inserts events as they are (imports, benchmarks, tests). Each must be new.
    public func append(_ events: [DoseEvent]) throws {
        try database.write { db in
            for event in events { try Self.insert(event, db) }
        }
    }

    /// What one read of the log gives.
    struct Read {
        var events: [DoseEvent]
        var unreadable: [Int64]
        /// Remembered as set aside (dated in the future when first seen), and those of them discarded.
        var setAside: Set<UUID>
        var discarded: Set<UUID>
    }

    /// The log since `since` (the recent rows, DoseEventRow.recentSQL) or all of it, in order, with the `seq` of
    /// every entry that cannot be read and is not set aside, and the events remembered as set aside.
    static func events(_ db: Database, since: Date?) throws -> Read {
        // The SQL and the decoding are DoseEventRow's, shared with the one-shot front (#29).
        let ignored = Set(try Int64.fetchAll(db, sql: DoseEventRow.ignoredSQL))
        let marks = DoseEventRow.setAsideMarks(try Row.fetchAll(db, sql: DoseEventRow.setAsideSQL).map(stored))
        let rows = try since.map { try Row.fetchCursor(db, sql: DoseEventRow.recentSQL, arguments: [$0.timeIntervalSince1970]) }
            ?? Row.fetchCursor(db, sql: DoseEventRow.allSQL)
        var events: [DoseEvent] = []
        var unreadable: [Int64] = []
        while let row = try rows.next() {
            let seq = Int64.fromDatabaseValue(row[6] as DatabaseValue) ?? -1
            if let event = decode(row) {
                events.append(event)
            } else if !ignored.contains(seq) {
                unreadable.append(seq)
            }
        }
        return Read(events: events, unreadable: unreadable, setAside: marks.setAside, discarded: marks.discarded)
    }

    /// A row's columns by their storage classes (DoseEventRow decodes them).
    static func stored(_ row: Row) -> [StoredValue] {
        (0..<row.count).map { i in
            switch (row[i] as DatabaseValue).storage {
            case .null: .null
            case .int64(let v): .integer(v)
            case .double(let v): .real(v)
            case .string(let v): .text(v)
            case .blob: .blob
            }
        }
    }

    /// The event a row of `SELECT \(DoseEventRow.columns) …` holds, or nil.
    static func decode(_ row: Row) -> DoseEvent? {
        DoseEventRow.decode(stored(row))
    }

    static func insert(_ event: DoseEvent, _ db: Database) throws {
        let (kind, payload): (String, [String: Any])
        switch event.kind {
        case .dose1(let target): (kind, payload) = ("dose1", ["targetMinutes": target])
        case .dose2(let late): (kind, payload) = ("dose2", ["late": late])
        case .snooze: (kind, payload) = ("snooze", [:])
        case .skip(let reason): (kind, payload) = ("skip", reason.map { ["reason": $0.rawValue] } ?? [:])
        case .undo(let target): (kind, payload) = ("undo", ["undoes": target.uuidString])
        case .discard(let target): (kind, payload) = ("discard", ["discards": target.uuidString])
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [event.id.uuidString, kind, event.at.timeIntervalSince1970, event.timeZone, event.source.rawValue, json])
    }
}
