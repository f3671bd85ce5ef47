import DoseTapCore
import Foundation

/// An alarm as every face shows it: when it next rings and, for an enabled alarm the battery will not
/// last to, the nudge (computed now, never stored: plugging in makes it vanish).
public struct AlarmView: Sendable, Equatable {
    public var alarm: Alarm
    public var nextAt: Date?
    public var nudge: Nudge?
    /// When its latest occurrence was missed (nobody answered, or the machine was off or asleep); nil when
    /// its latest ring was answered or it never rang.
    public var missedAt: Date?
    /// For an enabled alarm whose battery cannot be predicted yet (the drain is not known): why. Such an
    /// alarm is not "safe" — it says it cannot predict yet. nil when predicted (at risk or safe) or off.
    public var cannotPredict: String?
    /// The battery forecast at the next occurrence, when it could be made (with the night it assumes).
    public var forecast: BatteryForecast?
    /// Whether the nudge is shown, by the deadline (#52), when the battery was read with the machine's nights; nil for
    /// an alarm that is off, or when the battery could not be read.
    public var decision: NudgeDecision?
    /// Why no decision was made (the alarm is off, the battery cannot be read…), for the JSON's `deadlineWhy`.
    public var undecided: String?

    public init(alarm: Alarm, nextAt: Date?, nudge: Nudge?, cannotPredict: String? = nil, missedAt: Date? = nil) {
        self.alarm = alarm
        self.nextAt = nextAt
        self.nudge = nudge
        self.cannotPredict = cannotPredict
        self.missedAt = missedAt
    }
}

extension AlarmView {
    /// The alarm as shown at `now`: its next occurrence and, when enabled and the battery is present, the forecast
    /// there — its nudge when at risk, or why it cannot be predicted yet.
    public static func make(_ alarm: Alarm, status: BatteryStatus?, now: Date, in zone: TimeZone) -> AlarmView {
        let next = alarm.nextOccurrence(after: now, in: zone)
        var nudge: Nudge?
        var cannotPredict: String?
        var made: BatteryForecast?
        var decision: NudgeDecision?
        var undecided: String?
        if let next, let status, status.state.present {
            let forecast = status.alarmForecast(at: next, now: now)
            nudge = forecast.nudge
            decision = forecast.decision
            if forecast.risk == nil { cannotPredict = forecast.reason ?? "the battery cannot be predicted" } else { made = forecast }
            if decision == nil { undecided = "no night outlook: forecast awake" }
        } else if next == nil {
            undecided = "the alarm is off"
        } else if let status, !status.state.present {
            undecided = "no system battery: this machine runs on external power"
        } else {
            undecided = "the battery cannot be read"
        }
        var shown = AlarmView(alarm: alarm, nextAt: next, nudge: nudge, cannotPredict: cannotPredict)
        shown.forecast = made
        shown.decision = decision
        shown.undecided = undecided
        return shown
    }

    /// The alarm screen (`dosetap alarm list`, the status bar's next alarm): every alarm as shown at `now`, the
    /// battery read (once) only when one is enabled, and `missedAt` for an alarm whose latest ring was missed.
    public static func list(_ alarms: [Alarm], latestRings: [Int: AlarmRing], now: Date, in zone: TimeZone,
                            battery: () -> BatteryStatus?) -> [AlarmView] {
        let status = alarms.contains(where: \.enabled) ? battery() : nil
        return alarms.map { alarm in
            var shown = make(alarm, status: status, now: now, in: zone)
            if let ring = latestRings[alarm.id], ring.outcome == .missed { shown.missedAt = ring.dueAt }
            return shown
        }
    }
}
