import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Logging
import Synchronization
import Testing

/// The overnight re-check (#11 §3) end to end on the real udev adapter: a umockdev battery drained by
/// uevents, the battery monitor, the event bus and `AlarmRiskMonitor`. It lives in `UdevFixtures` (this
/// target's suite of in-process testbeds, run alone under `umockdev-wrapper`), because a testbed
/// replaces /sys for the whole process: no other testbed may run beside it.
extension UdevFixtures {
    @Suite("The overnight re-check on a umockdev battery")
    struct AlarmRiskUdevTests {
        /// 2027-01-15 08:00 UTC; the alarm is daily at 10:00 UTC, 2 h later.
        static let start0 = Date(timeIntervalSince1970: 1_800_000_000)

        final class Recorder: Sendable {
            private let items = Mutex<[Nudge]>([])
            func append(_ nudge: Nudge) { items.withLock { $0.append(nudge) } }
            var all: [Nudge] { items.withLock { $0 } }
        }

        static let battery = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0A08:00/device:1c/PNP0C09:00/PNP0C0A:00/power_supply/BAT0"

        @Test("a battery drained by uevents: safe → warning → critical, once per step, through the real udev adapter and battery monitor")
        func drainedByUevents() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (scripts/run-tests.sh)")
            let scenario = try #require(try Fixtures.powerSupplyScenarios().first { $0.name == "ac-offline" })
            let testbed = UmockdevTestbed()
            try testbed.add(scenario.umockdev)
            // ac-offline: 62 % at 6.45 W of 54.21 Wh = 11.898 %/h. The alarm is 2 h away: 62 → 38 % (safe).
            let start = Self.start0
            let clock = FakeClock(start)
            let bus = EventBus()
            let played = Recorder()
            let (evaluated, evaluations) = AsyncStream<BatteryStatus>.makeStream()
            let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            let alarm = try Alarm(id: 1, time: TimeOfDay(parsing: "10:00"), label: "Work", repetition: .daily)
            let risk = AlarmRiskMonitor(events: bus, alarms: { [alarm] }, clock: clock, logger: logger,
                                        play: { step in played.append(step.nudge) })
            let source = try UdevPowerSupplySource()
            let monitor = BatteryMonitor(source: source, history: nil, clock: clock, configuration: ConfigurationHolder(AgentConfiguration()),
                                         logger: logger, events: bus, onEvaluated: { evaluations.yield($0) })
            let riskTask = Task { try await risk.run() }
            let monitorTask = Task { try await monitor.run() }
            var readings = evaluated.makeAsyncIterator()
            #expect(await readings.next()?.state.level == 62)

            // Each step: new capacity and energy, then a change uevent; the monitor reads the device again.
            var levels: [Int] = [62]
            for level in [50, 44, 43, 40, 30, 28, 27] {
                testbed.setAttribute(Self.battery, "capacity", "\(level)")
                testbed.setAttribute(Self.battery, "energy_now", "\(level * 542_100)")
                testbed.uevent(Self.battery, action: "change")
                let status = try #require(await readings.next())
                levels.append(Int(status.state.level ?? -1))
            }
            #expect(levels == [62, 50, 44, 43, 40, 30, 28, 27])
            bus.finish()
            try await riskTask.value
            monitorTask.cancel()
            // 44 → 20 % warning (43, 40 → 19, 16: nothing more); 30 → 6 % still warning; 28 → 4 % critical; 27 → 3 %: nothing.
            let nudges = played.all
            #expect(nudges.map(\.severity) == [.warning, .critical])
            #expect(nudges.map(\.headline) == ["Estimated battery at alarm: 20%", "Estimated battery at alarm: 4%"])
            #expect(nudges.map(\.header) == ["Low Battery Warning", "Alarm at Risk"])
            withExtendedLifetime(testbed) {}
        }
    }
}
