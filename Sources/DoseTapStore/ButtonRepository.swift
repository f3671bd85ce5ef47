import DoseTapCore
import Foundation
internal import GRDB

/// The buttons the person added (the allowlist), with their mappings and bindkeys.
public struct ButtonRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    public func all() throws -> [ButtonConfig] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT address, kind, name, bindkey, mapping FROM button ORDER BY added_at, address").compactMap { row in
                guard let kind = ButtonKind(rawValue: row["kind"]),
                      let mapping = try? JSONDecoder().decode(ButtonMapping.self, from: Data((row["mapping"] as String).utf8)),
                      let config = try? ButtonConfig(address: row["address"], kind: kind, name: row["name"], bindkey: row["bindkey"],
                                                     mapping: mapping) else { return nil }
                return config
            }
        }
    }

    public func find(address: String) throws -> ButtonConfig? {
        guard let normalized = ButtonConfig.normalize(address: address) else { return nil }
        return try all().first { $0.address == normalized }
    }

    /// Adds or replaces a button.
    public func save(_ button: ButtonConfig, now: Date = Date()) throws {
        let mapping = String(decoding: try JSONEncoder().encode(button.mapping), as: UTF8.self)
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO button (address, kind, name, bindkey, mapping, added_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(address) DO UPDATE SET kind = excluded.kind, name = excluded.name, bindkey = excluded.bindkey,
                mapping = excluded.mapping
                """, arguments: [button.address, button.kind.rawValue, button.name, button.bindkey, mapping, now.timeIntervalSince1970])
        }
    }

    /// Removes a button; false when there was none.
    @discardableResult
    public func remove(address: String) throws -> Bool {
        guard let normalized = ButtonConfig.normalize(address: address) else { return false }
        return try database.write { db in
            try db.execute(sql: "DELETE FROM button WHERE address = ?", arguments: [normalized])
            return db.changesCount > 0
        }
    }
}
