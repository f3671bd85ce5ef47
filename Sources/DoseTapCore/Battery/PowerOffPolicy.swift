/// What UPower does on its own when the battery runs low (`CriticalPowerAction`).
public enum CriticalPowerAction: String, Sendable, Equatable, CaseIterable {
    case powerOff = "PowerOff"
    case hibernate = "Hibernate"
    case hybridSleep = "HybridSleep"
    case suspend = "Suspend"

    /// How the fact reads: "This machine <verb> at 2%."
    var verb: String {
        switch self {
        case .powerOff: "powers itself off"
        case .hibernate: "hibernates"
        case .hybridSleep: "goes into hybrid sleep"
        case .suspend: "suspends itself"
        }
    }
}

/// The level at which the machine stops itself before the battery is empty (UPower's critical action):
/// a machine that powers off at 2 % cannot ring at 2 %, so that level counts as empty.
///
/// UPower decides by percentage (`PercentageAction`, 2 % by default) when `UsePercentageForPolicy` is
/// true (its default), or when the battery gives no time estimate; with `UsePercentageForPolicy=false`
/// it decides by the time left (`TimeAction`, 120 s by default). Under the linear model that time is
/// `drain × seconds / 3600` percent.
public struct PowerOffPolicy: Sendable, Equatable {
    /// UPower's `PercentageAction`: at or below this percentage it takes its action.
    public var percentage: Double
    /// UPower's `TimeAction` in seconds, when it decides by time left (`UsePercentageForPolicy=false`).
    public var timeLeftSeconds: Double?
    /// UPower's `CriticalPowerAction`, or nil when no UPower configuration was found.
    public var action: CriticalPowerAction?

    public init(percentage: Double, timeLeftSeconds: Double? = nil, action: CriticalPowerAction? = nil) {
        self.percentage = percentage
        self.timeLeftSeconds = timeLeftSeconds
        self.action = action
    }

    /// UPower's defaults: 2 %, by percentage. Also what counts when no UPower configuration exists.
    public static let upowerDefault = PowerOffPolicy(percentage: 2)

    /// The battery level that counts as empty at this drain.
    public func level(drainPercentPerHour drain: Double) -> Double {
        if let seconds = timeLeftSeconds, drain.isFinite, drain > 0 { return drain * seconds / 3600 }
        return percentage
    }

    /// "This machine powers itself off at 2%." (the action's own verb when UPower's configuration names it).
    public func fact(level: Double) -> String {
        "This machine \(action?.verb ?? CriticalPowerAction.powerOff.verb) at \(Self.percentText(level))%."
    }

    /// 2 → "2", 7.5 → "7.5", 0.1666… → "0.2": at most one decimal.
    public static func percentText(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? String(Int(tenths / 10)) : String(tenths / 10)
    }
}

/// UPower's configuration as UPower reads it: `UPower.conf`, then the drop-ins of `UPower.conf.d`, each
/// a GLib key file whose `[UPower]` keys override the earlier ones. Pure: the caller reads the files.
///
/// What UPower does, followed here:
/// - drop-ins count only when their name matches `^[0-9][0-9]-[a-zA-Z0-9_-]*\.conf$` (UPower's rule),
///   in byte order; later files override earlier ones key by key;
/// - inside one file a key given twice counts with its last value (GLib's key files);
/// - percentages are numbers (`2`, `2.0`, `7.5`); `PercentageLow > PercentageCritical > PercentageAction`
///   must hold and each must be below 100, or UPower uses its defaults (20, 5, 2) for all three; the
///   same for `TimeLow > TimeCritical > TimeAction` (1200, 300, 120 s);
/// - `UsePercentageForPolicy` (default true): false makes UPower act on the time left instead.
///
/// Where UPower would read a bad value as 0 (text, NaN, a negative number, non-ASCII digits), this reader
/// ignores it as if it were not written — the value before it, or the default, counts — noting why:
/// counting a garbage value as "never powers off early" would hide a risk, keeping 2 % cannot.
public enum UPowerConfiguration {
    public struct File: Sendable, Equatable {
        public var name: String
        public var text: String
        public init(name: String, text: String) {
            self.name = name
            self.text = text
        }
    }

    /// The policy and one line per thing ignored or corrected (for the log).
    public struct Result: Sendable, Equatable {
        public var policy: PowerOffPolicy
        public var notes: [String]
    }

    /// - Parameters:
    ///   - main: `UPower.conf`, or nil when it does not exist.
    ///   - dropIns: the files of `UPower.conf.d` (any names: those UPower would skip are skipped here).
    public static func parse(main: File?, dropIns: [File]) -> Result {
        var notes: [String] = []
        // Every value of every key, in the order UPower reads them: the last one counts.
        var values: [String: [(value: String, file: String)]] = [:]
        var files: [File] = main.map { [$0] } ?? []
        for file in dropIns.sorted(by: { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }) {
            if isDropInName(file.name) {
                files.append(file)
            } else {
                notes.append("\(file.name): not read: UPower reads only drop-ins named like 50-name.conf")
            }
        }
        for file in files {
            for (key, value) in keys(of: file, notes: &notes) { values[key, default: []].append((value, file.name)) }
        }

        // A bad value is ignored as if it were not written: the one before it (or the default) counts.
        func number(_ key: String, _ fallback: Double, integer: Bool = false) -> Double {
            var result = fallback
            for (text, file) in values[key] ?? [] {
                switch parseNumber(text, integer: integer) {
                case .success(let value): result = value
                case .failure(let why):
                    notes.append("\(file): \(key)=\(text) ignored (\(why)); using \(PowerOffPolicy.percentText(result))")
                }
            }
            return result
        }

        var low = number("PercentageLow", 20)
        var critical = number("PercentageCritical", 5)
        var action = number("PercentageAction", 2)
        if !(low < 100 && critical < 100 && action < 100) || !(low > critical && critical > action) {
            notes.append("PercentageLow \(PowerOffPolicy.percentText(low)), PercentageCritical \(PowerOffPolicy.percentText(critical)), PercentageAction \(PowerOffPolicy.percentText(action)) are not below 100 and descending: UPower uses its defaults 20, 5, 2")
            (low, critical, action) = (20, 5, 2)
        }

        var usePercentage = true
        for (text, file) in values["UsePercentageForPolicy"] ?? [] {
            switch text {
            case "true", "1": usePercentage = true
            case "false", "0": usePercentage = false
            default: notes.append("\(file): UsePercentageForPolicy=\(text) ignored (not true or false); using \(usePercentage)")
            }
        }
        var timeAction: Double?
        if !usePercentage {
            var tLow = number("TimeLow", 1200, integer: true)
            var tCritical = number("TimeCritical", 300, integer: true)
            var tAction = number("TimeAction", 120, integer: true)
            if !(tLow > tCritical && tCritical > tAction) {
                notes.append("TimeLow, TimeCritical, TimeAction are not descending: UPower uses its defaults 1200, 300, 120 s")
                (tLow, tCritical, tAction) = (1200, 300, 120)
            }
            timeAction = tAction
        }

        var kind: CriticalPowerAction?
        if !files.isEmpty { kind = .hybridSleep } // UPower's default action
        for (text, file) in values["CriticalPowerAction"] ?? [] {
            if let known = CriticalPowerAction(rawValue: text) {
                kind = known
            } else {
                notes.append("\(file): CriticalPowerAction=\(text) not known here; the level still counts as empty")
            }
        }
        return Result(policy: PowerOffPolicy(percentage: action, timeLeftSeconds: timeAction, action: kind), notes: notes)
    }

    /// UPower's drop-in name rule: two digits, a dash, letters, digits, `_` or `-`, then `.conf`.
    public static func isDropInName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 8, name.hasSuffix(".conf") else { return false }
        let digit: (UInt8) -> Bool = { $0 >= 0x30 && $0 <= 0x39 }
        guard digit(bytes[0]), digit(bytes[1]), bytes[2] == UInt8(ascii: "-") else { return false }
        return bytes[3..<(bytes.count - 5)].allSatisfy { b in
            digit(b) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }

    /// The `[UPower]` keys of one key file, in order (a repeated key appears twice: the last one wins).
    /// The `UPower` group's keys of a file, in order, as GLib's key-file reader sees the lines: split at each line
    /// feed (a CR before it, like any trailing blank, is dropped), blanks before a line ignored, `#` a comment,
    /// `[Group]` a group, `key=value` a key. Byte by byte (the syntax is ASCII), not Character by Character: the
    /// grapheme walk cost a one-shot command a million instructions for UPower's own 3 KB file (#29).
    static func keys(of file: File, notes: inout [String]) -> [(String, String)] {
        var result: [(String, String)] = []
        var group: String?
        var seen: Set<String> = []
        let bytes = Array(file.text.utf8)
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        var number = 0
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            defer {
                number += 1
                start = end + 1
            }
            var lo = start
            var hi = end
            while lo < hi, isBlank(bytes[lo]) { lo += 1 }
            while hi > lo, isBlank(bytes[hi - 1]) || bytes[hi - 1] == 0x0D { hi -= 1 }
            if lo == hi || bytes[lo] == UInt8(ascii: "#") { continue }
            if bytes[lo] == UInt8(ascii: "[") {
                guard bytes[hi - 1] == UInt8(ascii: "]"), text(lo..<hi).count >= 3 else {
                    notes.append("\(file.name): line \(number + 1) ignored (not a group, a key or a comment)")
                    continue
                }
                group = text((lo + 1)..<(hi - 1))
                continue
            }
            guard let equals = bytes[lo..<hi].firstIndex(of: UInt8(ascii: "=")) else {
                notes.append("\(file.name): line \(number + 1) ignored (not a group, a key or a comment)")
                continue
            }
            var keyEnd = equals
            while keyEnd > lo, isBlank(bytes[keyEnd - 1]) || bytes[keyEnd - 1] == 0x0D { keyEnd -= 1 }
            var valueStart = equals + 1
            while valueStart < hi, isBlank(bytes[valueStart]) { valueStart += 1 }
            let key = text(lo..<keyEnd)
            guard group == "UPower", lo < keyEnd, !bytes[lo..<keyEnd].contains(UInt8(ascii: "[")) else { continue }
            if !seen.insert(key).inserted {
                notes.append("\(file.name): \(key) is set more than once; the last one counts, as UPower reads it")
            }
            result.append((key, text(valueStart..<hi)))
        }
        return result
    }

    enum NumberProblem: Error, CustomStringConvertible {
        case notANumber, negative
        var description: String {
            switch self {
            case .notANumber: "not a number"
            case .negative: "negative"
            }
        }
    }

    /// A plain ASCII decimal (`2`, `2.0`, `7.5`; integers only for times): no NaN, no infinity, no hex,
    /// no digits of other scripts. (100 and more are left to the descending check, as UPower does.)
    static func parseNumber(_ text: String, integer: Bool) -> Swift.Result<Double, NumberProblem> {
        var body = Substring(text)
        var negative = false
        if body.first == "-" || body.first == "+" {
            negative = body.first == "-"
            body = body.dropFirst()
        }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits: (Substring) -> Bool = { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard body.utf8.count <= 32, let whole = parts.first, isDigits(whole),
              parts.count == 1 || (!integer && isDigits(parts[1])),
              let value = Double(String(body)), value.isFinite
        else { return .failure(.notANumber) }
        if negative && value != 0 { return .failure(.negative) }
        return .success(value)
    }
}
