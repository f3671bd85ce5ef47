import DoseTapAgent
import DoseTapApp
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

    /// #26: the dashboard chose an HTTP status from the words ("no alarm…" → 404) and sent every other escaped
    /// "no" as 503. Each error now says its kind.
    @Test("use-case errors carry their kind: a bad time is invalid, a missing alarm not found, Stop or Snooze with none ringing refused")
    func errorKinds() throws {
        let (alarms, _) = try useCases()
        func kind(_ body: () throws -> Any) -> UseCaseError.Kind? {
            do { _ = try body(); return nil } catch let error as UseCaseError { return error.kind } catch { return nil }
        }
        #expect(kind { try alarms.add(.init(time: "25:00")) } == .invalid)
        #expect(kind { try alarms.remove(id: 9) } == .notFound)
        #expect(kind { try alarms.stopRinging(by: .cli) } == .refused)
        #expect(kind { try alarms.snoozeRinging(by: .cli) } == .refused)
        #expect(UseCaseError("x").kind == .invalid)   // the default
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

    @Test("the power-off level counts as empty: at or below it critical with the fact, just above without it")
    func powerOff() throws {
        // 34 % at 8 %/h: 21:00 → 00:45 is 3.75 h → 4 %; → 00:30 is 3.5 h → 6 % (warning); PercentageAction 4 (action PowerOff).
        var status = Self.draining
        status.powerOff = PowerOffPolicy(percentage: 4, action: .powerOff)
        let (alarms, _) = try useCases(battery: status)
        let at = try alarms.add(.init(time: "00:45"))
        #expect(at.nudge?.severity == .critical)
        #expect(at.nudge?.headline == "Estimated battery at alarm: 4%")
        #expect(at.nudge?.powerOff == "This machine powers itself off at 4%.")
        #expect(at.detailLines == ["Alarm at Risk: Estimated battery at alarm: 4% — Plug in now.", "This machine powers itself off at 4%."])
        let above = try alarms.add(.init(time: "00:38")) // 3.633 h: 34 − 29.07 = 4.93, rounded down to 4: still at the level
        #expect(above.nudge?.powerOff != nil)
        let justAbove = try alarms.add(.init(time: "00:37")) // 3.6167 h → 5.07 → 5 %: critical by the tiers, above 4
        #expect(justAbove.nudge?.severity == .critical)
        #expect(justAbove.nudge?.powerOff == nil)
        #expect(justAbove.detailLines.count == 1)
        let warning = try alarms.add(.init(time: "00:30"))
        #expect(warning.nudge?.severity == .warning)
        #expect(warning.nudge?.powerOff == nil)
    }

    @Test("unknown drain: an enabled alarm says it cannot predict yet, never looks safe; off and safe alarms say nothing")
    func unknownDrain() throws {
        var status = Self.draining
        status.drain = DrainEstimate(percentPerHour: nil, source: .unknown)
        let (alarms, _) = try useCases(battery: status)
        let on = try alarms.add(.init(time: "06:30"))
        #expect(on.nudge == nil)
        #expect(on.cannotPredict == "the drain is not known yet: no hardware rate and not enough history")
        #expect(on.detailLines == ["Cannot predict the battery at this alarm yet: the drain is not known yet: no hardware rate and not enough history"])
        let json = on.json(in: clock.timeZone).text
        #expect(json.contains(#""nudge":null"#))
        #expect(json.contains(#""forecast":{"risk":"unknown","reason":"the drain is not known yet: no hardware rate and not enough history"}"#))
        let off = try alarms.add(.init(time: "06:30", enabled: false))
        #expect(off.cannotPredict == nil)
        #expect(off.detailLines.isEmpty)
        #expect(!off.json(in: clock.timeZone).text.contains("forecast"))
        #expect(try alarms.list().alarms.map { $0.cannotPredict != nil } == [true, false])
        // Turned on: the answer says it too.
        #expect(try alarms.setEnabled(id: off.alarm.id, true).cannotPredict != nil)
        // The same alarms on AC: safe, so nothing at all.
        let (plugged, _) = try useCases(battery: BatteryStatus(state: PowerState(raw: [.battery(status: "Charging"), .mains(online: true)]),
                                                                drain: DrainEstimate(percentPerHour: nil, source: .unknown)))
        let safe = try plugged.add(.init(time: "06:30"))
        #expect(safe.nudge == nil && safe.cannotPredict == nil && safe.detailLines.isEmpty)
        // The forecast itself is data (#24): safe on AC, no night assumed (no drain applied), and no nudge.
        #expect(safe.json(in: clock.timeZone).text.contains(#""nudge":null,"forecast":{"risk":"safe","predictedLevel":80}"#))
    }

    @Test("several alarms: only the at-risk ones carry a nudge, every tier at once")
    func severalTiers() throws {
        var status = Self.draining
        status.powerOff = PowerOffPolicy(percentage: 2)
        let (alarms, _) = try useCases(battery: status)
        // 21:30 safe (30 %), 23:00 warning (18 %), 00:30 warning (6 %), 00:45 critical (4 %), 03:00 critical 0 % at the power-off level.
        for time in ["21:30", "23:00", "00:30", "00:45", "03:00"] { _ = try alarms.add(.init(time: time)) }
        _ = try alarms.add(.init(time: "03:00", enabled: false))
        let listed = try alarms.list().alarms
        #expect(listed.map { $0.nudge?.severity } == [nil, .warning, .warning, .critical, .critical, nil])
        #expect(listed.map { $0.nudge?.powerOff != nil } == [false, false, false, false, true, false])
        #expect(listed.map(\.cannotPredict) == Array(repeating: nil, count: 6))
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
