import DoseTapCore
import Foundation

/// A column's value as SQLite stores it (its storage class), whichever library read it.
public enum StoredValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob
}

/// The dose log's rows (`dose_event`): which rows a night's decisions read, and what a row means. The store
/// (GRDB) and the one-shot front (SQLite's C API, #29) read the same rows with the same SQL and decode them
/// with this one function, so `dose status --json` cannot differ between them.
public enum DoseEventRow {
    /// How far back the recent log reaches: the current night and the one before.
    public static let recentHorizon: TimeInterval = 48 * 3600

    /// The `seq` of every entry set aside (`data ignore`): an unreadable entry there is not an error.
    public static let ignoredSQL = "SELECT seq FROM dose_event_ignored"

    /// Every entry, in order; the columns `decode` takes, then `seq`.
    public static let allSQL = "SELECT id, kind, at, time_zone, source, payload, seq FROM dose_event ORDER BY seq"

    /// The recent entries (one argument: the horizon's instant, seconds since 1970), in order: every entry at or
    /// after it, and the last 64 whatever their time. Two index searches (a plain OR would scan the whole log on
    /// every decision). A time stored as text or a blob sorts after every number in SQLite, so such a row is
    /// always included.
    public static let recentSQL = """
        SELECT id, kind, at, time_zone, source, payload, seq FROM dose_event \
        WHERE seq IN (SELECT seq FROM dose_event WHERE at >= ? \
        UNION SELECT seq FROM dose_event WHERE seq >= (SELECT COALESCE(MAX(seq), 0) - 64 FROM dose_event)) \
        ORDER BY seq
        """

    /// The instants a stored event may have: 2000-01-01 to 2200-01-01 (anything else is garbage).
    public static let plausibleTimes: ClosedRange<Double> = 946_684_800...7_258_118_400

    /// The event a row holds (id, kind, at, time_zone, source, payload: the first six columns of the SQL above),
    /// or nil when it cannot be read.
    public static func decode(_ columns: [StoredValue]) -> DoseEvent? {
        guard columns.count >= 6,
              case .text(let idText) = columns[0], let id = UUID(uuidString: idText),
              case .text(let kindText) = columns[1],
              case .text(let zone) = columns[3],
              case .text(let sourceText) = columns[4], let source = InputSource(rawValue: sourceText),
              case .text(let text) = columns[5] else { return nil }
        let seconds: Double
        switch columns[2] {
        case .real(let d): seconds = d
        case .integer(let i): seconds = Double(i)
        default: return nil
        }
        guard seconds.isFinite, plausibleTimes.contains(seconds) else { return nil }
        let payload: [String: Any]
        if text == "{}" {
            payload = [:]
        } else {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return nil }
            payload = object
        }
        let kind: DoseEvent.Kind
        switch kindText {
        case "dose1": kind = .dose1(targetMinutes: payload["targetMinutes"] as? Int ?? DoseRules.defaultTarget)
        case "dose2": kind = .dose2(late: payload["late"] as? Bool ?? false)
        case "snooze": kind = .snooze
        case "skip": kind = .skip((payload["reason"] as? String).flatMap(SkipReason.init(rawValue:)))
        case "undo":
            guard let target = (payload["undoes"] as? String).flatMap(UUID.init(uuidString:)) else { return nil }
            kind = .undo(of: target)
        default: return nil
        }
        return DoseEvent(id: id, kind: kind, at: Date(timeIntervalSince1970: seconds), timeZone: zone, source: source)
    }
}

/// The schema's versions as GRDB records them in `grdb_migrations`, oldest first: the store registers exactly
/// these (StoreTests holds the two lists equal), and a reader that does not migrate (the one-shot front) knows
/// the file is current when the last one is recorded — GRDB's own test (`hasCompletedMigrations`).
public enum StoreSchema {
    public static let migrationIdentifiers = [
        "v1-battery-samples", "v2-dose-log", "v3-buttons", "v4-append-only-replace", "v5-alarms", "v6-alarm-rings",
        "v7-usage-alerts", "v8-alarm-backups", "v9-household", "v10-household-held", "v11-flic2",
    ]
}
