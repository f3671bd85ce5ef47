import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

@Suite("BatteryForecast")
struct ForecastTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a known drain gives a risk and a nudge")
    func known() {
        let state = PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50)])
        let f = BatteryForecast.make(state: state, drain: DrainEstimate(percentPerHour: 8, source: .history),
                                     at: now.addingTimeInterval(6 * 3600), now: now)
        #expect(f.risk == .critical)
        #expect(f.predictedLevel == 0)
        #expect(f.nudge?.header == "Alarm at Risk")
        #expect(f.hoursUntil == 6)
    }

    @Test("an unknown drain is an unknown risk, not a guess")
    func unknown() {
        let state = PowerState(raw: [.battery(capacity: 34, powerW: nil)])
        let f = BatteryForecast.make(state: state, drain: .unknown, at: now.addingTimeInterval(3600), now: now)
        #expect(f.risk == nil)
        #expect(f.predictedLevel == nil)
        #expect(f.nudge == nil)
        #expect(f.reason != nil)
    }

    @Test("on AC is safe whatever the drain")
    func plugged() {
        let state = PowerState(raw: [.battery(status: "Charging", capacity: 3, powerW: nil)])
        let f = BatteryForecast.make(state: state, drain: .unknown, at: now.addingTimeInterval(8 * 3600), now: now)
        #expect(f.risk == .safe)
        #expect(f.nudge == nil)
        #expect(f.charging)
    }

    @Test("no battery: safe, no nudge, and a reason")
    func noBattery() {
        let f = BatteryForecast.make(state: PowerState(raw: [.mains(online: true)]), drain: .unknown,
                                     at: now.addingTimeInterval(3600), now: now)
        #expect(f.risk == .safe)
        #expect(f.nudge == nil)
        #expect(f.reason?.contains("no system battery") == true)
    }
}
