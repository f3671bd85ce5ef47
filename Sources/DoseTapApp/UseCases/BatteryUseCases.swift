import DoseTapCore
import DoseTapStore
import Foundation

/// The system battery as every face reports it: the reading now with its drain (fitted from the agent's
/// samples when the hardware gives no rate), and whether it lasts until an alarm.
public struct BatteryUseCases: Sendable {
    private let clock: any WallClock
    /// The battery at a moment, forecast as if the machine were (or were not) going to sleep now.
    private let read: @Sendable (_ now: Date, _ goingToSleep: Bool) throws -> BatteryStatus

    /// The command line's: everything read afresh from the machine and the data folder
    /// (`MachinePorts.batteries` gives it the machine's own ports).
    /// - Parameters:
    ///   - source: the power supplies (the machine's through udev).
    ///   - powerOff: the level at which the machine stops itself (UPower's configuration), read when a
    ///     status is taken.
    ///   - canWake: whether the machine can wake itself for the alarm: the running agent's finding in the
    ///     data folder, else this process's own check.
    public init(store: DataStore, clock: any WallClock,
                source: @escaping @Sendable () throws -> any PowerSupplySource,
                powerOff: @escaping @Sendable () -> PowerOffPolicy,
                canWake: @escaping @Sendable (URL?) -> Bool) {
        self.clock = clock
        read = { [clock] now, goingToSleep in
            let source = try source()
            let database = try store.openForReading()
            let history = database.map { BatterySampleRepository(database: $0) }
            var night = Self.outlook(database: database, zone: clock.timeZone, canWake: canWake)
            night.conditions.goingToSleep = goingToSleep
            return try BatteryStatus.read(source: source, history: history, now: now, powerOff: powerOff(), night: night)
        }
    }

    /// The agent's: one instance for every service and face that reads the battery (the dose nudge, the
    /// alarms, Home Assistant, the dashboard, the re-check before sleep), so they cannot disagree on the
    /// power-off level or the night (#26).
    /// - Parameters:
    ///   - powerOff: the machine's power-off level, read once at start.
    ///   - night: what the agent knows of this machine's nights now, going to sleep or not.
    public init(source: any PowerSupplySource, history: any BatteryHistoryStore, powerOff: PowerOffPolicy, clock: any WallClock,
                night: @escaping @Sendable (_ goingToSleep: Bool) -> NightOutlook) {
        self.clock = clock
        read = { now, goingToSleep in
            try BatteryStatus.read(source: source, history: history, now: now, powerOff: powerOff, night: night(goingToSleep))
        }
    }

    /// The battery now. Reads only: without a database the drain comes from the hardware alone.
    public func status() throws -> BatteryStatus {
        try status(at: clock.now())
    }

    /// The battery now and its forecast at the next `alarm` (local time), its nudge decided by the deadline (#52).
    public func forecast(alarm: TimeOfDay) throws -> (forecast: BatteryForecast, status: BatteryStatus) {
        let now = clock.now()
        let status = try status(at: now)
        let at = alarm.nextOccurrence(after: now, in: clock.timeZone)
        return (status.alarmForecast(at: at, now: now), status)
    }

    /// The battery now, or nil when it cannot be read (for the nudge after a Dose 1: no battery, no nudge).
    public func statusNow() -> BatteryStatus? {
        try? status(at: clock.now())
    }

    /// The battery now, forecast as if the machine went to sleep now (logind's `PrepareForSleep`); nil when unreadable.
    public func statusGoingToSleep() -> BatteryStatus? {
        try? read(clock.now(), true)
    }

    /// The seed's linear model: the predicted level at the alarm, its risk, and the nudge (nil when safe).
    /// Errors are the predictor's one-line reasons (a level out of 0…100, a negative drain…).
    public static func predict(_ input: RiskInput) throws -> (prediction: RiskPrediction, nudge: Nudge?) {
        let prediction: RiskPrediction
        do { prediction = try RiskPredictor.predict(input) } catch { throw UseCaseError(error.description) }
        return (prediction, Nudge.forPrediction(prediction))
    }

    private func status(at now: Date) throws -> BatteryStatus {
        try read(now, false)
    }

    /// The nights the agent learned (nothing yet without a database), with tonight's facts: the agent's last
    /// word on logind, and whether the machine can wake itself for the alarm (`canWake`: the running agent's
    /// finding, else this process's own check).
    static func outlook(database: DoseTapDatabase?, zone: TimeZone, canWake: @Sendable (URL?) -> Bool) -> NightOutlook {
        let learning = database.flatMap { try? NightLearningRepository(database: $0).load() } ?? NightLearning()
        return NightOutlook.commandLine(learning: learning, canWake: canWake(database.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent() }),
                                        timeZone: zone)
    }
}
