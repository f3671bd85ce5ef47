import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing

/// Reads every recorded scenario through the real libudev adapter, under umockdev.
///
/// These tests need the process to run under `umockdev-wrapper` (the README's test command does that).
/// Without it they fail rather than skip: a skipped fixture test is a hole.
/// Every test that builds a umockdev testbed in this process, or reads /sys through libudev, lives in
/// here: a testbed replaces /sys for the whole process, so they must run one at a time.
@Suite("udev fixtures under umockdev (one testbed at a time)", .serialized)
struct UdevFixtures {}

extension UdevFixtures {
@Suite("libudev adapter against recorded power supplies")
struct PowerSupplyFixtureTests {
    static let scenarios: [PowerSupplyScenario] = (try? Fixtures.powerSupplyScenarios()) ?? []

    @Test("umockdev is active and there are at least 12 scenarios")
    func preconditions() {
        #expect(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        #expect(Self.scenarios.count >= 12)
    }

    @Test("each scenario reads as expected", arguments: scenarios)
    func scenario(_ scenario: PowerSupplyScenario) throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        let testbed = UmockdevTestbed()
        try testbed.add(scenario.umockdev)
        let source = try UdevPowerSupplySource()
        let raw = try source.snapshot()
        let state = PowerState(raw: raw)
        let drain = DrainEstimator().estimate(for: state)

        let expectedSupplies = scenario.expected["supplies"] as? [[String: Any]] ?? []
        #expect(state.supplies.map(\.name) == expectedSupplies.map { $0["name"] as? String ?? "?" })
        for (reading, expected) in zip(state.supplies, expectedSupplies) {
            let where_ = "\(scenario.name)/\(reading.name)"
            #expect(reading.type.name == expected["type"] as? String, "\(where_) type")
            #expect(reading.scope.rawValue == expected["scope"] as? String, "\(where_) scope")
            #expect(reading.present == expected["present"] as? Bool, "\(where_) present")
            #expect(reading.status.rawValue == expected["status"] as? String, "\(where_) status")
            #expect(reading.online == expected["online"] as? Bool, "\(where_) online")
            #expect(reading.level.map { Int($0.rounded()) } == expected["level"] as? Int, "\(where_) level")
            let numbers: [(String, Double?)] = [
                ("energyWh", reading.energyWh), ("energyFullWh", reading.energyFullWh),
                ("energyFullDesignWh", reading.energyFullDesignWh), ("rateW", reading.rateW), ("voltageV", reading.voltageV),
            ]
            for (key, actual) in numbers {
                Self.expectClose(actual, expected[key] as? Double, "\(where_) \(key)")
            }
        }

        let system = scenario.expected["system"] as? [String: Any] ?? [:]
        #expect(state.present == system["present"] as? Bool, "\(scenario.name) system.present")
        #expect(state.level.map { Int($0.rounded()) } == system["level"] as? Int, "\(scenario.name) system.level")
        #expect(state.status.rawValue == system["status"] as? String, "\(scenario.name) system.status")
        #expect(state.onAC == system["onAC"] as? Bool, "\(scenario.name) system.onAC")
        Self.expectClose(state.rateW, system["rateW"] as? Double, "\(scenario.name) system.rateW")
        Self.expectClose(drain.percentPerHour, system["drainPercentPerHour"] as? Double, "\(scenario.name) drain")
        #expect(drain.source.rawValue == system["drainSource"] as? String, "\(scenario.name) drainSource")
        let hours: Double? = drain.percentPerHour.flatMap { d in state.fineLevel.map { $0 / d } }
        Self.expectClose(hours, system["hoursToEmpty"] as? Double, "\(scenario.name) hoursToEmpty")
        withExtendedLifetime(testbed) {}
    }

    static func expectClose(_ actual: Double?, _ expected: Double?, _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        switch (actual, expected) {
        case (nil, nil): break
        case let (a?, e?): #expect(abs(a - e) <= 0.01, "\(what): \(a) vs \(e)", sourceLocation: sourceLocation)
        default: Issue.record("\(what): \(String(describing: actual)) vs \(String(describing: expected))", sourceLocation: sourceLocation)
        }
    }

    static let batteryPath = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0A08:00/device:1c/PNP0C09:00/PNP0C0A:00/power_supply/BAT0"

    /// The command line reads the supplies as plain files (#29, `SysfsPowerSupplySource`); the agent through libudev.
    /// On every recorded machine the two must read the same attributes.
    @Test("the command line's sysfs reader reads every scenario as libudev does", arguments: scenarios)
    func sysfsReadsAsUdev(_ scenario: PowerSupplyScenario) throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        let testbed = UmockdevTestbed()
        try testbed.add(scenario.umockdev)
        let udev = try UdevPowerSupplySource().snapshot()
        let sysfs = try SysfsPowerSupplySource().snapshot()
        #expect(!udev.isEmpty || scenario.name == "no-supplies", "\(scenario.name): nothing read")
        #expect(sysfs == udev, "\(scenario.name)")
        for supply in udev { #expect(SysfsPowerSupplySource().read(name: supply.name) == supply, "\(scenario.name)/\(supply.name)") }
        withExtendedLifetime(testbed) {}
    }

    @Test("odd attribute files: trailing CR LF, a NUL inside, bytes that are not UTF-8, a link, a folder — read as libudev does")
    func sysfsOddAttributes() throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        let scenario = try #require(Self.scenarios.first { $0.name == "energy-discharging" })
        let testbed = UmockdevTestbed()
        try testbed.add(scenario.umockdev)
        // Through the preload (this process is under umockdev-wrapper): /sys is the testbed's.
        let folder = "/sys/class/power_supply/BAT0"
        func write(_ name: String, _ bytes: [UInt8]) throws {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
            try Data(bytes).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try write("status", Array("Discharging\r\n\n".utf8))
        try write("model_name", Array("5B10W13930".utf8) + [0] + Array("hidden\n".utf8))
        try write("manufacturer", [0x53, 0x4D, 0x50, 0xFF, 0xFE, 0x0A])
        try write("technology", Array(String(repeating: "Li-ion ", count: 2000).utf8))
        try write("capacity_level", [])
        // A link and a folder are made in the testbed's own tree (the preload does not redirect symlink or mkdir).
        let line = try #require(scenario.umockdev.split(separator: "\n").first { $0.hasPrefix("P: ") && $0.hasSuffix("power_supply/BAT0") })
        let real = testbed.rootDirectory + "/sys" + line.dropFirst(3)
        try? FileManager.default.removeItem(atPath: real + "/charge_now")
        try FileManager.default.createSymbolicLink(atPath: real + "/charge_now", withDestinationPath: real + "/energy_now")
        try? FileManager.default.removeItem(atPath: real + "/voltage_max_design")
        try FileManager.default.createDirectory(atPath: real + "/voltage_max_design", withIntermediateDirectories: true)
        let udev = try #require(try UdevPowerSupplySource().snapshot().first { $0.name == "BAT0" })
        let sysfs = try #require(try SysfsPowerSupplySource().snapshot().first { $0.name == "BAT0" })
        #expect(sysfs == udev)
        #expect(sysfs.attributes["status"] == "Discharging")
        #expect(sysfs.attributes["model_name"] == "5B10W13930")
        #expect(sysfs.attributes["charge_now"] == nil && sysfs.attributes["voltage_max_design"] == nil)
        withExtendedLifetime(testbed) {}
    }

    @Test("a change uevent at run time reaches the monitor with the new values")
    func changeEvent() async throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        let scenario = try #require(Self.scenarios.first { $0.name == "ac-offline" })
        let testbed = UmockdevTestbed()
        try testbed.add(scenario.umockdev)
        let source = try UdevPowerSupplySource()
        #expect(try source.snapshot().first { $0.name == "BAT0" }?.attributes["capacity"]?.trimmingCharacters(in: .whitespacesAndNewlines) == "62")
        let events = source.events()
        // The monitor starts on the adapter's queue; a snapshot after it has run proves it is listening.
        _ = try source.snapshot()

        testbed.setAttribute(Self.batteryPath, "capacity", "41")
        testbed.setAttribute(Self.batteryPath, "energy_now", "22230000")
        testbed.setAttribute(Self.batteryPath, "status", "Charging")
        testbed.uevent(Self.batteryPath, action: "change")

        let received = try await firstEvent(events, within: .seconds(5))
        guard case .changed(let raw) = received else {
            Issue.record("expected a change event, got \(String(describing: received))")
            return
        }
        let reading = PowerSupplyReading(raw: raw)
        #expect(reading.name == "BAT0")
        #expect(reading.level == 41)
        #expect(reading.energyWh == 22.23)
        #expect(reading.status == .charging)
        // A fresh read sees the same values (no stale libudev attribute cache).
        #expect(source.read(name: "BAT0").map(PowerSupplyReading.init(raw:))?.level == 41)
        withExtendedLifetime(testbed) {}
    }

    @Test("a battery unplugged mid-session: remove event, then reads return nothing")
    func removal() async throws {
        try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
        let scenario = try #require(Self.scenarios.first { $0.name == "ac-offline" })
        let testbed = UmockdevTestbed()
        try testbed.add(scenario.umockdev)
        let source = try UdevPowerSupplySource()
        let events = source.events()
        _ = try source.snapshot()
        testbed.uevent(Self.batteryPath, action: "remove")
        testbed.remove(Self.batteryPath)
        let received = try await firstEvent(events, within: .seconds(5))
        #expect(received == .removed(name: "BAT0"))
        #expect(source.read(name: "BAT0") == nil)
        #expect(try source.snapshot().map(\.name).contains("BAT0") == false)
        let state = PowerState(raw: try source.snapshot())
        #expect(!state.present)
        withExtendedLifetime(testbed) {}
    }

    func firstEvent(_ stream: AsyncStream<PowerSupplyEvent>, within timeout: Duration) async throws -> PowerSupplyEvent? {
        try await withThrowingTaskGroup(of: PowerSupplyEvent?.self) { group in
            group.addTask {
                for await event in stream { return event }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw FixtureError("no udev event within \(timeout)")
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
}
