import DoseTapCore
import Foundation
internal import GRDB

/// A row of the `button` table that cannot be used (written by an older version, or edited by hand):
/// its button never acts, and the agent and `button list` say why.
public struct UnusableButton: Sendable, Equatable {
    /// The address as stored.
    public var address: String
    /// One line: what is wrong with the row.
    public var reason: String
}

/// The buttons the person added (the allowlist), with their mappings and bindkeys.
public struct ButtonRepository: Sendable {
    public let database: DoseTapDatabase

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// The usable buttons. A row that is not one (see `unusable()`) is left out: fail closed.
    public func all() throws -> [ButtonConfig] {
        try load().buttons
    }

    /// The rows that cannot be used, with the reason.
    public func unusable() throws -> [UnusableButton] {
        try load().unusable
    }

    /// Every row, sorted into usable buttons and unusable rows.
    public func load() throws -> (buttons: [ButtonConfig], unusable: [UnusableButton]) {
        try database.read { db in
            var buttons: [ButtonConfig] = []
            var unusable: [UnusableButton] = []
            for row in try Row.fetchAll(db, sql: "SELECT address, kind, name, bindkey, mapping FROM button ORDER BY added_at, address") {
                let address = String.fromDatabaseValue(row["address"]) ?? ""
                switch Self.decode(row) {
                case .success(let config): buttons.append(config)
                case .failure(let problem): unusable.append(UnusableButton(address: address, reason: problem.description))
                }
            }
            return (buttons, unusable)
        }
    }

    private static func decode(_ row: Row) -> Result<ButtonConfig, ButtonConfig.Invalid> {
        guard let kindText = String.fromDatabaseValue(row["kind"]), let kind = ButtonKind(rawValue: kindText) else {
            return .failure(ButtonConfig.Invalid(description: "unknown kind"))
        }
        guard let mappingText = String.fromDatabaseValue(row["mapping"]),
              let mapping = try? JSONDecoder().decode(ButtonMapping.self, from: Data(mappingText.utf8)) else {
            return .failure(ButtonConfig.Invalid(description: "unreadable mapping"))
        }
        do {
            // Checked types: a number or a blob where text belongs is an unusable row, never a trap.
            let bindkey: String?
            switch (row["bindkey"] as DatabaseValue).storage {
            case .null: bindkey = nil
            case .string(let text): bindkey = text
            default: return .failure(ButtonConfig.Invalid(description: "unreadable bindkey"))
            }
            return .success(try ButtonConfig(address: String.fromDatabaseValue(row["address"]) ?? "", kind: kind,
                                             name: String.fromDatabaseValue(row["name"]), bindkey: bindkey, mapping: mapping))
        } catch {
            return .failure(error)
        }
    }

    public func find(address: String) throws -> ButtonConfig? {
        guard let normalized = BluetoothAddress.canonical(address) else { return nil }
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

    /// Removes a button; false when there was none. A well-formed address that is no longer accepted
    /// (an older version stored it) can still be removed.
    @discardableResult
    public func remove(address: String) throws -> Bool {
        guard let spelled = BluetoothAddress.canonicalSpelling(address) else { return false }
        return try database.write { db in
            try db.execute(sql: "DELETE FROM button WHERE upper(replace(address, '-', ':')) = ?", arguments: [spelled])
            return db.changesCount > 0
        }
    }
}
