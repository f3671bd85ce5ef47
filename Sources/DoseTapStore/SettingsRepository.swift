import DoseTapCore
import Foundation
internal import GRDB

/// Settings as JSON values in a key/value table.
public struct SettingsRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    public func load() throws -> UserSettings {
        try database.read { db in try Self.load(db) }
    }

    public func save(_ settings: UserSettings) throws {
        let data = try JSONEncoder().encode(settings)
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('user', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [String(decoding: data, as: UTF8.self)])
        }
    }

    public func loadFeedback() throws -> FeedbackSettings {
        try database.read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'feedback'") else { return FeedbackSettings() }
            return (try? JSONDecoder().decode(FeedbackSettings.self, from: Data(text.utf8))) ?? FeedbackSettings()
        }
    }

    public func saveFeedback(_ settings: FeedbackSettings) throws {
        let data = try JSONEncoder().encode(settings)
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES ('feedback', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [String(decoding: data, as: UTF8.self)])
        }
    }

    static func load(_ db: Database) throws -> UserSettings {
        guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'user'") else { return .defaults }
        return ((try? JSONDecoder().decode(UserSettings.self, from: Data(text.utf8))) ?? .defaults).repaired()
    }
}
