import DoseTapCore
import Foundation

/// The rows the alarm screen and the status bar read besides the dose log (#29): the alarms, their rings, the
/// battery history and the night's learning — each row's SQL and its decoding, shared by the store (GRDB) and the
/// one-shot front (SQLite's C API), as `DoseEventRow` is for the dose log. A value is read by its storage class as
/// GRDB reads it: a whole number from an INTEGER, or from a REAL cut toward zero; a number from either; a truth
/// value from a number (0 is false); text from TEXT only (a BLOB is not text here).
public enum StoredRead {
    public static func int64(_ value: StoredValue) -> Int64? {
        switch value {
        case .integer(let i): return i
        case .real(let d):
            guard d >= Double(Int64.min), d < Double(Int64.max) else { return nil }
            return Int64(d)
        default: return nil
        }
    }

    public static func int(_ value: StoredValue) -> Int? { int64(value).flatMap { Int(exactly: $0) } }

    public static func double(_ value: StoredValue) -> Double? {
        switch value {
        case .integer(let i): Double(i)
        case .real(let d): d
        default: nil
        }
    }

    /// A finite number; nil for NaN, text, a blob or NULL.
    public static func finite(_ value: StoredValue) -> Double? {
        double(value).flatMap { $0.isFinite ? $0 : nil }
    }

    public static func bool(_ value: StoredValue) -> Bool? {
        switch value {
        case .integer(let i): i != 0
        case .real(let d): d != 0
        default: nil
        }
    }

    public static func text(_ value: StoredValue) -> String? {
        if case .text(let t) = value { t } else { nil }
    }

    /// A stored instant (seconds since 1970, integer or real).
    public static func date(_ value: StoredValue) -> Date? {
        double(value).map { Date(timeIntervalSince1970: $0) }
    }
}

/// The `alarm` table: every alarm the person set, and the rows that cannot be used (edited by hand, written by a
/// newer version), listed with the reason and never rung as something they are not.
public enum AlarmRow {
    public static let allSQL = "SELECT id, time, label, repetition, enabled, sound, haptics FROM alarm ORDER BY id"

    /// A row of `allSQL`: its id and the alarm, or why it cannot be used.
    public static func decode(_ columns: [StoredValue]) -> (id: Int, alarm: Result<Alarm, AlarmError>) {
        guard columns.count >= 7 else { return (0, .failure(AlarmError("unreadable row"))) }
        let id = StoredRead.int(columns[0]) ?? 0
        guard let timeText = StoredRead.text(columns[1]), let time = try? TimeOfDay(parsing: timeText) else {
            return (id, .failure(AlarmError("unreadable time")))
        }
        guard let repeatText = StoredRead.text(columns[3]), let repetition = try? AlarmRepeat(parsing: repeatText) else {
            return (id, .failure(AlarmError("unreadable repeat")))
        }
        guard case .integer(let enabled) = columns[4], enabled == 0 || enabled == 1 else {
            return (id, .failure(AlarmError("unreadable enabled flag")))
        }
        var haptics: HapticIntensity?
        if let name = StoredRead.text(columns[6]) {
            guard let h = HapticIntensity(rawValue: name) else { return (id, .failure(AlarmError("unreadable haptic intensity"))) }
            haptics = h
        }
        do {
            return (id, .success(try Alarm(id: id, time: time, label: StoredRead.text(columns[2]) ?? "", repetition: repetition,
                                           enabled: enabled == 1, sound: StoredRead.text(columns[5]), haptics: haptics)))
        } catch {
            return (id, .failure(error))
        }
    }
}

/// The `alarm_ring` table: each occurrence dealt with and how it ended.
public enum AlarmRingRow {
    /// The columns every read of a ring selects, in `decode`'s order.
    public static let columns = "id, alarm_id, kind, due_at, started_at, ended_at, outcome, ended_by, snooze_until"

    /// The latest ring of each alarm (for "missed" on the alarm screen).
    public static let latestByAlarmSQL = "SELECT \(columns) FROM alarm_ring WHERE id IN (SELECT MAX(id) FROM alarm_ring GROUP BY alarm_id)"

    /// A ring; nil for a row that cannot be read (edited by hand): ignored, never guessed.
    public static func decode(_ c: [StoredValue]) -> AlarmRing? {
        guard c.count >= 9, let id = StoredRead.int64(c[0]), let alarmID = StoredRead.int(c[1]),
              let kind = StoredRead.text(c[2]).flatMap(AlarmRingKind.init(rawValue:)),
              let dueAt = StoredRead.date(c[3]), dueAt.timeIntervalSince1970.isFinite,
              let outcome = StoredRead.text(c[6]).flatMap(AlarmRingOutcome.init(rawValue:)) else { return nil }
        return AlarmRing(id: id, alarmID: alarmID, kind: kind, dueAt: dueAt, startedAt: StoredRead.date(c[4]), endedAt: StoredRead.date(c[5]),
                         outcome: outcome, endedBy: StoredRead.text(c[7]).flatMap(AlarmRingEnder.init(rawValue:)),
                         snoozeUntil: StoredRead.date(c[8]))
    }

    /// The latest ring of each alarm from the rows of `latestByAlarmSQL`, by alarm id.
    public static func latestByAlarm(_ rows: [[StoredValue]]) -> [Int: AlarmRing] {
        var result: [Int: AlarmRing] = [:]
        for row in rows {
            if let ring = decode(row) { result[ring.alarmID] = ring }
        }
        return result
    }
}

/// The `battery_sample` table: the system battery's history (the drain is fitted from it when the hardware gives
/// no rate) and other sources' levels.
public enum BatterySampleRow {
    /// The system battery's samples (one argument: the first instant, seconds since 1970), oldest first.
    public static let systemSinceSQL =
        "SELECT at, level, energy_wh, energy_full_wh, rate_w, on_ac, status FROM battery_sample WHERE at >= ? AND source = 'system' ORDER BY at, id"

    /// A sample; nil for one written by hand as text or a blob (skipped, never a trap).
    public static func decode(_ c: [StoredValue]) -> BatterySample? {
        guard c.count >= 7, let at = StoredRead.finite(c[0]), let level = StoredRead.finite(c[1]), let onAC = StoredRead.bool(c[5]) else { return nil }
        return BatterySample(at: Date(timeIntervalSince1970: at), level: level, energyWh: StoredRead.finite(c[2]),
                             energyFullWh: StoredRead.finite(c[3]), rateW: StoredRead.finite(c[4]), onAC: onAC,
                             status: StoredRead.text(c[6]).flatMap(SupplyStatus.init(rawValue:)) ?? .unknown)
    }
}

/// The `setting` table's values the command line reads.
public enum SettingRow {
    /// What the machine taught the forecast about its nights (`NightLearning`, a JSON value).
    public static let nightLearningKey = "night-learning"
    /// One value (one argument: its key).
    public static let valueSQL = "SELECT value FROM setting WHERE key = ?"

    /// The night learning a stored value holds; nothing learned yet when there is none or it cannot be read (the
    /// forecast then uses the stated prior and plans the machine awake; the agent replaces it at its next save).
    public static func nightLearning(_ value: StoredValue?) -> NightLearning {
        value.flatMap(StoredRead.text).flatMap(NightLearning.init(storedText:)) ?? NightLearning()
    }
}
