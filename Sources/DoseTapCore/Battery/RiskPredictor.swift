/// How likely the battery is to die before a moment that matters (an alarm, a dose reminder).
public enum BatteryRisk: String, Sendable, Equatable, Codable, CaseIterable {
    case safe
    case warning
    case critical
}

/// What the predictor needs: the battery now, how fast it drains, and how long until the moment.
public struct RiskInput: Sendable, Equatable {
    public var level: Double
    public var drainPercentPerHour: Double
    public var hours: Double
    public var charging: Bool

    public init(level: Double, drainPercentPerHour: Double, hours: Double, charging: Bool) {
        self.level = level
        self.drainPercentPerHour = drainPercentPerHour
        self.hours = hours
        self.charging = charging
    }
}

/// A rejected input, with a one-line reason a person can act on.
public enum RiskInputError: Error, Equatable, CustomStringConvertible {
    case level(Double)
    case drain(Double)
    case hours(Double)

    public var description: String {
        switch self {
        case .level(let v): "level must be a finite percentage between 0 and 100 (got \(RiskInputError.show(v)))"
        case .drain(let v): "drain must be a finite rate of at least 0 %/h (got \(RiskInputError.show(v)))"
        case .hours(let v): "hours must be a finite number of at least 0 (got \(RiskInputError.show(v)))"
        }
    }

    static func show(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-infinity" : "infinity" }
        return v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }
}

public struct RiskPrediction: Sendable, Equatable {
    public var risk: BatteryRisk
    /// The predicted level at the moment, clamped at 0 and rounded down to a whole percent.
    public var predictedLevel: Int
    /// The machine's power-off level when the prediction is at or below it (then the risk is critical:
    /// a machine that powers itself off at 2 % cannot ring at 2 %), else nil.
    public var powerOffLevel: Double?

    public init(risk: BatteryRisk, predictedLevel: Int, powerOffLevel: Double? = nil) {
        self.risk = risk
        self.predictedLevel = predictedLevel
        self.powerOffLevel = powerOffLevel
    }
}

/// The linear battery model of design.md §3.1.
///
/// `predicted = level − drain × hours`, clamped at 0. Charging is always safe. The predicted level is
/// rounded *down* before it is classified, so a borderline case goes to the higher risk:
/// `> 20` safe, `6…20` warning, `≤ 5` critical.
public enum RiskPredictor {
    /// Above this whole percent the battery is safe.
    public static let warningCeiling = 20
    /// At or below this whole percent the battery is critical.
    public static let criticalCeiling = 5

    public static func validate(_ input: RiskInput) throws(RiskInputError) {
        guard input.level.isFinite, input.level >= 0, input.level <= 100 else { throw .level(input.level) }
        guard input.drainPercentPerHour.isFinite, input.drainPercentPerHour >= 0 else {
            throw .drain(input.drainPercentPerHour)
        }
        guard input.hours.isFinite, input.hours >= 0 else { throw .hours(input.hours) }
    }

    /// - Parameter powerOffLevel: the level at which the machine stops itself (UPower's action level,
    ///   see `PowerOffPolicy`); a prediction at or below it is critical whatever the tiers say. nil: the
    ///   seed's model alone (empty is 0 %). A level of 0 or less adds nothing.
    public static func predict(_ input: RiskInput, powerOffLevel: Double? = nil) throws(RiskInputError) -> RiskPrediction {
        try validate(input)
        if input.charging {
            // Plugged in: the level will not fall, whatever the drain figure says.
            return RiskPrediction(risk: .safe, predictedLevel: wholePercentDown(input.level))
        }
        let predicted = max(0, input.level - input.drainPercentPerHour * input.hours)
        let whole = wholePercentDown(predicted)
        let powerOff = powerOffLevel.flatMap { $0.isFinite && $0 > 0 && Double(whole) <= $0 ? $0 : nil }
        return RiskPrediction(risk: powerOff == nil ? classify(wholePercent: whole) : .critical, predictedLevel: whole,
                              powerOffLevel: powerOff)
    }

    public static func classify(wholePercent: Int) -> BatteryRisk {
        if wholePercent > warningCeiling { return .safe }
        if wholePercent > criticalCeiling { return .warning }
        return .critical
    }

    /// Rounds down, ignoring the last bits of floating-point noise (so 29 − 0.3 × 30 is 20, not 19).
    static func wholePercentDown(_ value: Double) -> Int {
        Int((value + 1e-9).rounded(.down))
    }
}
