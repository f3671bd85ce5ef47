import DoseTapCore
import Foundation
internal import GRDB

/// What the overnight re-check has already said about each alarm's occurrence (`AlarmRiskTracker.Mark`),
/// kept so a restart of the agent never repeats a nudge. A JSON value in the `setting` table (key
/// `alarm-risk`): no migration of its own. A value that cannot be read counts as nothing said yet.
public struct AlarmRiskRepository: Sendable {
    public let database: DoseTapDatabase
    static let key = "alarm-risk"

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    public func load() throws -> [AlarmRiskTracker.Mark] {
        try database.read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [Self.key])
            else { return [] }
            return (try? JSONDecoder().decode([AlarmRiskTracker.Mark].self, from: Data(text.utf8))) ?? []
        }
    }

    public func save(_ marks: [AlarmRiskTracker.Mark]) throws {
        let data = try JSONEncoder().encode(marks)
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [Self.key, String(decoding: data, as: UTF8.self)])
        }
    }
}
