import DoseTapAgent
import DoseTapCore
import DoseTapTesting
import Foundation
import Logging
import Synchronization
import Testing

/// The battery-nudge feedback: played when the alarm's risk rises, once per step.
@Suite("BatteryNudgeFeedback")
struct BatteryNudgeFeedbackTests {
    static let warning = Nudge.forPrediction(RiskPrediction(risk: .warning, predictedLevel: 13))!
    static let critical = Nudge.forPrediction(RiskPrediction(risk: .critical, predictedLevel: 2))!

    @Test("rises play, repeats and falls do not; a rise after plugging in plays again")
    func steps() async throws {
        let bus = EventBus()
        let played = Mutex<[String]>([])
        let (done, finished) = AsyncStream<Void>.makeStream()
        let service = BatteryNudgeFeedback(events: bus) { nudge in
            played.withLock { $0.append(nudge.header) }
        }
        let task = Task {
            try await service.run()
            finished.yield()
        }
        for nudge in [nil, Self.warning, Self.warning, Self.critical, Self.critical, nil, Self.critical, Self.warning] {
            bus.publish(.batteryRisk(nudge))
        }
        bus.publish(.settingsChanged)
        bus.finish()
        var it = done.makeAsyncIterator()
        _ = await it.next()
        _ = task
        #expect(played.withLock { $0 } == ["Low Battery Warning", "Alarm at Risk", "Alarm at Risk"])
    }

    @Test("the battery monitor publishes each change of the alarm's risk, once")
    func monitorPublishes() async throws {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000) // 08:00 UTC; alarm 14:00 → 6 h
        let source = FakePowerSupplySource([.battery(capacity: 80, energyNowWh: 40, energyFullWh: 50, powerW: 1), .mains(online: false)])
        let clock = FakeClock(t0)
        let bus = EventBus()
        let risks = bus.subscribe()
        let (evaluated, evaluations) = AsyncStream<BatteryStatus>.makeStream()
        let monitor = BatteryMonitor(source: source, history: InMemoryBatteryHistory(), clock: clock,
                                     configuration: ConfigurationHolder(AgentConfiguration(alarm: try TimeOfDay(parsing: "14:00"))),
                                     logger: Logger(label: "test"), events: bus, onEvaluated: { evaluations.yield($0) })
        let task = Task { try await monitor.run() }
        defer { task.cancel() }
        var it = evaluated.makeAsyncIterator()
        _ = await it.next()                                  // 80 % at 2 %/h: 68 % at the alarm, safe
        source.change(.battery(capacity: 40, energyNowWh: 20, energyFullWh: 50, powerW: 2.5))
        _ = await it.next()                                  // 40 % at 5 %/h: 10 % → warning
        source.change(.battery(capacity: 39, energyNowWh: 19.5, energyFullWh: 50, powerW: 2.5))
        _ = await it.next()                                  // still warning: nothing new
        source.change(.battery(capacity: 30, energyNowWh: 15, energyFullWh: 50, powerW: 2.5))
        _ = await it.next()                                  // 30 % at 5 %/h: 0 % → critical
        bus.finish()
        var seen: [String] = []
        for await event in risks {
            if case .batteryRisk(let nudge) = event { seen.append(nudge?.severity.rawValue ?? "safe") }
        }
        #expect(seen == ["safe", "warning", "critical"])
    }
}
