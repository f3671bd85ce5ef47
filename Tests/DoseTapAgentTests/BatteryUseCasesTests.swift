import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// Battery status and forecast as `dosetap battery` and `predict` show them.
@Suite("BatteryUseCases")
struct BatteryUseCasesTests {
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }

    struct Unreadable: Error {}

    func useCases(_ supplies: [RawPowerSupply], folder: URL = freshDataFolder()) -> BatteryUseCases {
        let source = FakePowerSupplySource(supplies)
        return BatteryUseCases(store: DataStore(directory: folder), clock: FakeClock(t0, timeZone: ny), source: { source },
                               powerOff: { .upowerDefault }, canWake: { _ in false })
    }

    @Test("status reads the battery and the hardware drain, and never creates the database")
    func status() throws {
        let folder = freshDataFolder()
        let cases = useCases([.battery(energyNowWh: 20, energyFullWh: 50, powerW: 1.5), .mains(online: false)], folder: folder)
        let status = try cases.status()
        #expect(status.state.level == 40)
        #expect(status.drain.percentPerHour == 3)
        #expect(status.drain.source == .hardware)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("dosetap.sqlite").path))
    }

    @Test("forecast at the next 06:30: warning when the battery runs low, safe when it lasts or charges")
    func forecast() throws {
        let alarm = try TimeOfDay(parsing: "06:30")
        let low = try useCases([.battery(energyNowWh: 20, energyFullWh: 50, powerW: 1.5), .mains(online: false)]).forecast(alarm: alarm)
        #expect(low.forecast.at == localDate("2026-01-16 06:30:00", ny))
        #expect(low.forecast.risk == .warning) // 40 % − 3 %/h × 8 h = 16 %
        #expect(low.forecast.predictedLevel == 16)
        // The nudge is the deadline's decision (#52: this machine cannot wake itself, so it will not sleep): its number
        // counts the alarm's ten minutes of ringing too, 40 − 3 × 8⅙ = 15.5, rounded down.
        #expect(low.forecast.nudge?.headline == "Estimated battery at alarm: 15%")
        #expect(low.forecast.json(in: ny).text.hasPrefix(#"{"alarmAt":"2026-01-16T06:30:00-05:00","hoursUntil":8,"level":40,"#))
        let charging = try useCases([.battery(status: "Charging", energyNowWh: 20, energyFullWh: 50, powerW: 1.5), .mains(online: true)])
            .forecast(alarm: alarm)
        #expect(charging.forecast.risk == .safe)
        #expect(charging.forecast.nudge == nil)
    }

    @Test("the battery for the nudge: nil when the supplies cannot be read, the status when they can")
    func statusNow() {
        let failing = BatteryUseCases(store: DataStore(directory: freshDataFolder()), clock: FakeClock(t0), source: { throw Unreadable() },
                                      powerOff: { .upowerDefault }, canWake: { _ in false })
        #expect(failing.statusNow() == nil)
        #expect(throws: Unreadable.self) { try failing.status() }
        #expect(useCases([.battery(), .mains(online: false)]).statusNow()?.state.level == 80)
    }

    @Test("predict: the seed's cases, and a refused input as a one-line error")
    func predict() throws {
        let critical = try BatteryUseCases.predict(RiskInput(level: 34, drainPercentPerHour: 8, hours: 6, charging: false))
        #expect(critical.prediction.risk == .critical && critical.prediction.predictedLevel == 0)
        #expect(critical.nudge?.header == "Alarm at Risk")
        #expect(critical.prediction.json.text == #"{"risk":"critical","predictedLevel":0}"#)
        let safe = try BatteryUseCases.predict(RiskInput(level: 80, drainPercentPerHour: 3, hours: 8, charging: false))
        #expect(safe.prediction.risk == .safe && safe.nudge == nil)
        #expect(throws: UseCaseError.self) {
            try BatteryUseCases.predict(RiskInput(level: 120, drainPercentPerHour: 3, hours: 8, charging: false))
        }
    }
}
