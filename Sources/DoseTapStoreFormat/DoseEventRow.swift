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

    /// The events remembered as set aside (dated in the future when first seen, #51): id, and 1 when discarded.
    public static let setAsideSQL = "SELECT id, discarded_at IS NOT NULL FROM dose_event_future"

    /// The marks `setAsideSQL` reads, as ids: those set aside, and those of them discarded.
    public static func setAsideMarks(_ rows: [[StoredValue]]) -> (setAside: Set<UUID>, discarded: Set<UUID>) {
        var aside = Set<UUID>()
        var discarded = Set<UUID>()
        for row in rows {
            guard row.count >= 2, case .text(let text) = row[0], let id = uuid(text) else { continue }
            aside.insert(id)
            if row[1] == .integer(1) { discarded.insert(id) }
        }
        return (aside, discarded)
    }

    /// 1 when SQLite's JSON parser reads the payload as a JSON object (a text column, well-formed RFC 8259 JSON),
    /// else 0. Only then are its fields looked at: `json_type` on anything else is an error that would fail the whole
    /// query, so each test is a CASE branch (evaluated in order, each only when the ones before did not match).
    private static let payloadIsObject =
        "CASE WHEN typeof(payload) <> 'text' THEN 0 WHEN NOT json_valid(payload) THEN 0 ELSE json_type(payload) = 'object' END"

    /// A field of the payload when it has one of `types` (as `json_type` names them), else NULL.
    private static func field(_ key: String, _ types: String) -> String {
        "CASE WHEN NOT (\(payloadIsObject)) THEN NULL WHEN json_type(payload, '$.\(key)') IN (\(types)) THEN json_extract(payload, '$.\(key)') END"
    }

    /// The columns every read of the log selects, in `decode`'s order: id, kind, at, time_zone, source, payload,
    /// seq, then what the payload (a JSON object, as `DoseRepository` writes it) says, read by SQLite's own JSON
    /// functions — whether it is an object (1 or 0); `targetMinutes` when a number; `late` when a boolean (1 or 0:
    /// JSON's 1 is not one); `reason` and `undoes` when strings. A field missing, null or of another JSON type is
    /// NULL, so the kind's default applies. (Foundation's JSON readers here cost a one-shot command about a fifth
    /// of its start in run-time type lookups, #29.)
    /// (Joined with `+`, not an array's `joined(separator:)`: that generic call looks up a conformance at run time,
    /// a scan of all of them in the one-shot front, #29.)
    public static let columns = "id, kind, at, time_zone, source, payload, seq, "
        + payloadIsObject + ", "
        + field("targetMinutes", "'integer', 'real'") + ", "
        + "CASE WHEN NOT (\(payloadIsObject)) THEN NULL WHEN json_type(payload, '$.late') = 'true' THEN 1 WHEN json_type(payload, '$.late') = 'false' THEN 0 END, "
        + field("reason", "'text'") + ", "
        + field("undoes", "'text'") + ", "
        + field("discards", "'text'")

    /// How many columns `columns` selects.
    public static let columnCount = 13

    /// Every entry, in order.
    public static let allSQL = "SELECT \(columns) FROM dose_event ORDER BY seq"

    /// One entry (one argument: its `seq`).
    public static let entrySQL = "SELECT \(columns) FROM dose_event WHERE seq = ?"

    /// The recent entries (one argument: the horizon's instant, seconds since 1970), in order: every entry at or
    /// after it, and the last 64 whatever their time. Two index searches (a plain OR would scan the whole log on
    /// every decision). A time stored as text or a blob sorts after every number in SQLite, so such a row is
    /// always included.
    public static let recentSQL = """
        SELECT \(columns) FROM dose_event \
        WHERE seq IN (SELECT seq FROM dose_event WHERE at >= ? \
        UNION SELECT seq FROM dose_event WHERE seq >= (SELECT COALESCE(MAX(seq), 0) - 64 FROM dose_event)) \
        ORDER BY seq
        """

    /// The instants a stored event may have: 2000-01-01 to 2200-01-01 (anything else is garbage).
    public static let plausibleTimes: ClosedRange<Double> = 946_684_800...7_258_118_400

    /// The event a row of `columns` holds, or nil when it cannot be read.
    public static func decode(_ columns: [StoredValue]) -> DoseEvent? {
        guard columns.count >= columnCount,
              case .text(let idText) = columns[0], let id = uuid(idText),
              case .text(let kindText) = columns[1],
              case .text(let zone) = columns[3],
              case .text(let sourceText) = columns[4], let source = InputSource(rawValue: sourceText),
              case .integer(1) = columns[7] else { return nil }
        let seconds: Double
        switch columns[2] {
        case .real(let d): seconds = d
        case .integer(let i): seconds = Double(i)
        default: return nil
        }
        guard seconds.isFinite, plausibleTimes.contains(seconds) else { return nil }
        let kind: DoseEvent.Kind
        switch kindText {
        case "dose1": kind = .dose1(targetMinutes: integer(columns[8]) ?? DoseRules.defaultTarget)
        case "dose2": kind = .dose2(late: columns[9] == .integer(1))
        case "snooze": kind = .snooze
        case "skip": kind = .skip(text(columns[10]).flatMap(SkipReason.init(rawValue:)))
        case "undo":
            guard let target = text(columns[11]).flatMap(uuid) else { return nil }
            kind = .undo(of: target)
        case "discard":
            guard let target = text(columns[12]).flatMap(uuid) else { return nil }
            kind = .discard(of: target)
        default: return nil
        }
        return DoseEvent(id: id, kind: kind, at: Date(timeIntervalSince1970: seconds), timeZone: zone, source: source)
    }

    /// A whole number (150, or 150.0 as a real), else nil.
    private static func integer(_ value: StoredValue) -> Int? {
        switch value {
        case .integer(let i): Int(exactly: i)
        case .real(let d): Int(exactly: d)
        default: nil
        }
    }

    /// A UUID from its 36-character text: 8-4-4-4-12 hex digits, either case — what the store writes, read as
    /// `UUID(uuidString:)` reads it (StoreFormatTests hold the two equal). Stricter than Foundation's, which goes
    /// through `sscanf` and so also takes a space, a sign or `0x` inside a group: such an id is not one the store
    /// wrote, and its entry is unreadable. (`sscanf` was a tenth of a one-shot command's start, #29.)
    public static func uuid(_ text: String) -> UUID? {
        var utf8 = text.utf8.makeIterator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var position = 0
        while let c = utf8.next() {
            defer { position += 1 }
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard position < 36, let high = HexBytes.value(ofASCIIHexDigit: c), let next = utf8.next(),
                  let low = HexBytes.value(ofASCIIHexDigit: next) else { return nil }
            position += 1
            bytes.append(high << 4 | low)
        }
        guard position == 36, bytes.count == 16 else { return nil }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    private static func text(_ value: StoredValue) -> String? {
        if case .text(let t) = value { t } else { nil }
    }
}

/// The schema's versions as GRDB records them in `grdb_migrations`, oldest first: the store registers exactly
/// these (StoreTests holds the two lists equal), and a reader that does not migrate (the one-shot front) knows
/// the file is current when the last one is recorded — GRDB's own test (`hasCompletedMigrations`).
public enum StoreSchema {
    public static let migrationIdentifiers = [
        "v1-battery-samples", "v2-dose-log", "v3-buttons", "v4-append-only-replace", "v5-alarms", "v6-alarm-rings",
        "v7-usage-alerts", "v8-alarm-backups", "v9-household", "v10-household-held", "v11-flic2",
        "v12-dose-log-guard", "v13-dose-event-future", "v14-household-memory",
    ]
}
