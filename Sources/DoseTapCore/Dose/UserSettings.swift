import Foundation

/// What `dosetap setup` asks once: the person's night, their doses, and how they want to be told.
public struct UserSettings: Sendable, Equatable, Codable {
    public var bedtime: String
    public var wakeTime: String
    /// Grams of sodium oxybate in each dose.
    public var dose1Grams: Double
    public var dose2Grams: Double
    /// Minutes after dose 1 at which the reminder rings: one of `DoseRules.targetOptions`.
    public var dose2TargetMinutes: Int
    public var notificationsEnabled: Bool
    /// Quiet mode mutes sounds (haptics still play; urgent dose alerts and alarms are never muted).
    public var quietMode: Bool
    /// False until the wizard (or its flags) has run once.
    public var configured: Bool

    public init(bedtime: String = "22:30", wakeTime: String = "06:30", dose1Grams: Double = 4.5,
                dose2Grams: Double = 4.5, dose2TargetMinutes: Int = DoseRules.defaultTarget,
                notificationsEnabled: Bool = true, quietMode: Bool = false, configured: Bool = false) {
        self.bedtime = bedtime
        self.wakeTime = wakeTime
        self.dose1Grams = dose1Grams
        self.dose2Grams = dose2Grams
        self.dose2TargetMinutes = dose2TargetMinutes
        self.notificationsEnabled = notificationsEnabled
        self.quietMode = quietMode
        self.configured = configured
    }

    public static let defaults = UserSettings()
    /// A single dose above this is refused as a typo (the nightly maximum of the regimen is 9 g).
    public static let gramsRange: ClosedRange<Double> = 0.25...9

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Stored settings with every value that is out of its range (written by hand, or by an older
    /// version) replaced by its default, so a negative reminder target can never reach the schedule.
    public func repaired() -> UserSettings {
        var s = self
        let d = UserSettings.defaults
        if (try? TimeOfDay(parsing: s.bedtime)) == nil { s.bedtime = d.bedtime }
        if (try? TimeOfDay(parsing: s.wakeTime)) == nil { s.wakeTime = d.wakeTime }
        if s.bedtime == s.wakeTime { s.bedtime = d.bedtime; s.wakeTime = d.wakeTime }
        if !(s.dose1Grams.isFinite && Self.gramsRange.contains(s.dose1Grams)) { s.dose1Grams = d.dose1Grams }
        if !(s.dose2Grams.isFinite && Self.gramsRange.contains(s.dose2Grams)) { s.dose2Grams = d.dose2Grams }
        if s.dose1Grams + s.dose2Grams > 9 { s.dose1Grams = d.dose1Grams; s.dose2Grams = d.dose2Grams }
        if !DoseRules.targetOptions.contains(s.dose2TargetMinutes) { s.dose2TargetMinutes = d.dose2TargetMinutes }
        return s
    }

    /// Every value checked, with a one-line reason for the first that is wrong.
    public func validated() throws(Invalid) -> UserSettings {
        for (name, text) in [("bedtime", bedtime), ("wake time", wakeTime)] {
            do { _ = try TimeOfDay(parsing: text) } catch { throw Invalid(description: "\(name): \(error)") }
        }
        if (try? TimeOfDay(parsing: bedtime)) == (try? TimeOfDay(parsing: wakeTime)) {
            throw Invalid(description: "bedtime and wake time must differ (both are \(bedtime)): a night needs a start and an end")
        }
        for (name, grams) in [("dose 1", dose1Grams), ("dose 2", dose2Grams)] {
            guard grams.isFinite, Self.gramsRange.contains(grams) else {
                throw Invalid(description: "\(name) amount must be between 0.25 and 9 grams (got \(grams.isNaN ? "NaN" : String(grams)))")
            }
        }
        if dose1Grams + dose2Grams > 9 {
            throw Invalid(description: "dose 1 and dose 2 together must not exceed 9 grams a night (got \(dose1Grams + dose2Grams))")
        }
        guard DoseRules.targetOptions.contains(dose2TargetMinutes) else {
            throw Invalid(description: "dose 2 target must be one of \(DoseRules.targetOptions.map(String.init).joined(separator: ", ")) minutes (got \(dose2TargetMinutes))")
        }
        return self
    }
}
