import DoseTapCore
import Foundation
internal import GRDB

/// What the machine taught the forecast about its nights (`NightLearning`: its drain asleep, its
/// evenings, the logind facts last read), kept so a restart keeps what was learned. A JSON value in the
/// `setting` table (key `night-learning`): no migration of its own. A value that cannot be read counts as
/// nothing learned yet (the forecast then uses the stated prior and plans the machine awake), and is
/// replaced at the next save.
public struct NightLearningRepository: Sendable {
    public let database: DoseTapDatabase
    static let key = SettingRow.nightLearningKey

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// What was learned (`SettingRow.nightLearning`, shared with the one-shot front: read without JSONDecoder).
    public func load() throws -> NightLearning {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: SettingRow.valueSQL, arguments: [Self.key])
            return SettingRow.nightLearning(row.map { DoseRepository.stored($0) }?.first)
        }
    }

    public func save(_ learning: NightLearning) throws {
        let data = try JSONEncoder().encode(learning)
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [Self.key, String(decoding: data, as: UTF8.self)])
        }
    }
}
