import DoseTapAgent
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

@Suite("Alarm use cases")
struct AlarmUseCasesTests {
    let clock = FakeClock(localDate("2026-05-04 21:00:00", TimeZone(identifier: "America/New_York")!),
                          timeZone: TimeZone(identifier: "America/New_York")!)
    /// 34 % at 8 %/h on battery.
    static let draining = BatteryStatus(state: PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4),
                                                              .mains(online: false)]),
                                        drain: DrainEstimate(percentPerHour: 8, source: .hardware))

    func useCases(battery: BatteryStatus? = nil, events: EventBus? = nil) throws -> (AlarmUseCases, DoseTapDatabase) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alarm-uc-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        return (AlarmUseCases(store: DataStore(database: db), clock: clock, battery: { battery }, events: events), db)
    }

    @Test("config.toml's [alarm] time becomes a daily alarm labelled config, once: a removal sticks")
    func importOnce() async throws {
        let bus = EventBus()
        let events = bus.subscribe()
        let (alarms, _) = try useCases(events: bus)
        let time = try TimeOfDay(parsing: "06:30")
        let imported = try #require(try alarms.importConfigAlarm(time))
        #expect(imported.alarm.label == "config")
        #expect(imported.alarm.repetition == .daily)
        #expect(imported.alarm.enabled)
        #expect(try alarms.importConfigAlarm(time) == nil)
        try alarms.remove(id: imported.alarm.id)
        #expect(try alarms.importConfigAlarm(time) == nil)
        #expect(try alarms.importConfigAlarm(try TimeOfDay(parsing: "07:00")) == nil)
        #expect(try alarms.list().alarms.isEmpty)
        bus.finish()
        var changes = 0
        for await event in events where event == .settingsChanged { changes += 1 }
        #expect(changes == 2)  // the import and the removal
    }

    @Test("the nudge: only for enabled alarms at risk; warning vs critical by the hours to the alarm; none when safe")
    func nudges() throws {
        let (alarms, _) = try useCases(battery: Self.draining)
        // 21:00 → 23:00 is 2 h: 34 − 16 = 18 % → warning. 21:00 → 03:00 is 6 h: 0 % → critical. 21:30: safe.
        let warning = try alarms.add(.init(time: "23:00"))
        let critical = try alarms.add(.init(time: "03:00"))
        let safe = try alarms.add(.init(time: "21:30"))
        let off = try alarms.add(.init(time: "03:00", enabled: false))
        #expect(warning.nudge?.severity == .warning)
        #expect(warning.nudge?.header == "Low Battery Warning")
        #expect(critical.nudge?.severity == .critical)
        #expect(critical.nudge?.headline == "Estimated battery at alarm: 0%")
        #expect(safe.nudge == nil)
        #expect(off.nudge == nil && off.nextAt == nil)
        let listed = try alarms.list().alarms
        #expect(listed.map { $0.nudge?.severity } == [.warning, .critical, nil, nil])
        // Turned on: the nudge comes with the answer.
        #expect(try alarms.setEnabled(id: off.alarm.id, true).nudge?.severity == .critical)
    }

    @Test("bad input stores nothing: a bad time, repeat or label, an unknown id")
    func badInput() throws {
        let (alarms, _) = try useCases()
        #expect(throws: UseCaseError.self) { try alarms.add(.init(time: "25:00")) }
        #expect(throws: UseCaseError.self) { try alarms.add(.init(time: "06:30", repetition: "mon,xyz")) }
        #expect(throws: UseCaseError.self) { try alarms.add(.init(time: "06:30", label: " ")) }
        #expect(throws: UseCaseError.self) { try alarms.setEnabled(id: 3, true) }
        #expect(throws: UseCaseError.self) { try alarms.remove(id: 3) }
        #expect(try alarms.list().alarms.isEmpty)
        let added = try alarms.add(.init(time: "06:30"))
        #expect(throws: UseCaseError.self) { try alarms.edit(id: added.alarm.id, .init(time: "6:5")) }
        #expect(try alarms.list().alarms.map(\.alarm) == [added.alarm])
    }
}
