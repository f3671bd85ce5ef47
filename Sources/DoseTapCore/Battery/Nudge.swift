/// The message shown when the battery will not last. Computed fresh every time, so a warning never
/// outlives the condition that caused it (plugging in makes it disappear).
public struct Nudge: Sendable, Equatable {
    public enum Severity: String, Sendable, Equatable, Codable {
        case critical
        case warning
    }

    public enum Color: String, Sendable, Equatable, Codable {
        case red
        case orange
    }

    public var severity: Severity
    public var header: String
    public var headline: String
    public var action: String
    public var color: Color
    /// When the prediction is at or below the level where the machine stops itself: that fact, e.g.
    /// "This machine powers itself off at 2%." — an extra line; header, headline and action stay the seed's.
    public var powerOff: String?
    /// The night the number assumes, for a person: "if this machine sleeps from about 23:10 until the alarm
    /// wakes it" (#24); nil for the seed's model alone.
    public var assumption: String?
    /// For a nudge shown because the last safe moment is near (#52, `NudgeDecision.Why.deadlineNear`): "At risk
    /// unless this machine sleeps or is plugged in by 02:45." — an extra line; nil otherwise.
    public var deadlineText: String?

    public init(severity: Severity, header: String, headline: String, action: String, color: Color, powerOff: String? = nil,
                assumption: String? = nil, deadlineText: String? = nil) {
        self.assumption = assumption
        self.deadlineText = deadlineText
        self.severity = severity
        self.header = header
        self.headline = headline
        self.action = action
        self.color = color
        self.powerOff = powerOff
    }

    /// The nudge for a prediction, or `nil` when the battery is safe: there is no "all clear".
    ///
    /// - Parameter moment: what the prediction is for, as it reads in the headline
    ///   ("alarm" → "Estimated battery at alarm: 4%").
    /// - Parameter policy: how the power-off fact reads when the prediction is at or below the machine's
    ///   power-off level (`prediction.powerOffLevel`).
    public static func forPrediction(_ prediction: RiskPrediction, moment: String = "alarm",
                                     policy: PowerOffPolicy = .upowerDefault) -> Nudge? {
        let headline = "Estimated battery at \(moment): \(prediction.predictedLevel)%"
        let powerOff = prediction.powerOffLevel.map { policy.fact(level: $0) }
        switch prediction.risk {
        case .safe:
            return nil
        case .warning:
            return Nudge(severity: .warning, header: "Low Battery Warning", headline: headline,
                         action: "Consider plugging in.", color: .orange, powerOff: powerOff)
        case .critical:
            return Nudge(severity: .critical, header: "Alarm at Risk", headline: headline,
                         action: "Plug in now.", color: .red, powerOff: powerOff)
        }
    }

    /// One line, for logs and confirmations: "Estimated battery at alarm: 4% — Plug in now."
    public var oneLine: String { "\(headline) — \(action)" }

    /// The one line and, when there is one, the power-off fact: a notification's body.
    public var fullText: String {
        let base = powerOff.map { "\(oneLine) \($0)" } ?? oneLine
        let assumed = assumption.map { "\(base) Assuming: \($0)." } ?? base
        return deadlineText.map { "\(assumed) \($0)" } ?? assumed
    }
}
