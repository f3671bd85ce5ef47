import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation

/// The system battery as every face reports it: the reading now with its drain (fitted from the agent's
/// samples when the hardware gives no rate), and whether it lasts until an alarm.
public struct BatteryUseCases: Sendable {
    private let store: DataStore
    private let clock: any WallClock
    private let source: @Sendable () throws -> any PowerSupplySource
    private let powerOff: @Sendable () -> PowerOffPolicy
    private let canWake: @Sendable (URL?) -> Bool

    /// - Parameters:
    ///   - source: the power supplies; by default the machine's, through udev.
    ///   - powerOff: the level at which the machine stops itself; by default UPower's configuration
    ///     (`/etc/UPower`, or `DOSETAP_UPOWER_DIR`), read when a status is taken.
    public init(store: DataStore, clock: any WallClock = SystemClock(),
                source: @escaping @Sendable () throws -> any PowerSupplySource = { try UdevPowerSupplySource() },
                powerOff: @escaping @Sendable () -> PowerOffPolicy = { UPowerConfigFiles.read().policy },
                canWake: @escaping @Sendable (URL?) -> Bool = { directory in
                    directory.map { WakeCheck.problem(dataDirectory: $0) == nil } ?? {
                        if case .success = LinuxWakeAlarm().capability() { return true }
                        return false
                    }()
                }) {
        self.canWake = canWake
        self.store = store
        self.clock = clock
        self.source = source
        self.powerOff = powerOff
    }

    /// The battery now. Reads only: without a database the drain comes from the hardware alone.
    public func status() throws -> BatteryStatus {
        try status(at: clock.now())
    }

    /// The battery now and its forecast at the next `alarm` (local time).
    public func forecast(alarm: TimeOfDay) throws -> (forecast: BatteryForecast, status: BatteryStatus) {
        let now = clock.now()
        let status = try status(at: now)
        let at = alarm.nextOccurrence(after: now, in: clock.timeZone)
        return (status.forecast(at: at, now: now), status)
    }

    /// The battery now, or nil when it cannot be read (for the nudge after a Dose 1: no battery, no nudge).
    public func statusNow() -> BatteryStatus? {
        try? status(at: clock.now())
    }

    /// The seed's linear model: the predicted level at the alarm, its risk, and the nudge (nil when safe).
    /// Errors are the predictor's one-line reasons (a level out of 0…100, a negative drain…).
    public static func predict(_ input: RiskInput) throws -> (prediction: RiskPrediction, nudge: Nudge?) {
        let prediction: RiskPrediction
        do { prediction = try RiskPredictor.predict(input) } catch { throw UseCaseError(error.description) }
        return (prediction, Nudge.forPrediction(prediction))
    }

    private func status(at now: Date) throws -> BatteryStatus {
        let source = try source()
        let database = try store.openForReading()
        let history = database.map { BatterySampleRepository(database: $0) }
        return try BatteryStatus.read(source: source, history: history, now: now, powerOff: powerOff(),
                                      night: Self.outlook(database: database, zone: clock.timeZone, canWake: canWake))
    }

    /// The nights the agent learned (nothing yet without a database), with tonight's facts: the agent's last
    /// word on logind, and whether the machine can wake itself for the alarm (`canWake`: the running agent's
    /// finding, else this process's own check).
    static func outlook(database: DoseTapDatabase?, zone: TimeZone, canWake: @Sendable (URL?) -> Bool) -> NightOutlook {
        let learning = database.flatMap { try? NightLearningRepository(database: $0).load() } ?? NightLearning()
        var conditions = learning.conditions ?? NightConditions()
        conditions.goingToSleep = false
        conditions.canWake = canWake(database.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent() })
        return NightOutlook(learning: learning, conditions: conditions, timeZone: zone)
    }
}
