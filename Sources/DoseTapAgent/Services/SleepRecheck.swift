import DoseTapApp
import DoseTapCore
import Foundation
import Logging

/// The re-check at `PrepareForSleep(true)` (#24): every enabled alarm's next occurrence forecast as the
/// machine will really have it now — asleep from this moment until the alarm wakes it, at the drain asleep
/// this machine taught (or the stated prior) — and, when one is at risk even so, its nudge shown and
/// sounded before the sleep guard releases logind's lock (the person may still plug in). It waits
/// `grace` for the sound to start, well inside logind's 5 s delay. Decided by the deadline (#52,
/// `BatteryStatus.alarmForecast`): going to sleep, only the night asleep from now counts — unless the machine
/// cannot wake itself for the alarm or another program blocks the sleep (`NudgeDecision.willNotSleep`).
public struct SleepRecheck: Sendable {
    public static let grace: TimeInterval = 1.5

    private let alarms: @Sendable () throws -> [Alarm]
    private let battery: @Sendable () -> BatteryStatus?
    private let clock: any Scheduling
    private let logger: Logger
    private let play: @Sendable (AlarmRiskTracker.Step) async -> Void

    /// - Parameters:
    ///   - battery: the battery now, with the night outlook of a machine going to sleep.
    public init(alarms: @escaping @Sendable () throws -> [Alarm], battery: @escaping @Sendable () -> BatteryStatus?,
                clock: any Scheduling, logger: Logger, play: @escaping @Sendable (AlarmRiskTracker.Step) async -> Void) {
        self.alarms = alarms
        self.battery = battery
        self.clock = clock
        self.logger = logger
        self.play = play
    }

    /// The nudges played (empty when every alarm is safe asleep, or none is enabled).
    @discardableResult
    public func run() async -> [AlarmRiskTracker.Step] {
        let now = clock.now()
        let enabled: [Alarm]
        do {
            enabled = try alarms().filter(\.enabled)
        } catch {
            logger.error("going to sleep: cannot read the alarms for the battery re-check", metadata: ["error": "\(error)"])
            return []
        }
        guard !enabled.isEmpty, let status = battery() else { return [] }
        var steps: [AlarmRiskTracker.Step] = []
        for alarm in enabled {
            guard let next = alarm.nextOccurrence(after: now, in: clock.timeZone) else { continue }
            let forecast = status.alarmForecast(at: next, now: now)
            guard let nudge = forecast.nudge else {
                // The journal's line (docs/alarms.md, the VM tier's wake test): "safe, about N% at T" whenever a
                // level is forecast, the decision's reason after it.
                let level = forecast.decision?.prediction?.predictedLevel ?? forecast.predictedLevel
                let reason = forecast.decision.map { ": \($0.because)" } ?? ""
                var metadata: Logger.Metadata = [
                    "asleepDrainPercentPerHour": "\(status.night.map { "\($0.learning.sleepDrain.estimate.percentPerHour.rounded(places: 2))" } ?? "-")",
                ]
                if let decision = forecast.decision { metadata["nudgeWhy"] = "\(decision.why.rawValue)" }
                if let assumption = forecast.assumption { metadata["assumption"] = "\(assumption.kind.rawValue)" }
                if let level {
                    logger.info("going to sleep: alarm \(alarm.id) safe, about \(level)% at \(next.rfc3339(in: clock.timeZone))\(reason)",
                                metadata: metadata)
                } else {
                    logger.info("going to sleep: alarm \(alarm.id) safe\(reason)", metadata: metadata)
                }
                continue
            }
            let step = AlarmRiskTracker.Step(alarm: alarm, occurrence: next, nudge: nudge)
            logger.warning("going to sleep, and the alarm is at risk even asleep: \(nudge.header): \(AlarmRiskMonitor.body(step))",
                           metadata: ["alarm": "\(alarm.id)", "nudgeWhy": "\(forecast.decision?.why.rawValue ?? "-")"])
            await play(step)
            steps.append(step)
        }
        if !steps.isEmpty {
            _ = await clock.sleep(until: clock.now().addingTimeInterval(Self.grace))
        }
        return steps
    }
}
