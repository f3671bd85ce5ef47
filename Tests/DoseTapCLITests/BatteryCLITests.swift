import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

@Suite("dosetap battery under umockdev (the real binary)")
struct BatteryCLITests {
    @Test("--json has the pinned keys and the scenario's values", arguments: ["energy-discharging", "charge-current", "two-batteries", "ac-online", "mouse-beside-laptop"])
    func json(scenario: String) async throws {
        let cli = try CLI()
        let r = try await cli.run(["battery", "--json"], scenario: scenario)
        #expect(r.exitCode == 0, "\(r.err)")
        let object = try cli.json(r.out)
        let system = try #require(object["system"] as? [String: Any])
        for key in ["present", "level", "status", "onAC", "drainPercentPerHour", "drainSource", "hoursToEmpty"] {
            #expect(system.keys.contains(key), "system.\(key)")
        }
        let supplies = try #require(object["supplies"] as? [[String: Any]])
        #expect(!supplies.isEmpty)
        for s in supplies {
            for key in ["name", "type", "scope", "present", "status", "level"] { #expect(s.keys.contains(key), "supply \(key)") }
        }
        let expected = try #require(try Fixtures.powerSupplyScenarios().first { $0.name == scenario }?.expected["system"] as? [String: Any])
        #expect(system["level"] as? Int == expected["level"] as? Int)
        #expect(system["onAC"] as? Bool == expected["onAC"] as? Bool)
        #expect(system["drainSource"] as? String == expected["drainSource"] as? String)
        if let d = expected["drainPercentPerHour"] as? Double {
            #expect(abs((system["drainPercentPerHour"] as? Double ?? -1) - d) <= 0.01)
        } else {
            #expect(system["drainPercentPerHour"] is NSNull)
        }
    }

    @Test("the sleep guard (#52 §3): on by default, the configuration's guard, nudge only where the machine cannot wake; --json the same")
    func sleepGuard() async throws {
        let cli = try CLI()
        try await AlarmCLITests.agentCanWake(cli) {
            let on = try await cli.run(["battery"], scenario: "energy-discharging")
            #expect(on.exitCode == 0, "\(on.err)")
            #expect(on.out.contains("\nSleep guard: on: at an alarm's deadline, still awake on its battery, the nudge plays again; once nobody "
                + "has used this machine for 2 minutes and no program blocks sleep, DoseTap puts it to sleep and the alarm wakes it\n"), "\(on.out)")
            let json = try cli.json(try await cli.run(["battery", "--json"], scenario: "energy-discharging").out)
            let shown = try #require(json["sleepGuard"] as? [String: Any])
            #expect(shown["mode"] as? String == "sleep")
            #expect(shown["suspends"] as? Bool == true)
            #expect((shown["why"] as? String)?.hasPrefix("on: ") == true)

            try cli.writeConfig("[battery]\nguard = \"off\"\n")
            let off = try await cli.run(["battery"], scenario: "energy-discharging")
            #expect(off.out.contains("\nSleep guard: off ([battery] guard = \"off\"): nothing happens at an alarm's deadline beyond the nudge 20 minutes before it\n"),
                    "\(off.out)")
            try cli.writeConfig("[battery]\nguard = \"nudge\"\n")
            let nudge = try cli.json(try await cli.run(["battery", "--json"], scenario: "energy-discharging").out)
            #expect((nudge["sleepGuard"] as? [String: Any])?["suspends"] as? Bool == false)

            // A configuration the agent would refuse: the battery is still shown, the guard line says why it is not known.
            try cli.writeConfig("[battery]\nguard = \"slep\"\n")
            let bad = try await cli.run(["battery"], scenario: "energy-discharging")
            #expect(bad.exitCode == 0, "\(bad.err)")
            #expect(bad.out.contains("\nSleep guard: unknown, the configuration cannot be read: "), "\(bad.out)")
            #expect(bad.out.contains("battery.guard must be one of"), "\(bad.out)")
            // No battery, no guard line.
            try cli.writeConfig("")
            let mains = try await cli.run(["battery"], scenario: "no-supplies")
            #expect(!mains.out.contains("Sleep guard"), "\(mains.out)")
        }
        try FileManager.default.removeItem(at: cli.dataDirectory.appendingPathComponent("wake-status.json"))
        let record = #"{"pid":1,"checkedAt":"2026-05-04T21:00:00Z","method":null,"reason":"the agent lacks it","fix":"do the thing"}"#
        try await WakeWarningCLITests.withAgentRecord(cli, record) {
            let cannot = try await cli.run(["battery"], scenario: "energy-discharging")
            #expect(cannot.out.contains("\nSleep guard: nudge only: DoseTap never puts this machine to sleep, it cannot wake itself for the alarm "
                + "(the agent lacks it)\n"), "\(cannot.out)")
        }
    }

    @Test("--alarm: a critical night, with the time zone's offset and DST-true hours")
    func alarmCritical() async throws {
        let cli = try CLI()
        // 22:00 on the fall-back night in New York: 06:30 is 9.5 real hours away.
        try await AlarmCLITests.agentCanWake(cli) {
            let r = try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "energy-discharging",
                                      fakeTime: "2026-10-31 22:00:00", tz: "America/New_York")
            #expect(r.exitCode == 0, "\(r.err)")
            let f = try cli.json(r.out)
            #expect(f["alarmAt"] as? String == "2026-11-01T06:30:00-05:00")
            #expect(abs((f["hoursUntil"] as? Double ?? 0) - 9.5) < 0.02)
            #expect(f["level"] as? Int == 77)
            #expect(f["charging"] as? Bool == false)
            #expect(f["risk"] as? String == "critical")
            #expect(f["predictedLevel"] as? Int == 0)
            // #52: the forecast awake is critical, but asleep by 23:27 the alarm is safe: no nudge yet.
            #expect(f["nudge"] is NSNull)
            #expect(f["deadline"] as? String == "2026-10-31T23:27:13-04:00")
            #expect(f["deadlineWhy"] as? String == "safe if it sleeps or is plugged in by then")
            #expect(f["nudgeWhy"] as? String == "sleepSavesIt")
            // 13:00 (16 h, across the DST change): the deadline is 17 minutes away: the nudge, and the deadline.
            let near = try cli.json(try await cli.run(["battery", "--alarm", "13:00", "--json"], scenario: "energy-discharging",
                                                      fakeTime: "2026-10-31 22:00:00", tz: "America/New_York").out)
            #expect(near["deadline"] as? String == "2026-10-31T22:17:00-04:00")
            let nudge = try #require(near["nudge"] as? [String: Any])
            #expect(nudge["severity"] as? String == "critical")
            #expect(nudge["header"] as? String == "Alarm at Risk")
            #expect(nudge["headline"] as? String == "Estimated battery at alarm: 0%")
            #expect(nudge["action"] as? String == "Plug in now.")
            #expect(nudge["deadlineText"] as? String == "At risk unless this machine sleeps or is plugged in by 22:17.")
            let text = try await cli.run(["battery", "--alarm", "13:00"], scenario: "energy-discharging", fakeTime: "2026-10-31 22:00:00",
                                         tz: "America/New_York")
            #expect(text.out.hasSuffix("Assuming: if this machine stays awake until the alarm\nAt risk unless this machine sleeps or is plugged in by 22:17.\n"),
                    "\(text.out)")
        }
    }

    @Test("--alarm on AC: safe, no nudge")
    func alarmCharging() async throws {
        let cli = try CLI()
        let r = try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "ac-online")
        let f = try cli.json(r.out)
        #expect(f["risk"] as? String == "safe")
        #expect(f["charging"] as? Bool == true)
        #expect(f["nudge"] is NSNull)
    }

    @Test("--alarm with no battery: safe, nudge null, and a reason")
    func alarmNoBattery() async throws {
        let cli = try CLI()
        let r = try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "no-battery")
        let f = try cli.json(r.out)
        #expect(f["risk"] as? String == "safe")
        #expect(f["nudge"] is NSNull)
        #expect((f["reason"] as? String)?.contains("no system battery") == true)
        let plain = try await cli.run(["battery", "--json"], scenario: "no-supplies")
        let system = try #require(try cli.json(plain.out)["system"] as? [String: Any])
        #expect(system["present"] as? Bool == false)
        #expect(system["drainPercentPerHour"] is NSNull)
    }

    @Test("a capacity-only battery: unknown until the agent's history gives a drain")
    func capacityOnly() async throws {
        let cli = try CLI()
        // At 23:30 the 06:30 alarm is 7 h away: asleep from now it is safe, awake nothing is known — no number, silence.
        let before = try cli.json(try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "capacity-only-ups",
                                                    fakeTime: "2026-10-30 23:30:00", tz: "America/New_York").out)
        #expect(before["risk"] as? String == "unknown")
        #expect(before["predictedLevel"] is NSNull)
        #expect(before["nudge"] is NSNull)
        #expect(before["drainPercentPerHour"] is NSNull)
        #expect(before["nudgeWhy"] as? String == "unknown")
        // At 07:00 the same alarm is 23.5 h away: even asleep from now 63 % does not last, so the nudge shows — and the
        // forecast states the risk it shows (it once said "unknown" beside a critical nudge; CI ran at 06:46).
        let far = try cli.json(try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "capacity-only-ups",
                                                 fakeTime: "2026-10-30 07:00:00", tz: "America/New_York").out)
        #expect(far["nudgeWhy"] as? String == "atRiskAsleep")
        let farNudge = try #require(far["nudge"] as? [String: Any])
        #expect(farNudge["severity"] as? String == "critical")
        #expect(farNudge["assumption"] as? String == "if this machine sleeps from now until the alarm wakes it")
        #expect(far["risk"] as? String == "critical")
        #expect(far["predictedLevel"] as? Int == 0)

        // 30 minutes of samples at 8 %/h ending at the fixture's level, as the agent records them.
        let level = try #require(try cli.json(try await cli.run(["battery", "--json"], scenario: "capacity-only-ups").out)["system"]
            .flatMap { ($0 as? [String: Any])?["level"] as? Int })
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: cli.dataDirectory))
        let now = Date()
        for m in 0...30 {
            try repo.append(BatterySample(at: now.addingTimeInterval(Double(m - 31) * 60), level: Double(level) + Double(31 - m) * 8 / 60,
                                          onAC: false, status: .discharging))
        }
        let after = try cli.json(try await cli.run(["battery", "--json"], scenario: "capacity-only-ups").out)
        let system = try #require(after["system"] as? [String: Any])
        #expect(system["drainSource"] as? String == "history")
        #expect(abs((system["drainPercentPerHour"] as? Double ?? 0) - 8) < 0.5)
        let forecast = try cli.json(try await cli.run(["battery", "--alarm", "06:30", "--json"], scenario: "capacity-only-ups").out)
        #expect(["safe", "warning", "critical"].contains(forecast["risk"] as? String ?? ""))
        #expect(forecast["predictedLevel"] is Int)
    }

    @Test("garbage sysfs values are reported, not fatal")
    func garbage() async throws {
        let cli = try CLI()
        let r = try await cli.run(["battery", "--json"], scenario: "garbage-values")
        #expect(r.exitCode == 0)
        let supplies = try #require(try cli.json(r.out)["supplies"] as? [[String: Any]])
        #expect(supplies.contains { ($0["problems"] as? [String])?.isEmpty == false })
        let text = try await cli.run(["battery"], scenario: "garbage-values")
        #expect(text.exitCode == 0)
        #expect(text.out.contains("System battery"))
    }

    /// Finding: sysfs strings were printed raw by `dosetap battery`.
    @Test("sysfs strings with escape sequences: escaped in text, exact in --json")
    func hostileSysfs() async throws {
        let cli = try CLI()
        let fixture = cli.home.appendingPathComponent("hostile.umockdev")
        // umockdev reads C escapes in A: values: \033 is ESC, \007 BEL, \r a carriage return.
        try """
            P: /devices/virtual/power_supply/BAT0
            E: SUBSYSTEM=power_supply
            E: POWER_SUPPLY_NAME=BAT0
            A: type=Battery\\n
            A: present=1\\n
            A: status=Discharging\\n
            A: capacity=50\\n
            A: model_name=\\033]0;pwned\\007\\n

            P: /devices/virtual/power_supply/weird
            E: SUBSYSTEM=power_supply
            A: type=Evil\\033[2J\\rX\\n
            A: online=1\\n

            """.write(to: fixture, atomically: true, encoding: .utf8)
        func battery(_ args: [String]) async throws -> CLI.Result {
            let r = try await Subprocess.run(.path("/usr/bin/umockdev-run"), arguments: Arguments(["-d", fixture.path, "--", CLI.binary] + args),
                                             environment: cli.environment(), input: .none,
                                             output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
            return CLI.Result(status: r.terminationStatus, out: r.standardOutput, err: r.standardError)
        }
        let text = try await battery(["battery"])
        #expect(text.exitCode == 0, "\(text.err)")
        #expect(text.out.contains("weird  Evil\\x1b[2J\\rX"), "\(text.out.debugDescription)")
        #expect(!text.out.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(text.out.debugDescription)")
        let json = try cli.json(try await battery(["battery", "--json"]).out)
        let supplies = try #require(json["supplies"] as? [[String: Any]])
        #expect(supplies.contains { $0["type"] as? String == "Evil\u{1B}[2J\rX" })
        #expect(supplies.contains { $0["model"] as? String == "\u{1B}]0;pwned\u{07}" })
    }
}
