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
            for row in try Row.fetchAll(db, sql: "SELECT address, kind, name, bindkey, pairing, mapping FROM button ORDER BY added_at, address") {
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
            let pairing: String?
            switch (row["pairing"] as DatabaseValue).storage {
            case .null: pairing = nil
            case .string(let text): pairing = text
            default: return .failure(ButtonConfig.Invalid(description: "unreadable Flic 2 pairing"))
            }
            return .success(try ButtonConfig(address: String.fromDatabaseValue(row["address"]) ?? "", kind: kind,
                                             name: String.fromDatabaseValue(row["name"]), bindkey: bindkey, pairing: pairing,
                                             mapping: mapping))
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
            let previous = try String.fetchOne(db, sql: "SELECT pairing FROM button WHERE address = ?", arguments: [button.address])
            try db.execute(sql: """
                INSERT INTO button (address, kind, name, bindkey, pairing, mapping, added_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(address) DO UPDATE SET kind = excluded.kind, name = excluded.name, bindkey = excluded.bindkey,
                pairing = excluded.pairing, mapping = excluded.mapping
                """, arguments: [button.address, button.kind.rawValue, button.name, button.bindkey, button.pairing, mapping,
                                 now.timeIntervalSince1970])
            // A new pairing (or none) starts the button's events afresh.
            if previous != button.pairing {
                try db.execute(sql: "DELETE FROM button_progress WHERE address = ?", arguments: [button.address])
            }
        }
    }

    /// How far a Flic 2's events were acted on (nil: none yet).
    public func progress(address: String) throws -> Flic2EventProgress? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT boot_id, event_count FROM button_progress WHERE address = ?",
                                             arguments: [address]),
                  let boot = Int64.fromDatabaseValue(row["boot_id"]), let count = Int64.fromDatabaseValue(row["event_count"]),
                  let bootID = UInt32(exactly: boot), let eventCount = UInt32(exactly: count) else { return nil }
            return Flic2EventProgress(bootID: bootID, eventCount: eventCount)
        }
    }

    /// Keeps how far a Flic 2's events were acted on (only for a button still added).
    public func saveProgress(_ progress: Flic2EventProgress, address: String) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO button_progress (address, boot_id, event_count) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM button WHERE address = ?)
                ON CONFLICT(address) DO UPDATE SET boot_id = excluded.boot_id, event_count = excluded.event_count
                """, arguments: [address, Int64(progress.bootID), Int64(progress.eventCount), address])
        }
    }

    /// Removes a button; false when there was none. A well-formed address that is no longer accepted
    /// (an older version stored it) can still be removed.
    @discardableResult
    public func remove(address: String) throws -> Bool {
        guard let spelled = BluetoothAddress.canonicalSpelling(address) else { return false }
        return try database.write { db in
            try db.execute(sql: "DELETE FROM button WHERE upper(replace(address, '-', ':')) = ?", arguments: [spelled])
            let removed = db.changesCount > 0
            try db.execute(sql: "DELETE FROM button_progress WHERE upper(replace(address, '-', ':')) = ?", arguments: [spelled])
            return removed
        }
    }
}
