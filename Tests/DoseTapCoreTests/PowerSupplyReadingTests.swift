import DoseTapCore
import DoseTapTesting
import PropertyBased
import Testing

@Suite("Parsing sysfs power_supply attributes")
struct PowerSupplyReadingTests {
    func reading(_ a: [String: String]) -> PowerSupplyReading {
        PowerSupplyReading(raw: RawPowerSupply(name: "BAT0", attributes: a))
    }

    @Test("energy units: µWh and µW")
    func energy() {
        let r = reading(["type": "Battery", "status": "Discharging", "energy_now": "38500000", "energy_full": "50200000",
                         "energy_full_design": "57000000", "power_now": "9870000", "voltage_now": "11900000"])
        #expect(r.energyWh == 38.5)
        #expect(r.energyFullWh == 50.2)
        #expect(r.energyFullDesignWh == 57)
        #expect(r.rateW == 9.87)
        #expect(r.voltageV == 11.9)
        #expect(abs((r.level ?? 0) - 38.5 / 50.2 * 100) < 1e-9)
        #expect(r.status == .discharging)
        #expect(r.problems.isEmpty)
    }

    @Test("charge converts with the design voltage: max, then min, then now")
    func designVoltage() {
        let base = ["type": "Battery", "charge_now": "2000000", "charge_full": "4000000", "voltage_now": "11000000"]
        var a = base
        a["voltage_max_design"] = "12600000"
        a["voltage_min_design"] = "10800000"
        #expect(abs((reading(a).energyWh ?? 0) - 25.2) < 1e-9)
        a["voltage_max_design"] = nil
        #expect(abs((reading(a).energyWh ?? 0) - 21.6) < 1e-9)
        #expect(abs((reading(base).energyWh ?? 0) - 22.0) < 1e-9)
        #expect(reading(["type": "Battery", "charge_now": "2000000"]).energyWh == nil)
    }

    @Test("current_now may be negative while discharging: the rate is its magnitude")
    func negativeCurrent() {
        let r = reading(["type": "Battery", "current_now": "-1500000", "voltage_now": "12000000"])
        #expect(r.rateW == 18)
    }

    @Test("a rate over 300 W is garbage", arguments: [("300000000", 300.0), ("300000001", nil), ("500000000", nil)])
    func absurdRate(power: String, expected: Double?) {
        #expect(reading(["type": "Battery", "power_now": power]).rateW == expected)
    }

    @Test("status is normalised, case-insensitively", arguments: [
        ("Charging", SupplyStatus.charging), ("DISCHARGING", .discharging), ("Full", .full),
        ("Not charging", .notCharging), ("not charging\n", .notCharging), ("Unknown", .unknown), ("Banana", .unknown), ("", .unknown),
    ])
    func status(text: String, expected: SupplyStatus) {
        #expect(reading(["type": "Battery", "status": text]).status == expected)
    }

    @Test("garbage becomes unknown with a reason, never a crash", arguments: ["nan", "NaN", "", "inf", "-inf", "12abc", "  ", "0x10", "1e400"])
    func garbage(_ text: String) {
        let r = reading(["type": "Battery", "energy_now": text, "energy_full": "50000000", "capacity": text, "power_now": text])
        #expect(r.energyWh == nil)
        #expect(r.level == nil)
        #expect(r.rateW == nil)
        #expect(!r.problems.isEmpty)
    }

    @Test("capacity wins when sane; energy ratio when not")
    func capacity() {
        #expect(reading(["type": "Battery", "capacity": "77", "energy_now": "10", "energy_full": "100"]).level == 77)
        #expect(reading(["type": "Battery", "capacity": "-1", "energy_now": "10", "energy_full": "100"]).level == 10)
        #expect(reading(["type": "Battery", "capacity": "110", "charge_now": "5200000", "charge_full": "5000000",
                         "voltage_min_design": "7400000"]).level == 100)
        #expect(reading(["type": "Battery", "capacity": "110"]).level == nil)
        #expect(reading(["type": "Battery", "capacity": "0"]).level == 0)
        #expect(reading(["type": "Battery", "capacity": "100"]).level == 100)
    }

    @Test("energy above full is clamped to full")
    func overfull() {
        let r = reading(["type": "Battery", "energy_now": "60000000", "energy_full": "50000000"])
        #expect(r.energyWh == 50)
        #expect(r.level == 100)
        #expect(r.problems.contains { $0.contains("above full") })
    }

    @Test("present, online and scope")
    func flags() {
        #expect(reading(["type": "Battery"]).present)
        #expect(!reading(["type": "Battery", "present": "0"]).present)
        #expect(reading(["type": "Mains", "online": "1"]).online == true)
        #expect(reading(["type": "USB", "online": "2"]).online == true)
        #expect(reading(["type": "Mains", "online": "0"]).online == false)
        #expect(reading(["type": "Mains"]).online == nil)
        #expect(reading(["type": "Mains", "capacity": "50"]).level == nil)
        #expect(!reading(["type": "Battery", "scope": "Device"]).isSystemBattery)
        #expect(reading(["type": "Battery", "scope": "System"]).isSystemBattery)
        #expect(reading(["type": "battery"]).isSystemBattery)
        #expect(!reading(["type": "Battery", "present": "0"]).isSystemBattery)
        #expect(!reading(["type": "UPS"]).isSystemBattery)
    }

    @Test("property: any attribute text parses without crashing into sane values")
    func fuzz() async {
        let keys = ["type", "status", "present", "capacity", "energy_now", "energy_full", "power_now",
                    "charge_now", "charge_full", "current_now", "voltage_now", "voltage_min_design"]
        let n = keys.count
        let kinds = Gen.int(in: 0...4).array(of: n)
        let ints = Gen.int(in: -1_000_000_000...1_000_000_000).array(of: n)
        let doubles = Gen.double(in: -1e12...1e12).array(of: n)
        let junk = Gen.element(of: ["nan", "", "inf", "-0", "Battery", "Charging", "Not charging", "1\n", "\u{0}",
                                    "9999999999999999999999", "Device"]).array(of: n)
        await propertyCheck(count: 400, input: kinds, ints, doubles, junk) { kinds, ints, doubles, junk in
            var a: [String: String] = [:]
            for i in 0..<n {
                switch kinds[i] {
                case 0: a[keys[i]] = String(ints[i])
                case 1: a[keys[i]] = String(doubles[i])
                case 2: a[keys[i]] = junk[i]
                case 3: a[keys[i]] = String(abs(ints[i]) % 101)
                default: break
                }
            }
            a["type"] = a["type"] ?? "Battery"
            let r = PowerSupplyReading(raw: RawPowerSupply(name: "X", attributes: a))
            if let level = r.level { #expect(level >= 0 && level <= 100) }
            if let e = r.energyWh, let f = r.energyFullWh { #expect(e <= f) }
            if let rate = r.rateW { #expect(rate >= 0 && rate <= 300) }
            for v in [r.energyWh, r.energyFullWh, r.rateW, r.voltageV, r.level].compactMap({ $0 }) { #expect(v.isFinite) }
            let state = PowerState(readings: [r])
            if let level = state.level { #expect(level >= 0 && level <= 100) }
        }
    }
}

@Suite("Combining supplies into the system battery")
struct PowerStateTests {
    @Test("two batteries combine weighted by energy, as UPower does")
    func twoBatteries() {
        let s = PowerState(raw: [.battery("BAT0", energyNowWh: 20, energyFullWh: 24, powerW: 4),
                                 .battery("BAT1", energyNowWh: 18, energyFullWh: 72, powerW: 6)])
        #expect(abs((s.level ?? 0) - 38.0 / 96 * 100) < 1e-9)
        #expect(s.rateW == 10)
        #expect(abs((s.hardwareDrainPercentPerHour ?? 0) - 10.0 / 96 * 100) < 1e-9)
    }

    @Test("a mouse battery and a removed battery are not the system battery")
    func excluded() {
        var mouse = RawPowerSupply.battery("hidpp_battery_0", capacity: 5)
        mouse.attributes["scope"] = "Device"
        var removed = RawPowerSupply.battery("BAT1", energyNowWh: 0, energyFullWh: 0, powerW: 0)
        removed.attributes["present"] = "0"
        let s = PowerState(raw: [.battery("BAT0", capacity: 80), mouse, removed])
        #expect(s.batteries.map(\.name) == ["BAT0"])
        #expect(s.level == 80)
    }

    @Test("on AC when a mains supply is online, or when the status says so")
    func onAC() {
        #expect(PowerState(raw: [.battery(status: "Unknown"), .mains(online: true)]).onAC)
        // A weak charger can be online while the battery still drains: the battery is believed.
        #expect(!PowerState(raw: [.battery(status: "Discharging"), .mains(online: true)]).onAC)
        #expect(!PowerState(raw: [.battery(), .mains(online: false)]).onAC)
        #expect(PowerState(raw: [.battery(status: "Charging")]).onAC)
        #expect(PowerState(raw: [.battery(status: "Not charging")]).onAC)
        #expect(PowerState(raw: [.battery(status: "Full")]).onAC)
        #expect(!PowerState(raw: [.battery(status: "Unknown")]).onAC)
        #expect(PowerState(raw: [.mains(online: true)]).onAC)
    }

    @Test("the hardware drain needs a sane rate on battery", arguments: [
        (0.09, false), (0.1, true), (300.0, true), (0.0, false),
    ])
    func saneRate(power: Double, usable: Bool) {
        let s = PowerState(raw: [.battery(energyFullWh: 50, powerW: power)])
        #expect((s.hardwareDrainPercentPerHour != nil) == usable)
    }

    @Test("combined status")
    func status() {
        #expect(PowerState(raw: [.battery("A", status: "Full"), .battery("B", status: "Discharging")]).status == .discharging)
        #expect(PowerState(raw: [.battery("A", status: "Full"), .battery("B", status: "Charging")]).status == .charging)
        #expect(PowerState(raw: [.battery("A", status: "Full"), .battery("B", status: "Full")]).status == .full)
        #expect(PowerState(raw: [.battery("A", status: "Full"), .battery("B", status: "Not charging")]).status == .notCharging)
        #expect(PowerState(raw: []).status == .unknown)
        #expect(!PowerState(raw: []).present)
    }
}
