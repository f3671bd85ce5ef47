import Foundation

/// The overnight re-check (#11 §3): between toggling an alarm on and its occurrence, the battery is
/// predicted again at every reading, and a risk that grows — safe → warning, safe or warning → critical —
/// is nudged again, once per step: never twice for the same level of the same occurrence. Pure: the agent
/// feeds it readings and plays what it returns.
///
/// The baseline (what counts as already said):
/// - an alarm first seen enabled — added, turned on or edited, or seen at the agent's first start —
///   starts at the level of its first known prediction, silently: the person saw that nudge when they
///   toggled it on (`alarm add`/`on`/`edit` show it), so an alarm toggled on at critical does not nudge
///   again at once;
/// - an alarm whose prediction cannot be made yet starts at safe: the person was told "cannot predict
///   yet", so the first known risk is news;
/// - the next occurrence of an alarm already followed (a daily alarm after it rang) starts at safe: its
///   risk is announced once when it appears;
/// - plugging in ends it: every level goes back to safe, so a risk after unplugging is announced again.
///
/// The marks are Codable so the agent can keep them across a restart (no nudge repeated after one).
public struct AlarmRiskTracker: Sendable, Equatable {
    /// What has been said about one alarm's occurrence.
    public struct Mark: Sendable, Equatable, Codable {
        public var alarm: Int
        /// The alarm's time and repeat when it was first seen: a change is a new toggle-on.
        public var setting: String
        public var occurrence: Date
        /// The highest level said for this occurrence (the baseline or a nudge).
        public var level: BatteryRisk

        public init(alarm: Int, setting: String, occurrence: Date, level: BatteryRisk) {
            self.alarm = alarm
            self.setting = setting
            self.occurrence = occurrence
            self.level = level
        }
    }

    /// One enabled alarm at one reading: its next occurrence and the forecast for it (risk nil: unknown).
    public struct Observation: Sendable, Equatable {
        public var alarm: Alarm
        public var occurrence: Date
        public var risk: BatteryRisk?
        public var nudge: Nudge?

        public init(alarm: Alarm, occurrence: Date, risk: BatteryRisk?, nudge: Nudge?) {
            self.alarm = alarm
            self.occurrence = occurrence
            self.risk = risk
            self.nudge = nudge
        }
    }

    /// A nudge to play now, for an alarm.
    public struct Step: Sendable, Equatable {
        public var alarm: Alarm
        public var occurrence: Date
        public var nudge: Nudge

        public init(alarm: Alarm, occurrence: Date, nudge: Nudge) {
            self.alarm = alarm
            self.occurrence = occurrence
            self.nudge = nudge
        }
    }

    public private(set) var marks: [Mark]

    public init(marks: [Mark] = []) {
        self.marks = marks
    }

    static func setting(of alarm: Alarm) -> String { "\(alarm.time) \(alarm.repetition)" }

    static func rank(_ risk: BatteryRisk) -> Int {
        switch risk {
        case .safe: 0
        case .warning: 1
        case .critical: 2
        }
    }

    /// One reading. `observations` are the enabled alarms with a next occurrence (others are forgotten);
    /// `pluggedIn` ends every risk. Returns the nudges to play, at most one per alarm.
    public mutating func observe(_ observations: [Observation], pluggedIn: Bool) -> [Step] {
        var next: [Mark] = []
        var steps: [Step] = []
        for observation in observations {
            let alarm = observation.alarm
            let setting = Self.setting(of: alarm)
            let previous = marks.first { $0.alarm == alarm.id }
            var mark: Mark
            if let previous, previous.setting == setting, previous.occurrence == observation.occurrence {
                mark = previous
            } else if let previous, previous.setting == setting {
                // The next occurrence of an alarm already followed: its risk is news.
                mark = Mark(alarm: alarm.id, setting: setting, occurrence: observation.occurrence, level: .safe)
            } else {
                // First seen enabled (or changed): what the person saw when toggling it on.
                mark = Mark(alarm: alarm.id, setting: setting, occurrence: observation.occurrence,
                            level: pluggedIn ? .safe : (observation.risk ?? .safe))
            }
            if pluggedIn {
                mark.level = .safe
            } else if let risk = observation.risk, Self.rank(risk) > Self.rank(mark.level) {
                mark.level = risk
                if let nudge = observation.nudge {
                    steps.append(Step(alarm: alarm, occurrence: observation.occurrence, nudge: nudge))
                }
            }
            next.append(mark)
        }
        marks = next
        return steps
    }
}
