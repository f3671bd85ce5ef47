import Foundation

/// A usage-alert setting that cannot be applied; its message names the rule.
public struct AlertError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The two levels of a usage alert.
public enum AlertLevel: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case warning
    case critical
}

/// Thresholds in percent *used* (a battery's usage is 100 − its level): warning 85, critical 95 by
/// default; warning 10…99, critical 5…95, and warning strictly below critical (the seed's ranges, with its
/// inverted check fixed).
public struct AlertThresholds: Sendable, Equatable, Hashable, Codable {
    public static let defaults = AlertThresholds(uncheckedWarning: 85, critical: 95)
    public static let warningRange = 10...99
    public static let criticalRange = 5...95

    public let warning: Int
    public let critical: Int

    private init(uncheckedWarning warning: Int, critical: Int) {
        self.warning = warning
        self.critical = critical
    }

    public init(warning: Int, critical: Int) throws(AlertError) {
        guard Self.warningRange.contains(warning) else {
            throw AlertError("warning (\(warning) %) must be between \(Self.warningRange.lowerBound) and \(Self.warningRange.upperBound) % used")
        }
        guard Self.criticalRange.contains(critical) else {
            throw AlertError("critical (\(critical) %) must be between \(Self.criticalRange.lowerBound) and \(Self.criticalRange.upperBound) % used")
        }
        guard warning < critical else {
            throw AlertError("warning (\(warning) %) must be lower than critical (\(critical) %)")
        }
        self.init(uncheckedWarning: warning, critical: critical)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        do {
            try self.init(warning: try c.decode(Int.self, forKey: .warning), critical: try c.decode(Int.self, forKey: .critical))
        } catch let error as AlertError {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: error.description))
        }
    }

    public func threshold(_ level: AlertLevel) -> Int { level == .warning ? warning : critical }
}

/// A source's own settings: either threshold overridden, or the source turned off.
public struct AlertSourceOverride: Sendable, Equatable, Hashable, Codable {
    public var warning: Int?
    public var critical: Int?
    public var enabled: Bool

    public init(warning: Int? = nil, critical: Int? = nil, enabled: Bool = true) {
        self.warning = warning
        self.critical = critical
        self.enabled = enabled
    }

    /// The thresholds that apply: the override where set, else the global ones; the pair must still hold
    /// (an override that would put warning at or above critical is refused when it is set).
    public func effective(_ global: AlertThresholds) throws(AlertError) -> AlertThresholds {
        try AlertThresholds(warning: warning ?? global.warning, critical: critical ?? global.critical)
    }

    public var isDefault: Bool { warning == nil && critical == nil && enabled }
}

/// What a source has been through, kept across restarts: which levels have fired since they last re-armed,
/// and how many cycles in a row it could not be read.
public struct AlertSourceState: Sendable, Equatable, Hashable, Codable {
    public var fired: Set<AlertLevel> = []
    public var failures = 0
    /// The source was reported `unreadable` (once, after 3 failed cycles) and has not been read since.
    public var reportedUnreadable = false
    /// The last usage read, percent used.
    public var usage: Double?

    public init(fired: Set<AlertLevel> = [], failures: Int = 0, reportedUnreadable: Bool = false, usage: Double? = nil) {
        self.fired = fired
        self.failures = failures
        self.reportedUnreadable = reportedUnreadable
        self.usage = usage
    }

    public var isUnreadable: Bool { failures >= AlertRules.unreadableAfter }
}

/// The alert rules (pure). Per source and per level, one alert per crossing: warning, then critical,
/// both fire (a warning already sent never blocks the critical one); a level re-arms when usage falls
/// more than `hysteresis` points below its threshold, so a level hovering at the line does not flap;
/// 0 % remaining is critical at once whatever the thresholds; a source that cannot be read is retried
/// next cycle and shows as `unreadable` after 3 failed cycles (reported once).
public enum AlertRules {
    public static let hysteresis = 2.0
    public static let unreadableAfter = 3

    /// What one reading (or failed read) of a source means.
    public struct Outcome: Sendable, Equatable {
        /// The alert to deliver now (the highest level crossed), if any.
        public var alert: AlertLevel?
        /// True once, on the cycle the source becomes unreadable.
        public var becameUnreadable = false
        public init(alert: AlertLevel? = nil, becameUnreadable: Bool = false) {
            self.alert = alert
            self.becameUnreadable = becameUnreadable
        }
    }

    /// Applies one cycle to `state`. `usage` is percent used (nil: the source could not be read). While
    /// `snoozed`, nothing fires and nothing is marked as fired, so whatever still exceeds fires when the
    /// snooze ends. A usage outside 0…100 or not finite counts as a failed read.
    public static func observe(usage: Double?, state: inout AlertSourceState, thresholds: AlertThresholds,
                               snoozed: Bool) -> Outcome {
        guard let usage, usage.isFinite, (0...100).contains(usage) else {
            state.failures += 1
            if state.failures >= unreadableAfter, !state.reportedUnreadable {
                state.reportedUnreadable = true
                return Outcome(becameUnreadable: true)
            }
            return Outcome()
        }
        state.failures = 0
        state.reportedUnreadable = false
        state.usage = usage
        let empty = usage >= 100
        // Re-arm the levels the usage has clearly left.
        for level in AlertLevel.allCases where usage < Double(thresholds.threshold(level)) - hysteresis && !(empty) {
            state.fired.remove(level)
        }
        var exceeded: [AlertLevel] = AlertLevel.allCases.filter { usage >= Double(thresholds.threshold($0)) }
        if empty { exceeded = AlertLevel.allCases }
        guard let highest = exceeded.last, !snoozed else { return Outcome() }
        guard !state.fired.contains(highest) else { return Outcome() }
        // The highest level crossed fires; the ones below it count as said (no warning after a critical).
        for level in exceeded { state.fired.insert(level) }
        return Outcome(alert: highest)
    }

    /// The level a source is at now, for `alerts show`: ok, warning, critical, or unreadable.
    public static func state(usage: Double?, state: AlertSourceState, thresholds: AlertThresholds) -> String {
        if state.isUnreadable { return "unreadable" }
        guard let usage = usage ?? state.usage else { return "unreadable" }
        if usage >= 100 || usage >= Double(thresholds.critical) { return "critical" }
        if usage >= Double(thresholds.warning) { return "warning" }
        return "ok"
    }
}

/// How long all alerts can be snoozed.
public enum AlertSnooze: String, Sendable, Equatable, CaseIterable {
    case fifteenMinutes = "15m"
    case oneHour = "1h"
    case fourHours = "4h"
    case oneDay = "24h"

    public var seconds: TimeInterval {
        switch self {
        case .fifteenMinutes: 15 * 60
        case .oneHour: 3600
        case .fourHours: 4 * 3600
        case .oneDay: 24 * 3600
        }
    }
}

/// A message template with `{source}`, `{percent}` (used), `{remaining}` and `{level}`.
public struct AlertTemplate: Sendable, Equatable, Hashable, Codable {
    public static let placeholders = ["source", "percent", "remaining", "level"]
    public static let maximumLength = 200
    public static let defaultWarning = try! AlertTemplate("{source} battery low: {remaining}% left")
    public static let defaultCritical = try! AlertTemplate("{source} battery critical: {remaining}% left")

    public static func defaultText(_ level: AlertLevel) -> AlertTemplate {
        level == .warning ? defaultWarning : defaultCritical
    }

    public let text: String

    /// Refuses an empty template, one over 200 characters, an unknown placeholder and an unclosed brace.
    public init(_ text: String) throws(AlertError) {
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw AlertError("the template is empty: use {source}, {percent}, {remaining} and {level} in a sentence")
        }
        guard text.count <= Self.maximumLength else {
            throw AlertError("the template is \(text.count) characters long: at most \(Self.maximumLength)")
        }
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw AlertError("the template has a { without its }: use {source}, {percent}, {remaining} or {level}")
            }
            let name = String(rest[rest.index(after: open)..<close])
            guard Self.placeholders.contains(name) else {
                throw AlertError("unknown placeholder {\(DisplayText.escaped(name, maxLength: 40))}: use {source}, {percent}, {remaining} or {level}")
            }
            rest = rest[rest.index(after: close)...]
        }
        self.text = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(text) } catch { throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    /// The message: percent used and remaining as whole numbers that add up to 100. One pass over the
    /// template, so a source named "{level}" is shown as it is, not expanded.
    public func render(source: String, usage: Double, level: AlertLevel) -> String {
        let remaining = usage.isFinite ? max(0, min(100, Int((100 - usage).rounded()))) : 0
        let values = ["source": source, "percent": String(100 - remaining), "remaining": String(remaining), "level": level.rawValue]
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            out += values[name] ?? String(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }
}

/// The global alert settings: thresholds, the snooze of all alerts, the two templates.
public struct AlertSettings: Sendable, Equatable, Codable {
    public var thresholds: AlertThresholds
    /// Nothing fires before this instant; nil: not snoozed.
    public var snoozedUntil: Date?
    public var warningTemplate: AlertTemplate
    public var criticalTemplate: AlertTemplate

    public init(thresholds: AlertThresholds = .defaults, snoozedUntil: Date? = nil,
                warningTemplate: AlertTemplate = .defaultWarning, criticalTemplate: AlertTemplate = .defaultCritical) {
        self.thresholds = thresholds
        self.snoozedUntil = snoozedUntil
        self.warningTemplate = warningTemplate
        self.criticalTemplate = criticalTemplate
    }

    public func template(_ level: AlertLevel) -> AlertTemplate { level == .warning ? warningTemplate : criticalTemplate }

    public func isSnoozed(at now: Date) -> Bool { snoozedUntil.map { now < $0 } ?? false }
}

/// One line of the alert history.
public struct AlertRecord: Sendable, Equatable {
    public var at: Date
    public var source: String
    /// Percent used.
    public var usage: Double
    public var level: AlertLevel

    public init(at: Date, source: String, usage: Double, level: AlertLevel) {
        self.at = at
        self.source = source
        self.usage = usage
        self.level = level
    }
}

/// One battery an alert watches, as read now.
public struct AlertSourceReading: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The machine's own battery.
        case system
        /// A peripheral's battery (`scope=Device`: a mouse, a keyboard).
        case device
        case ups
        /// A button's own cell (`button:<name>`).
        case button
        /// A command that prints the percentage remaining (`[[alerts.command]]`).
        case command
    }

    public var name: String
    public var kind: Kind
    /// Percent used (100 − the level); nil when it cannot be read now.
    public var usage: Double?

    public init(name: String, kind: Kind, usage: Double?) {
        self.name = name
        self.kind = kind
        self.usage = usage
    }

    /// The batteries among the power supplies and the buttons' last levels. A supply is named by its model
    /// when it has one no other supply shares, else by its kernel name (`BAT0`); mains, USB and wireless
    /// chargers are not batteries. Buttons are `button:<name>`, with the level they last reported.
    public static func from(supplies: [PowerSupplyReading], buttonLevels: [String: Double]) -> [AlertSourceReading] {
        let batteries = supplies.filter { ($0.type == .battery || $0.type == .ups) && $0.present }
        var models: [String: Int] = [:]
        for supply in batteries { if let model = supply.model?.trimmingCharacters(in: .whitespaces), !model.isEmpty { models[model, default: 0] += 1 } }
        var readings = batteries.map { supply -> AlertSourceReading in
            let model = supply.model?.trimmingCharacters(in: .whitespaces) ?? ""
            let name = !model.isEmpty && models[model] == 1 ? model : supply.name
            let kind: Kind = supply.type == .ups ? .ups : supply.scope == .device ? .device : .system
            return AlertSourceReading(name: name, kind: kind, usage: supply.level.map { 100 - min(100, max(0, $0)) })
        }
        for (source, level) in buttonLevels.sorted(by: { $0.key < $1.key }) where source.hasPrefix("button:") {
            readings.append(AlertSourceReading(name: source, kind: .button, usage: level.isFinite ? 100 - min(100, max(0, level)) : nil))
        }
        return readings
    }
}
