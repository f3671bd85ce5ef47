import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// The one dose use case: the battery nudge after Dose 1 for every source, and the events it publishes.
@Suite("DoseUseCases and the event bus")
struct DoseUseCasesTests {
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }

    /// 34 % at 8 %/h (4 W of 50 Wh): 12 % left at a reminder 165 min away → warning.
    static let draining = BatteryStatus(state: PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4),
                                                               .mains(online: false)]),
                                        drain: DrainEstimate(percentPerHour: 8, source: .hardware))
    static let lowDrain = BatteryStatus(state: PowerState(raw: [.battery(capacity: 80, energyNowWh: 40, energyFullWh: 50, powerW: 0.5),
                                                               .mains(online: false)]),
                                        drain: DrainEstimate(percentPerHour: 1, source: .hardware))
    static let plugged = BatteryStatus(state: PowerState(raw: [.battery(status: "Charging", capacity: 34), .mains(online: true)]),
                                       drain: DrainEstimate(percentPerHour: nil, source: .unknown))

    func useCases(battery: BatteryStatus?, events: EventBus? = nil) throws -> (DoseUseCases, FakeClock) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-usecase-\(UUID().uuidString)")
        let clock = FakeClock(t0, timeZone: ny)
        let repo = DoseRepository(database: try DoseTapDatabase(directory: dir))
        return (DoseUseCases(repository: repo, clock: clock, battery: { battery }, events: events), clock)
    }

    @Test("Dose 1 from every source carries the battery-at-reminder nudge when the battery will not last",
          arguments: InputSource.allCases.filter { $0 != .agent })
    func nudgeForEverySource(_ source: InputSource) throws {
        let (cases, _) = try useCases(battery: Self.draining)
        let submission = try cases.submit(.take(confirmLate: false), source: source)
        guard case .recorded(let event, _, _) = submission.outcome else { Issue.record("refused"); return }
        #expect(event.kind == .dose1(targetMinutes: 165))
        #expect(submission.nudge?.severity == .warning) // 34 % − 8 %/h × 2.75 h = 12 %
        #expect(submission.nudge?.headline == "Estimated battery at reminder: 12%")
    }

    @Test("the reminder's nudge counts the machine's power-off level like the alarm's: at it critical with the fact, above it not")
    func reminderPowerOff() throws {
        // 12 % predicted at the reminder: a warning with UPower's 2 %; critical, and said, with PercentageAction=12
        // (valid in UPower beside, say, PercentageLow=30 and PercentageCritical=15).
        var status = Self.draining
        status.powerOff = PowerOffPolicy(percentage: 12, action: .powerOff)
        let (cases, _) = try useCases(battery: status)
        let at = try cases.submit(.take(confirmLate: false), source: .cli)
        #expect(at.nudge?.severity == .critical)
        #expect(at.nudge?.header == "Alarm at Risk")
        #expect(at.nudge?.headline == "Estimated battery at reminder: 12%")
        #expect(at.nudge?.powerOff == "This machine powers itself off at 12%.")
        status.powerOff = PowerOffPolicy(percentage: 11.5)
        let (above, _) = try useCases(battery: status)
        let warning = try above.submit(.take(confirmLate: false), source: .cli)
        #expect(warning.nudge?.severity == .warning)
        #expect(warning.nudge?.powerOff == nil)
    }

    @Test("no nudge when it will last, when plugged in, without a battery reader, and never for Dose 2")
    func noNudge() throws {
        for battery in [Self.lowDrain, Self.plugged] {
            let (cases, _) = try useCases(battery: battery)
            let submission = try cases.submit(DoseCommand.take(confirmLate: false), source: InputSource.button)
            #expect(submission.nudge == nil)
        }
        let (cases, clock) = try useCases(battery: Self.draining)
        _ = try cases.submit(.take(confirmLate: false), source: .cli)
        clock.set(t0.addingTimeInterval(151 * 60))
        let dose2 = try cases.submit(.take(confirmLate: false), source: .button)
        guard case .recorded(let event, _, _) = dose2.outcome else { Issue.record("refused"); return }
        #expect(event.kind == .dose2(late: false))
        #expect(dose2.nudge == nil)
    }

    @Test("recorded and refused inputs are published to every subscriber, in order")
    func events() async throws {
        let bus = EventBus()
        let first = bus.subscribe()
        let second = bus.subscribe()
        let (cases, _) = try useCases(battery: Self.draining, events: bus)
        _ = try cases.submit(.take(confirmLate: false), source: .notification)
        _ = try cases.submit(.take(confirmLate: false), source: .button)
        bus.finish()
        for stream in [first, second] {
            var seen: [String] = []
            for await event in stream {
                switch event {
                case .doseRecorded(let e, _, _, let nudge):
                    seen.append("recorded \(e.source.rawValue) nudge=\(nudge?.severity.rawValue ?? "none")")
                case .doseRefused(let refusal, let source):
                    seen.append("refused \(source.rawValue) \(refusal.code.rawValue)")
                default:
                    seen.append("other")
                }
            }
            #expect(seen == ["recorded notification nudge=warning", "refused button too-early"])
        }
    }

    @Test("a slow subscriber loses its oldest events, never blocks the publisher or the others")
    func slowSubscriber() async {
        let bus = EventBus()
        let slow = bus.subscribe(buffer: 4)
        let fast = bus.subscribe()
        var fastIterator = fast.makeAsyncIterator()
        for _ in 0..<10 { bus.publish(.settingsChanged) }
        var fastCount = 0
        for _ in 0..<10 where await fastIterator.next() != nil { fastCount += 1 }
        #expect(fastCount == 10)
        bus.finish()
        var slowCount = 0
        for await _ in slow { slowCount += 1 }
        #expect(slowCount == 4)
        #expect(bus.dropped == 6)
        #expect(bus.subscriberCount == 0)
    }

    @Test("a subscriber that stops listening is removed")
    func unsubscribe() async {
        let bus = EventBus()
        do {
            let stream = bus.subscribe()
            let task = Task { for await _ in stream {} }
            #expect(bus.subscriberCount == 1)
            task.cancel()
            await task.value
        }
        bus.publish(.settingsChanged)
        #expect(bus.subscriberCount == 0)
    }
}
