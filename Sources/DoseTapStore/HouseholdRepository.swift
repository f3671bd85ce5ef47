import DoseTapCore
import Foundation
internal import GRDB

/// The household cascade's memory on this agent (#12): the occurrences known from plans, the Stops and
/// Snoozes heard, what this agent did with each slot (each slot is done at most once, across restarts and
/// broker restarts), and the backup alarms that rang here. A row that cannot be read is left out.
public struct HouseholdRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    // MARK: Occurrences

    /// Every known occurrence, earliest first.
    public func occurrences() throws -> [KnownOccurrence] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM household_occurrence ORDER BY at, owner, alarm_id").compactMap(Self.occurrence)
        }
    }

    /// One stored occurrence, or nil for a row that cannot be read. (A function of its own: written as a closure
    /// inside `occurrences()`, Swift 6.3.1's optimiser crashed on it in the release build — "Found outside of
    /// lifetime use", CopyPropagation.)
    private static func occurrence(_ row: Row) -> KnownOccurrence? {
        guard let owner = String.fromDatabaseValue(row["owner"]), let alarm = Int.fromDatabaseValue(row["alarm_id"]),
              let at = Int64.fromDatabaseValue(row["at"]), let label = String.fromDatabaseValue(row["label"]),
              let time = String.fromDatabaseValue(row["time"]), let text = String.fromDatabaseValue(row["targets"]),
              let strings = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return nil }
        let targets = strings.compactMap { try? BackupTarget(parsing: $0) }
        guard targets.count == strings.count else { return nil }
        let heldValue: DatabaseValue = row["held_at"]
        var held: Date?
        if let seconds = Double.fromDatabaseValue(heldValue), seconds.isFinite { held = Date(timeIntervalSince1970: seconds) }
        return KnownOccurrence(key: OccurrenceKey(owner: owner, alarmID: alarm, at: at), label: label, time: time, targets: targets,
                               heldAt: held)
    }

    /// Takes a plan as received (or published): its occurrences from `now` on replace the future ones known
    /// for that alarm; occurrences already under way are kept as they were planned. A withdrawn plan (nil)
    /// removes the future ones. An occurrence planned again as it was keeps when it was first held
    /// (`KnownOccurrence.heldAt`); a new or changed one is held from `now`. Returns whether anything changed.
    @discardableResult
    public func applyPlan(owner: String, alarmID: Int, _ plan: KnownPlan?, now: Date, patience: WritePatience = .standard) throws -> Bool {
        let cut = Int64(now.timeIntervalSince1970.rounded(.down))
        return try database.write(patience: patience) { db in
            func rows() throws -> [String] {
                try Row.fetchAll(db, sql: "SELECT at, label, time, targets FROM household_occurrence WHERE owner = ? AND alarm_id = ? ORDER BY at",
                                 arguments: [owner, alarmID]).map { "\($0)" }
            }
            let before = try rows()
            var held: [Int64: (content: String, at: Double?)] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT at, label, time, targets, held_at FROM household_occurrence WHERE owner = ? AND alarm_id = ? AND at > ?
                """, arguments: [owner, alarmID, cut]) {
                guard let at = Int64.fromDatabaseValue(row["at"]) else { continue }
                let content = "\(String.fromDatabaseValue(row["label"]) ?? "")|\(String.fromDatabaseValue(row["time"]) ?? "")|\(String.fromDatabaseValue(row["targets"]) ?? "")"
                held[at] = (content, Double.fromDatabaseValue(row["held_at"]))
            }
            try db.execute(sql: "DELETE FROM household_occurrence WHERE owner = ? AND alarm_id = ? AND at > ?", arguments: [owner, alarmID, cut])
            if let plan {
                let targets = String(decoding: HouseholdMessage.encode(plan.targets.map(\.description)), as: UTF8.self)
                let content = "\(plan.label)|\(plan.time)|\(targets)"
                for at in plan.occurrences {
                    let since = held[at].flatMap { $0.content == content ? $0.at : nil } ?? now.timeIntervalSince1970
                    // A past occurrence is taken only when it is new to us (a plan heard late, after the broker
                    // came back): one already known keeps the list it was planned with.
                    try db.execute(sql: """
                        INSERT OR IGNORE INTO household_occurrence (owner, alarm_id, at, label, time, targets, held_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [owner, alarmID, at, plan.label, plan.time, targets, since])
                }
            }
            return try rows() != before
        }
    }

    /// Forgets occurrences (and their answers, slots and rings) older than `before`.
    public func prune(before: Date, patience: WritePatience = .standard) throws {
        let cut = Int64(before.timeIntervalSince1970)
        try database.write(patience: patience) { db in
            try db.execute(sql: "DELETE FROM household_occurrence WHERE at < ?", arguments: [cut])
            try db.execute(sql: "DELETE FROM household_answer WHERE occurrence < ?", arguments: [cut])
            try db.execute(sql: "DELETE FROM household_refused WHERE occurrence < ?", arguments: [cut])
            try db.execute(sql: "DELETE FROM household_slot WHERE occurrence < ?", arguments: [cut])
            try db.execute(sql: "DELETE FROM backup_ring WHERE occurrence < ? AND outcome != 'ringing'", arguments: [cut])
        }
    }

    // MARK: Forgotten devices

    /// What forgetting a device removed here.
    public struct Forgotten: Sendable, Equatable {
        /// Its occurrences this device held (past and coming).
        public var occurrences: Int
        /// Whether it had been forgotten before (the moment is moved to now).
        public var again: Bool
    }

    /// Forgets `device` (#51 finding 7): every occurrence of its plans held here, with their answers and slots, and its
    /// plans from now on — until it is heard online after `now` (`remember`). A backup alarm of it ringing here goes on
    /// until Stop (a person hears it).
    @discardableResult
    public func forget(_ device: String, at now: Date) throws -> Forgotten {
        try database.write { db in
            let again = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM household_forgotten WHERE device = ?", arguments: [device]) ?? 0
            let held = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM household_occurrence WHERE owner = ?", arguments: [device]) ?? 0
            try db.execute(sql: "DELETE FROM household_occurrence WHERE owner = ?", arguments: [device])
            try db.execute(sql: "DELETE FROM household_answer WHERE owner = ?", arguments: [device])
            try db.execute(sql: "DELETE FROM household_slot WHERE owner = ?", arguments: [device])
            try db.execute(sql: "INSERT OR REPLACE INTO household_forgotten (device, at) VALUES (?, ?)", arguments: [device, now.timeIntervalSince1970])
            return Forgotten(occurrences: held, again: again > 0)
        }
    }

    /// The devices forgotten, with when.
    public func forgotten() throws -> [String: Date] {
        try database.read { db in
            var out: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT device, at FROM household_forgotten") {
                guard let device = String.fromDatabaseValue(row["device"]), let at = Double.fromDatabaseValue(row["at"]), at.isFinite else { continue }
                out[device] = Date(timeIntervalSince1970: at)
            }
            return out
        }
    }

    /// `device` is a member again (heard online after it was forgotten); returns whether it had been forgotten.
    @discardableResult
    public func remember(_ device: String) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM household_forgotten WHERE device = ?", arguments: [device])
            return db.changesCount > 0
        }
    }

    // MARK: Answers judged forged

    /// Answers judged forged kept at most (the oldest go first): a member can make up answers without end.
    public static let refusedKept = 4096

    /// Remembers that `answer` was judged forged (#51 finding 5).
    public func refuse(_ answer: CascadeAnswer, at now: Date, patience: WritePatience = .standard) throws {
        try database.write(patience: patience) { db in
            try db.execute(sql: "INSERT OR IGNORE INTO household_refused (answer, occurrence, refused_at) VALUES (?, ?, ?)",
                           arguments: [Self.content(answer), answer.key.at, now.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM household_refused WHERE answer NOT IN (SELECT answer FROM household_refused ORDER BY refused_at DESC LIMIT ?)",
                           arguments: [Self.refusedKept])
        }
    }

    /// Whether `answer`, with exactly this content, was judged forged before.
    public func wasRefused(_ answer: CascadeAnswer) throws -> Bool {
        try database.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM household_refused WHERE answer = ?", arguments: [Self.content(answer)]) ?? 0) > 0
        }
    }

    /// An answer's whole content as one key.
    static func content(_ answer: CascadeAnswer) -> String {
        "\(answer.key.owner)|\(answer.key.alarmID)|\(answer.key.at)|\(answer.kind.rawValue)|\(answer.target.map(String.init) ?? "-")|\(answer.at)|\(answer.by)"
    }

    // MARK: Answers

    public func answers() throws -> [CascadeAnswer] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM household_answer ORDER BY at").compactMap { row in
                guard let owner = String.fromDatabaseValue(row["owner"]), let alarm = Int.fromDatabaseValue(row["alarm_id"]),
                      let occurrence = Int64.fromDatabaseValue(row["occurrence"]),
                      let kind = String.fromDatabaseValue(row["kind"]).flatMap(CascadeAnswer.Kind.init(rawValue:)),
                      let at = Int64.fromDatabaseValue(row["at"]), let by = String.fromDatabaseValue(row["by"]) else { return nil }
                return CascadeAnswer(key: OccurrenceKey(owner: owner, alarmID: alarm, at: occurrence), kind: kind,
                                     target: Int.fromDatabaseValue(row["target"]), at: at, by: by)
            }
        }
    }

    /// Records an answer; false when it was known already.
    @discardableResult
    public func record(_ answer: CascadeAnswer, patience: WritePatience = .standard) throws -> Bool {
        try database.write(patience: patience) { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO household_answer (owner, alarm_id, occurrence, kind, target, at, by) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [answer.key.owner, answer.key.alarmID, answer.key.at, answer.kind.rawValue, answer.target, answer.at, answer.by])
            return db.changesCount > 0
        }
    }

    // MARK: Slots

    public func slots() throws -> [SlotKey: SlotOutcome] {
        try database.read { db in
            var result: [SlotKey: SlotOutcome] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM household_slot") {
                guard let owner = String.fromDatabaseValue(row["owner"]), let alarm = Int.fromDatabaseValue(row["alarm_id"]),
                      let occurrence = Int64.fromDatabaseValue(row["occurrence"]), let target = Int.fromDatabaseValue(row["target"]),
                      let at = Int64.fromDatabaseValue(row["at"]),
                      let outcome = String.fromDatabaseValue(row["outcome"]).flatMap(SlotOutcome.init(rawValue:)) else { continue }
                result[SlotKey(occurrence: OccurrenceKey(owner: owner, alarmID: alarm, at: occurrence), target: target, at: at)] = outcome
            }
            return result
        }
    }

    /// Marks a slot. With `expecting`, only when its outcome is that now (nil: the slot is new), so two
    /// writers never both take a slot; returns whether it was written.
    @discardableResult
    public func mark(_ slot: SlotKey, _ outcome: SlotOutcome, expecting: SlotOutcome?, detail: String? = nil, at now: Date,
                     patience: WritePatience = .standard) throws -> Bool {
        try database.write(patience: patience) { db in
            let key: StatementArguments = [slot.occurrence.owner, slot.occurrence.alarmID, slot.occurrence.at, slot.target, slot.at]
            if let expecting {
                try db.execute(sql: """
                    UPDATE household_slot SET outcome = ?, updated_at = ?, detail = ?
                    WHERE owner = ? AND alarm_id = ? AND occurrence = ? AND target = ? AND at = ? AND outcome = ?
                    """, arguments: [outcome.rawValue, now.timeIntervalSince1970, detail] + key + [expecting.rawValue])
            } else {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO household_slot (outcome, updated_at, detail, owner, alarm_id, occurrence, target, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [outcome.rawValue, now.timeIntervalSince1970, detail] + key)
            }
            return db.changesCount > 0
        }
    }

    // MARK: Backup alarms ringing here

    /// A backup alarm that rang (or rings) on this machine.
    public struct BackupRing: Sendable, Equatable, Codable {
        public var id: Int64
        public var slot: SlotKey
        public var label: String
        public var time: String
        public var startedAt: Date
        public var endedAt: Date?
        public var outcome: AlarmRingOutcome
        public var endedBy: AlarmRingEnder?

        /// Ten minutes after it started it gives up (as an alarm does).
        public var givesUpAt: Date { startedAt.addingTimeInterval(AlarmRingRules.ringDuration) }

        /// A ring not (yet) in the store (#51: it rang first, the store could not take it); `id` 0 until it is.
        public init(id: Int64 = 0, slot: SlotKey, label: String, time: String, startedAt: Date, endedAt: Date? = nil,
                    outcome: AlarmRingOutcome = .ringing, endedBy: AlarmRingEnder? = nil) {
            self.id = id
            self.slot = slot
            self.label = label
            self.time = time
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.outcome = outcome
            self.endedBy = endedBy
        }
    }

    /// Starts ringing `slot` (the slot is marked `rang` in the same transaction); nil when it had rung before.
    /// - Parameter patience: how long to wait for another process's write lock (the agent: `.brief`, then it rings first
    ///   and writes later, #51).
    public func startRing(_ slot: SlotKey, label: String, time: String, at now: Date, patience: WritePatience = .standard) throws -> BackupRing? {
        try database.write(patience: patience) { db in
            let key: StatementArguments = [slot.occurrence.owner, slot.occurrence.alarmID, slot.occurrence.at, slot.target, slot.at]
            try db.execute(sql: """
                INSERT OR IGNORE INTO household_slot (outcome, updated_at, detail, owner, alarm_id, occurrence, target, at)
                VALUES ('rang', ?, NULL, ?, ?, ?, ?, ?)
                """, arguments: [now.timeIntervalSince1970] + key)
            guard db.changesCount > 0 else { return nil }
            try db.execute(sql: """
                INSERT INTO backup_ring (owner, alarm_id, occurrence, target, at, label, time, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: key + [label, time, now.timeIntervalSince1970])
            return try Row.fetchOne(db, sql: "SELECT * FROM backup_ring WHERE id = ?", arguments: [db.lastInsertedRowID]).flatMap(Self.decode)
        }
    }

    /// The backup alarm ringing here, if any (the latest).
    public func ringing() throws -> BackupRing? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM backup_ring WHERE outcome = 'ringing' ORDER BY id DESC LIMIT 1").flatMap(Self.decode)
        }
    }

    public func ring(id: Int64) throws -> BackupRing? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM backup_ring WHERE id = ?", arguments: [id]).flatMap(Self.decode)
        }
    }

    /// Ends ring `id` if it still rings (one conditional update: Stop and the timeout never both win).
    public func endRing(id: Int64, outcome: AlarmRingOutcome, by ender: AlarmRingEnder, at now: Date,
                        patience: WritePatience = .standard) throws -> BackupRing? {
        precondition(outcome != .ringing, "a ring ends as stopped, snoozed or missed")
        return try database.write(patience: patience) { db in
            try db.execute(sql: "UPDATE backup_ring SET outcome = ?, ended_by = ?, ended_at = ? WHERE id = ? AND outcome = 'ringing'",
                           arguments: [outcome.rawValue, ender.rawValue, now.timeIntervalSince1970, id])
            guard db.changesCount > 0 else { return nil }
            return try Row.fetchOne(db, sql: "SELECT * FROM backup_ring WHERE id = ?", arguments: [id]).flatMap(Self.decode)
        }
    }

    /// Backup rings that ended with a Stop or Snooze from this machine and not yet told to the household.
    public func untold() throws -> [BackupRing] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM backup_ring WHERE outcome IN ('stopped', 'snoozed') AND ended_by NOT IN ('household', 'changed')
                AND NOT EXISTS (SELECT 1 FROM household_answer a WHERE a.owner = backup_ring.owner AND a.alarm_id = backup_ring.alarm_id
                    AND a.occurrence = backup_ring.occurrence AND a.at = CAST(backup_ring.ended_at AS INTEGER)
                    AND a.kind = CASE backup_ring.outcome WHEN 'stopped' THEN 'stop' ELSE 'snooze' END)
                ORDER BY id
                """).compactMap(Self.decode)
        }
    }

    static func decode(_ row: Row) -> BackupRing? {
        // Each column through one small typed helper (the optimiser of Swift 6.3 crashed on the inline
        // `.fromDatabaseValue(row[…])` chains of an earlier version of this function in a release build).
        func text(_ column: String) -> String? { String.fromDatabaseValue(row[column]) }
        func integer(_ column: String) -> Int64? { Int64.fromDatabaseValue(row[column]) }
        func date(_ column: String) -> Date? {
            guard let seconds = Double.fromDatabaseValue(row[column]), seconds.isFinite else { return nil }
            return Date(timeIntervalSince1970: seconds)
        }
        guard let id = integer("id"), let owner = text("owner"), let alarm = integer("alarm_id"), let occurrence = integer("occurrence"),
              let target = integer("target"), let at = integer("at"), let label = text("label"), let time = text("time"),
              let started = date("started_at"), let outcomeText = text("outcome"), let outcome = AlarmRingOutcome(rawValue: outcomeText),
              let alarmID = Int(exactly: alarm), let targetIndex = Int(exactly: target) else { return nil }
        let endedBy = text("ended_by").flatMap(AlarmRingEnder.init(rawValue:))
        return BackupRing(id: id, slot: SlotKey(occurrence: OccurrenceKey(owner: owner, alarmID: alarmID, at: occurrence), target: targetIndex, at: at),
                          label: label, time: time, startedAt: started, endedAt: date("ended_at"), outcome: outcome, endedBy: endedBy)
    }
}
