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

    public init(severity: Severity, header: String, headline: String, action: String, color: Color) {
        self.severity = severity
        self.header = header
        self.headline = headline
        self.action = action
        self.color = color
    }

    /// The nudge for a prediction, or `nil` when the battery is safe: there is no "all clear".
    ///
    /// - Parameter moment: what the prediction is for, as it reads in the headline
    ///   ("alarm" → "Estimated battery at alarm: 4%").
    public static func forPrediction(_ prediction: RiskPrediction, moment: String = "alarm") -> Nudge? {
        let headline = "Estimated battery at \(moment): \(prediction.predictedLevel)%"
        switch prediction.risk {
        case .safe:
            return nil
        case .warning:
            return Nudge(severity: .warning, header: "Low Battery Warning", headline: headline,
                         action: "Consider plugging in.", color: .orange)
        case .critical:
            return Nudge(severity: .critical, header: "Alarm at Risk", headline: headline,
                         action: "Plug in now.", color: .red)
        }
    }

    /// One line, for logs and confirmations: "Estimated battery at alarm: 4% — Plug in now."
    public var oneLine: String { "\(headline) — \(action)" }
}
