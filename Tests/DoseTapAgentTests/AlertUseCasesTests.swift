import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

@Suite("Usage alerts: the use cases behind dosetap alerts")
struct AlertUseCasesTests {
    let clock = FakeClock(Date(timeIntervalSince1970: 1_800_000_000), timeZone: TimeZone(identifier: "UTC")!)

    static let supplies: [PowerSupplyReading] = [
        PowerSupplyReading(raw: .battery("BAT0", capacity: 38)),
        PowerSupplyReading(raw: RawPowerSupply(name: "hidpp_battery_0", attributes: [
            "type": "Battery", "scope": "Device", "present": "1", "capacity": "9", "model_name": "MX Master 3", "status": "Discharging",
        ])),
        PowerSupplyReading(raw: .mains("AC", online: false)),
    ]

    func useCases(_ dir: URL, supplies: [PowerSupplyReading] = supplies) -> AlertUseCases {
        AlertUseCases(store: DataStore(directory: dir), clock: clock, supplies: { supplies })
    }

    @Test("show: every battery (system, a mouse by its model, a button's cell), its usage and state; chargers are not batteries")
    func overview() throws {
        let dir = freshDataFolder("dosetap-alerts")
        try BatterySampleRepository(database: try DoseTapDatabase(directory: dir)).appendLevel(source: "button:bedside", level: 4, at: clock.now())
        let overview = try useCases(dir).overview()
        #expect(overview.settings.thresholds == .defaults)
        #expect(overview.sources.map(\.name) == ["BAT0", "MX Master 3", "button:bedside"])
        #expect(overview.sources.map(\.kind) == [.system, .device, .button])
        #expect(overview.sources.map(\.usage) == [62, 91, 96])
        #expect(overview.sources.map(\.state) == ["ok", "warning", "critical"])
        let json = overview.json(now: clock.now(), in: TimeZone(identifier: "UTC")!).text
        #expect(json.hasPrefix(#"{"warning":85,"critical":95,"snoozedUntil":null,"sources":[{"name":"BAT0","kind":"system","usage":62,"remaining":38,"warning":85,"critical":95,"enabled":true,"state":"ok"}"#), "\(json)")
    }

    @Test("set: the pair is checked, and every source's own threshold must still fit; nothing changes when refused")
    func setThresholds() throws {
        let dir = freshDataFolder("dosetap-alerts")
        let alerts = useCases(dir)
        #expect(try alerts.setThresholds(warning: 80, critical: nil).thresholds == AlertThresholds(warning: 80, critical: 95))
        #expect(throws: UseCaseError("warning (96 %) must be lower than critical (95 %)")) { try alerts.setThresholds(warning: 96, critical: nil) }
        _ = try alerts.changeSource("BAT0", [.warning(90)])
        #expect(throws: UseCaseError("BAT0: warning (90 %) must be lower than critical (88 %) (its own threshold; change it first: dosetap alerts source)")) {
            try alerts.setThresholds(warning: nil, critical: 88)
        }
        #expect(try alerts.overview().settings.thresholds == AlertThresholds(warning: 80, critical: 95))
    }

    @Test("source: own thresholds, off and on, reset; an unknown name is refused")
    func source() throws {
        let dir = freshDataFolder("dosetap-alerts")
        let alerts = useCases(dir)
        let mouse = try alerts.changeSource("MX Master 3", [.warning(60), .critical(80)])
        #expect(mouse.thresholds == (try AlertThresholds(warning: 60, critical: 80)) && mouse.state == "critical")
        #expect(try alerts.changeSource("MX Master 3", [.disable]).state == "off")
        #expect(try alerts.changeSource("MX Master 3", [.reset]).thresholds == .defaults)
        #expect(throws: UseCaseError.notFound("no source 'BAT9': see dosetap alerts show")) { try alerts.changeSource("BAT9", [.disable]) }
        #expect(throws: UseCaseError("warning (85 %) must be lower than critical (60 %)")) { try alerts.changeSource("BAT0", [.critical(60)]) }
        _ = try alerts.changeSource("MX Master 3", [.warning(70)])
        // Known from before (the mouse is switched off now): still listed and settable. (After a reset
        // with nothing else stored, an absent source is forgotten.)
        let later = useCases(dir, supplies: [Self.supplies[0]])
        #expect(try later.changeSource("MX Master 3", [.disable]).enabled == false)
        #expect(try later.overview().sources.map(\.name) == ["BAT0", "MX Master 3"])
    }

    @Test("snooze for 15m … 24h and off; templates set, refused, reset")
    func snoozeAndTemplates() throws {
        let dir = freshDataFolder("dosetap-alerts")
        let alerts = useCases(dir)
        #expect(try alerts.snooze(.oneHour) == clock.now().addingTimeInterval(3600))
        #expect(try alerts.overview().settings.isSnoozed(at: clock.now()))
        #expect(try alerts.snooze(nil) == nil)
        #expect(try !alerts.overview().settings.isSnoozed(at: clock.now()))
        #expect(try alerts.setTemplate(.warning, "{source} at {remaining}%").text == "{source} at {remaining}%")
        #expect(throws: UseCaseError("unknown placeholder {pct}: use {source}, {percent}, {remaining} or {level}")) {
            try alerts.setTemplate(.critical, "{source} {pct}")
        }
        #expect(try alerts.setTemplate(.warning, nil) == .defaultWarning)
        #expect(try alerts.overview().settings.warningTemplate == .defaultWarning)
    }
}
