import Foundation

/// A real machine's battery log (the format of `shared/traces/README.md`): a `# tz=` line, a header
/// `t_unix,level_percent,state[,power_state]`, one reading a row, oldest first.
public struct BatteryTrace: Sendable, Equatable {
    public struct Reading: Sendable, Equatable {
        public var at: Date
        public var level: Double
        public var state: SupplyStatus
        /// What the machine did from this row to the next (`active`, `suspended`, `standby`, `hibernate`),
        /// when the log says.
        public var powerState: String?

        public init(at: Date, level: Double, state: SupplyStatus, powerState: String? = nil) {
            self.at = at
            self.level = level
            self.state = state
            self.powerState = powerState
        }

        /// Asleep from this reading to the next, by the log's own word.
        var sleepsAfter: SleepEpisode.Kind? {
            switch powerState?.lowercased() {
            case "suspended", "standby": .suspend
            case "hibernate", "hibernated": .hibernate
            default: nil
            }
        }
    }

    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    public var timeZone: TimeZone
    public var readings: [Reading]
    /// Rows that could not be read (line number and why), skipped.
    public var skipped: [String]
    /// True when the log says what the machine did between rows (`power_state`).
    public var hasPowerState: Bool

    public init(timeZone: TimeZone, readings: [Reading], skipped: [String] = [], hasPowerState: Bool = false) {
        self.timeZone = timeZone
        self.readings = readings
        self.skipped = skipped
        self.hasPowerState = hasPowerState
    }

    /// Parses a trace. A file without a header, or with an unknown zone, is an error; a row that cannot be
    /// read (a level out of 0…100, NaN, a missing field) is skipped and named in `skipped`; rows out of
    /// order are sorted, and a duplicated instant keeps its last row.
    public static func parse(_ text: String) throws(ParseError) -> BatteryTrace {
        var zone = TimeZone(identifier: "UTC")!
        var header: [String]?
        var rows: [Reading] = []
        var skipped: [String] = []
        var number = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let comment = line.dropFirst().trimmingCharacters(in: .whitespaces)
                if comment.hasPrefix("tz=") {
                    let name = String(comment.dropFirst(3)).trimmingCharacters(in: .whitespaces)
                    guard let found = TimeZone(identifier: name) else {
                        throw ParseError(description: "line \(number): unknown time zone '\(DisplayText.escaped(name, maxLength: 60))'")
                    }
                    zone = found
                }
                continue
            }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let columns = header else {
                guard fields.count >= 3, fields[0] == "t_unix", fields[1] == "level_percent", fields[2] == "state" else {
                    throw ParseError(description: "line \(number): expected the header t_unix,level_percent,state[,power_state]")
                }
                header = fields
                continue
            }
            guard fields.count == columns.count else {
                skipped.append("line \(number): \(fields.count) fields, expected \(columns.count)")
                continue
            }
            guard let t = Double(fields[0]), t.isFinite, let level = Double(fields[1]), level.isFinite,
                  (0...100).contains(level) else {
                skipped.append("line \(number): not a time and a level 0…100")
                continue
            }
            let state = SupplyStatus(kernel: fields[2])
            let power = columns.count > 3 ? fields[3] : nil
            rows.append(Reading(at: Date(timeIntervalSince1970: t), level: level, state: state,
                                powerState: power?.isEmpty == true ? nil : power))
        }
        guard let columns = header else { throw ParseError(description: "no header line t_unix,level_percent,state") }
        rows.sort { $0.at < $1.at }
        var unique: [Reading] = []
        unique.reserveCapacity(rows.count)
        for row in rows {
            if let last = unique.last, last.at == row.at { unique[unique.count - 1] = row } else { unique.append(row) }
        }
        return BatteryTrace(timeZone: zone, readings: unique, skipped: skipped, hasPowerState: columns.count > 3)
    }
}
