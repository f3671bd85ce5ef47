import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapTesting
import Foundation
import InMemoryLogging
import Logging
import Synchronization
import Testing

/// The battery monitor against fake ports: what it stores, when it polls, what it says.
@Suite("BatteryMonitor")
struct BatteryMonitorTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000) // 2027-01-15 08:00 UTC

    /// What a callback was called with, in order.
    final class Calls: Sendable {
        private let calls = Mutex<[Int]>([])
        func record(_ value: Int) { calls.withLock { $0.append(value) } }
        var values: [Int] { calls.withLock { $0 } }
    }

    final class Harness: Sendable {
        let source: FakePowerSupplySource
        let history = InMemoryBatteryHistory()
        let clock: FakeClock
        let configuration: ConfigurationHolder
        let logs = InMemoryLogHandler()
        let monitor: BatteryMonitor
        let evaluations: AsyncStream<BatteryStatus>
        /// Each call of `beforeSample`, with the source's read count at that moment.
        let warmUps = Calls()
        private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)

        init(_ supplies: [RawPowerSupply], at now: Date, configuration: AgentConfiguration = .init()) {
            source = FakePowerSupplySource(supplies)
            clock = FakeClock(now)
            self.configuration = ConfigurationHolder(configuration)
            let (stream, continuation) = AsyncStream<BatteryStatus>.makeStream()
            evaluations = stream
            let handler = logs
            let source = self.source, warmUps = self.warmUps
            monitor = BatteryMonitor(source: source, history: history, clock: clock, configuration: self.configuration,
                                     logger: Logger(label: "test") { _ in handler },
                                     onEvaluated: { continuation.yield($0) },
                                     beforeSample: { warmUps.record(source.readCount) })
        }

        func start() {
            let monitor = self.monitor
            task.withLock { $0 = Task { try await monitor.run() } }
        }

        func stop() {
            task.withLock { $0?.cancel() }
        }

        func messages(_ level: Logger.Level) -> [String] {
            logs.entries.filter { $0.level == level }.map(\.message.description)
        }
    }

    func next(_ stream: AsyncStream<BatteryStatus>) async -> BatteryStatus? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }

    @Test("stores a sample on start and one per change, and says so in the log")
    func samples() async throws {
        let h = Harness([.battery(capacity: 80, energyNowWh: 40, energyFullWh: 50, powerW: 10), .mains(online: false)], at: t0)
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        let first = await it.next()
        #expect(first?.state.level == 80)
        #expect(first?.drain == DrainEstimate(percentPerHour: 20, source: .hardware))
        #expect(h.history.all.count == 1)

        h.clock.advance(by: 45)
        h.source.change(.battery(capacity: 79, energyNowWh: 39.5, energyFullWh: 50, powerW: 10))
        _ = await it.next()
        #expect(h.history.all.map(\.level) == [80, 79])
        // A burst of uevents within 30 s is one observation in the store.
        h.clock.advance(by: 5)
        h.source.change(.battery(capacity: 79, energyNowWh: 39.4, energyFullWh: 50, powerW: 10))
        _ = await it.next()
        #expect(h.history.all.count == 2)
        #expect(h.messages(.info).contains("battery"))
    }

    @Test("polls while discharging, never on AC")
    func polling() async throws {
        let discharging = Harness([.battery(), .mains(online: false)], at: t0, configuration: .init(pollSeconds: 1))
        let plugged = Harness([.battery(status: "Charging"), .mains(online: true)], at: t0, configuration: .init(pollSeconds: 1))
        discharging.start()
        plugged.start()
        defer {
            discharging.stop()
            plugged.stop()
        }
        // On the fake clock: each second of it is one poll of the discharging one, none of the plugged one.
        var d = discharging.evaluations.makeAsyncIterator()
        var p = plugged.evaluations.makeAsyncIterator()
        _ = await d.next()
        _ = await p.next()
        for _ in 0..<2 {
            await discharging.clock.waitForSleepers(1)
            discharging.clock.advance(by: 1)
            _ = await d.next()
        }
        #expect(discharging.source.readCount >= 2)
        // Each poll is announced first (the agent reads back the last sample's pages then), before its reads.
        let warmUps = discharging.warmUps.values
        #expect(warmUps.count == 2)
        #expect(warmUps.first == 0)
        #expect(warmUps == warmUps.sorted() && Set(warmUps).count == warmUps.count)
        plugged.clock.advance(by: 3600)
        #expect(plugged.clock.sleeperCount == 0)
        #expect(plugged.source.readCount == 0)
        // No poll, no announcement: a change seen through udev is not a periodic sample.
        #expect(plugged.warmUps.values.isEmpty)
    }

    @Test("plugging in stops the polling; unplugging starts it again")
    func pollingFollowsAC() async throws {
        let h = Harness([.battery(), .mains(online: false)], at: t0, configuration: .init(pollSeconds: 1))
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        _ = await it.next()
        await h.clock.waitForSleepers(1)
        h.source.change(.mains(online: true))
        h.source.change(.battery(status: "Charging"))
        _ = await it.next()
        let status = await it.next()
        #expect(status?.state.onAC == true)
        let readsWhenPlugged = h.source.readCount
        h.clock.advance(by: 3600)
        #expect(h.source.readCount == readsWhenPlugged)
        #expect(h.clock.sleeperCount == 0)
        h.source.change(.mains(online: false))
        h.source.change(.battery(status: "Discharging"))
        _ = await it.next()
        _ = await it.next()
        await h.clock.waitForSleepers(1)
        h.clock.advance(by: 1)
        _ = await it.next()
        #expect(h.source.readCount > readsWhenPlugged)
    }

    @Test("a wall-clock step re-arms the poll from the new time instead of firing early or late")
    func pollAfterClockStep() async throws {
        let h = Harness([.battery(), .mains(online: false)], at: t0, configuration: .init(pollSeconds: 60))
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        _ = await it.next()
        await h.clock.waitForSleepers(1)
        // The clock is set back an hour: the poll is planned again, 60 s from the new time.
        h.clock.step(to: t0.addingTimeInterval(-3600))
        await h.clock.waitForSleepers(1)
        h.clock.advance(by: 59)
        #expect(h.source.readCount == 0)
        h.clock.advance(by: 1)
        _ = await it.next()
        #expect(h.source.readCount > 0)
    }

    @Test("a poll sees changes the kernel made without a uevent")
    func pollSeesSilentChange() async throws {
        let h = Harness([.battery(capacity: 80)], at: t0, configuration: .init(pollSeconds: 1))
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        _ = await it.next()
        h.source.changeSilently(.battery(capacity: 77))
        await h.clock.waitForSleepers(1)
        h.clock.advance(by: 1)
        let polled = await it.next()
        #expect(polled?.state.level == 77)
    }

    @Test("no battery: said once, nothing stored, nothing polled; a hot-plugged battery is picked up")
    func noBattery() async throws {
        let h = Harness([.mains(online: true)], at: t0, configuration: .init(pollSeconds: 1))
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        // Without a battery nothing is evaluated: wait for the start (its log says "no system battery"),
        // without sleeping for real; the changes below are taken in order before the battery's.
        while !h.messages(.notice).contains(where: { $0.contains("no system battery") }) { await Task.yield() }
        h.source.change(.mains(online: true))
        h.source.change(.mains(online: true))
        h.clock.advance(by: 3600)
        #expect(h.clock.sleeperCount == 0)
        #expect(h.messages(.notice).filter { $0.contains("no system battery") }.count == 1)
        #expect(h.history.all.isEmpty)
        #expect(h.source.readCount == 0)
        h.source.change(.battery(capacity: 55))
        let status = await it.next()
        #expect(status?.state.present == true)
        #expect(h.history.all.count == 1)
        #expect(h.messages(.notice).filter { $0.contains("no system battery") }.count == 1)
    }

    @Test("an alarm at risk is logged once as a warning, and cleared when plugged in")
    func nudge() async throws {
        // 08:00 UTC; alarm 14:00 → 6 h. 34 % at 8 %/h → critical.
        let h = Harness([.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4), .mains(online: false)],
                        at: t0, configuration: .init(alarm: try TimeOfDay(parsing: "14:00")))
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        _ = await it.next()
        h.clock.advance(by: 45) // past the 30-s burst rule, before the 60-s poll
        h.source.change(.battery(capacity: 34, energyNowWh: 16.95, energyFullWh: 50, powerW: 4))
        _ = await it.next()
        #expect(h.messages(.warning) == ["Alarm at Risk: Estimated battery at alarm: 0% — Plug in now."])
        h.source.change(.mains(online: true))
        h.source.change(.battery(status: "Charging", capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4))
        _ = await it.next()
        _ = await it.next()
        #expect(h.messages(.info).contains("battery will last until the alarm"))
        #expect(h.messages(.warning).count == 1)
    }

    @Test("a reload applies the new alarm at once")
    func reload() async throws {
        let h = Harness([.battery(capacity: 55, energyNowWh: 27.5, energyFullWh: 50, powerW: 3)], at: t0)
        h.start()
        defer { h.stop() }
        var it = h.evaluations.makeAsyncIterator()
        _ = await it.next()
        #expect(h.messages(.warning).isEmpty)
        // 55 % at 6 %/h for 7 h → 13 %: warning.
        h.configuration.replace(AgentConfiguration(alarm: try TimeOfDay(parsing: "15:00")))
        h.monitor.reevaluate()
        _ = await it.next()
        #expect(h.messages(.warning) == ["Low Battery Warning: Estimated battery at alarm: 13% — Consider plugging in."])
    }

    @Test("the history in the store seeds the drain after a restart")
    func restart() async throws {
        // A capacity-only battery: no hardware rate. 30 minutes of stored history at 6 %/h.
        let stored = (0...30).map { m in
            BatterySample(at: t0.addingTimeInterval(Double(m - 30) * 60), level: 73 + Double(30 - m) * 0.1, onAC: false,
                          status: .discharging)
        }
        let h = Harness([RawPowerSupply(name: "ups", attributes: ["type": "Battery", "status": "Discharging", "capacity": "73"])],
                        at: t0.addingTimeInterval(60))
        for s in stored { try h.history.append(s) }
        h.start()
        defer { h.stop() }
        let status = await next(h.evaluations)
        #expect(status?.drain.source == .history)
        #expect(abs((status?.drain.percentPerHour ?? 0) - 6) < 0.5)
    }
}
