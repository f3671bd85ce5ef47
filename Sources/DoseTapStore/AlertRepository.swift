import DoseTapCore
import Foundation
internal import GRDB

/// Usage alerts (#13): the global settings (the `alerts` entry of `setting`), the per-source overrides,
/// each source's alert state (kept so nothing repeats after a restart or a reboot) and the history.
public struct AlertRepository: Sendable {
    public let database: DoseTapDatabase
    static let settingsKey = "alerts"
    /// The history keeps this many entries; older ones are pruned as new ones come.
    public static let historyLimit = 100

    public init(database: DoseTapDatabase) {
        self.database = database
    }

    /// The global settings; the defaults when none were saved. A stored value that cannot be read is an
    /// error (never silently the defaults: the person's thresholds would be lost without a word).
    public func settings() throws -> AlertSettings {
        try database.read { db in
            guard let text = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [Self.settingsKey])
            else { return AlertSettings() }
            do {
                return try Self.decoder.decode(AlertSettings.self, from: Data(text.utf8))
            } catch {
                throw StoreError("the stored alert settings cannot be read (\(error)); set them again with dosetap alerts set")
            }
        }
    }

    public func save(_ settings: AlertSettings) throws {
        let data = try Self.encoder.encode(settings)
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [Self.settingsKey, String(decoding: data, as: UTF8.self)])
        }
    }

    /// Every source's own settings, by name.
    public func overrides() throws -> [String: AlertSourceOverride] {
        try database.read { db in
            var result: [String: AlertSourceOverride] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, warning, critical, enabled FROM alert_source") {
                guard let name = String.fromDatabaseValue(row["name"]) else { continue }
                result[name] = AlertSourceOverride(warning: Int.fromDatabaseValue(row["warning"]), critical: Int.fromDatabaseValue(row["critical"]),
                                                   enabled: (Int.fromDatabaseValue(row["enabled"]) ?? 1) != 0)
            }
            return result
        }
    }

    /// Sets a source's own settings; nil (or the defaults) forgets them.
    public func setOverride(_ name: String, _ value: AlertSourceOverride?) throws {
        try database.write { db in
            guard let value, !value.isDefault else {
                try db.execute(sql: "DELETE FROM alert_source WHERE name = ?", arguments: [name])
                return
            }
            try db.execute(sql: """
                INSERT INTO alert_source (name, warning, critical, enabled) VALUES (?, ?, ?, ?)
                ON CONFLICT(name) DO UPDATE SET warning = excluded.warning, critical = excluded.critical, enabled = excluded.enabled
                """, arguments: [name, value.warning, value.critical, value.enabled ? 1 : 0])
        }
    }

    /// Every source's alert state, by name; a state that cannot be read counts as a fresh one.
    public func states() throws -> [String: AlertSourceState] {
        try database.read { db in
            var result: [String: AlertSourceState] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, state FROM alert_state") {
                guard let name = String.fromDatabaseValue(row["name"]), let text = String.fromDatabaseValue(row["state"]) else { continue }
                result[name] = (try? Self.decoder.decode(AlertSourceState.self, from: Data(text.utf8))) ?? AlertSourceState()
            }
            return result
        }
    }

    /// Saves a source's state and, when it fired, the history line — in one transaction, so an alert is
    /// never delivered twice nor recorded without its state. The history keeps the newest 100.
    public func record(_ name: String, state: AlertSourceState, alert: AlertRecord?) throws {
        let data = try Self.encoder.encode(state)
        try database.write { db in
            try db.execute(sql: "INSERT INTO alert_state (name, state) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET state = excluded.state",
                           arguments: [name, String(decoding: data, as: UTF8.self)])
            guard let alert else { return }
            try db.execute(sql: "INSERT INTO alert_history (at, source, usage, level) VALUES (?, ?, ?, ?)",
                           arguments: [alert.at.timeIntervalSince1970, alert.source, alert.usage, alert.level.rawValue])
            try db.execute(sql: """
                DELETE FROM alert_history WHERE id NOT IN (SELECT id FROM alert_history ORDER BY id DESC LIMIT ?)
                """, arguments: [Self.historyLimit])
        }
    }

    /// The history, newest first. Rows that cannot be read are left out.
    public func history() throws -> [AlertRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT at, source, usage, level FROM alert_history ORDER BY id DESC").compactMap { row in
                guard let at = Double.fromDatabaseValue(row["at"]), let source = String.fromDatabaseValue(row["source"]),
                      let usage = Double.fromDatabaseValue(row["usage"]),
                      let level = String.fromDatabaseValue(row["level"]).flatMap(AlertLevel.init(rawValue:)) else { return nil }
                return AlertRecord(at: Date(timeIntervalSince1970: at), source: source, usage: usage, level: level)
            }
        }
    }

    /// Forgets the history (the states stay: clearing the history does not make old alerts fire again).
    @discardableResult
    public func clearHistory() throws -> Int {
        try database.write { db in
            try db.execute(sql: "DELETE FROM alert_history")
            return db.changesCount
        }
    }

    private static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .secondsSince1970
        e.outputFormatting = .sortedKeys
        return e
    }

    private static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        return d
    }
}
