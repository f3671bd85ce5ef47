import DoseTapCore
import Foundation
import GRDB

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
    static let recentHorizon: TimeInterval = 48 * 3600

    public func submit(_ input: DoseInput, now: Date, timeZone: TimeZone) throws -> DoseOutcome {
        try database.writer.writeWithoutTransaction { db in
            var outcome: DoseOutcome!
            try db.inTransaction(.immediate) {
                let settings = try SettingsRepository.load(db)
                let log = DoseLog(events: try Self.events(db, since: now.addingTimeInterval(-Self.recentHorizon)))
                switch DosePolicy.decide(input, log: log, now: now, timeZone: timeZone,
                                         targetMinutes: settings.dose2TargetMinutes) {
                case .refuse(let refusal):
                    outcome = .refused(refusal, status: log.status(at: now, in: timeZone))
                    return .rollback
                case .record(let kind, let confirmation):
                    let event = DoseEvent(id: UUID(), kind: kind, at: now, timeZone: timeZone.identifier, source: input.source)
                    try Self.insert(event, db)
                    let after = DoseLog(events: log.events + [event])
                    outcome = .recorded(event, confirmation: confirmation, status: after.status(at: now, in: timeZone))
                    return .commit
                }
            }
            return outcome
        }
    }

    /// The night as it stands at `now`.
    public func status(now: Date, timeZone: TimeZone) throws -> NightStatus {
        try recentLog(now: now).status(at: now, in: timeZone)
    }

    public func recentLog(now: Date) throws -> DoseLog {
        try database.writer.read { db in
            DoseLog(events: try Self.events(db, since: now.addingTimeInterval(-Self.recentHorizon)))
        }
    }

    /// The whole log, in order.
    public func allEvents() throws -> [DoseEvent] {
        try database.writer.read { db in try Self.events(db, since: nil) }
    }

    public func count() throws -> Int {
        try database.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dose_event") ?? 0 }
    }

    /// The reminders already fired for a night.
    public func firedReminders(session: UUID) throws -> Set<Reminder> {
        try database.writer.read { db in
            Set(try Row.fetchAll(db, sql: "SELECT kind, due_at FROM reminder_fired WHERE session_id = ?",
                                 arguments: [session.uuidString]).compactMap { row in
                ReminderKind(rawValue: row["kind"]).map {
                    Reminder(kind: $0, sessionID: session, dueAt: Date(timeIntervalSince1970: row["due_at"]))
                }
            })
        }
    }

    /// Remembers that reminders were fired (or made pointless), so a restart never repeats them.
    public func markFired(_ reminders: [Reminder], at now: Date) throws {
        guard !reminders.isEmpty else { return }
        try database.writer.write { db in
            for r in reminders {
                try db.execute(sql: "INSERT OR IGNORE INTO reminder_fired (session_id, kind, due_at, fired_at) VALUES (?, ?, ?, ?)",
                               arguments: [r.sessionID.uuidString, r.kind.rawValue, r.dueAt.timeIntervalSince1970, now.timeIntervalSince1970])
            }
        }
    }

    /// Inserts events as they are (imports, benchmarks, tests). Each must be new.
    public func append(_ events: [DoseEvent]) throws {
        try database.writer.write { db in
            for event in events { try Self.insert(event, db) }
        }
    }

    static func events(_ db: Database, since: Date?) throws -> [DoseEvent] {
        var sql = "SELECT id, kind, at, time_zone, source, payload FROM dose_event"
        var arguments: StatementArguments = []
        if let since {
            // Two index searches (a plain OR would scan the whole log on every decision).
            sql += """
                 WHERE seq IN (SELECT seq FROM dose_event WHERE at >= ?
                               UNION SELECT seq FROM dose_event WHERE seq >= (SELECT COALESCE(MAX(seq), 0) - 64 FROM dose_event))
                """
            arguments = [since.timeIntervalSince1970]
        }
        sql += " ORDER BY seq"
        return try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap(decode)
    }

    static func decode(_ row: Row) -> DoseEvent? {
        // Columns by position, in the order of the SELECT above.
        guard let id = UUID(uuidString: row[0]),
              let source = InputSource(rawValue: row[4]) else { return nil }
        let text: String = row[5]
        let payload = text == "{}" ? [:] : (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        let kind: DoseEvent.Kind
        switch row[1] as String {
        case "dose1": kind = .dose1(targetMinutes: payload["targetMinutes"] as? Int ?? DoseRules.defaultTarget)
        case "dose2": kind = .dose2(late: payload["late"] as? Bool ?? false)
        case "snooze": kind = .snooze
        case "skip": kind = .skip((payload["reason"] as? String).flatMap(SkipReason.init(rawValue:)))
        case "undo":
            guard let target = (payload["undoes"] as? String).flatMap(UUID.init(uuidString:)) else { return nil }
            kind = .undo(of: target)
        default: return nil
        }
        return DoseEvent(id: id, kind: kind, at: Date(timeIntervalSince1970: row[2]), timeZone: row[3], source: source)
    }

    static func insert(_ event: DoseEvent, _ db: Database) throws {
        let (kind, payload): (String, [String: Any])
        switch event.kind {
        case .dose1(let target): (kind, payload) = ("dose1", ["targetMinutes": target])
        case .dose2(let late): (kind, payload) = ("dose2", ["late": late])
        case .snooze: (kind, payload) = ("snooze", [:])
        case .skip(let reason): (kind, payload) = ("skip", reason.map { ["reason": $0.rawValue] } ?? [:])
        case .undo(let target): (kind, payload) = ("undo", ["undoes": target.uuidString])
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]), as: UTF8.self)
        try db.execute(
            sql: "INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [event.id.uuidString, kind, event.at.timeIntervalSince1970, event.timeZone, event.source.rawValue, json])
    }
}

/// Settings as JSON values in a key/value table.
public struct SettingsRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    public func load() throws -> UserSettings {
        try database.writer.read { db in try Self.load(db) }
    }

    public func save(_ settings: UserSettings) throws {
        let data = try JSONEncoder().encode(settings)
        try database.writer.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('user', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [String(decoding: data, as: UTF8.self)])
        }
    }

    public func loadFeedback() throws -> FeedbackSettings {
        try database.writer.read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'feedback'") else { return FeedbackSettings() }
            return (try? JSONDecoder().decode(FeedbackSettings.self, from: Data(text.utf8))) ?? FeedbackSettings()
        }
    }

    public func saveFeedback(_ settings: FeedbackSettings) throws {
        let data = try JSONEncoder().encode(settings)
        try database.writer.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('feedback', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [String(decoding: data, as: UTF8.self)])
        }
    }

    static func load(_ db: Database) throws -> UserSettings {
        guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'user'") else { return .defaults }
        return (try? JSONDecoder().decode(UserSettings.self, from: Data(text.utf8))) ?? .defaults
    }
}
