import DoseTapTesting
import Foundation
import Testing

/// `dosetap alerts …` through the real binary, on recorded power supplies (umockdev).
@Suite("dosetap alerts (the real binary)")
struct AlertsCLITests {
    @Test("show on a discharging laptop: the battery with its usage; set, source, snooze, template; history empty")
    func commands() async throws {
        let cli = try CLI()
        let shown = try await cli.run(["alerts", "show", "--json"], scenario: "energy-discharging")
        #expect(shown.exitCode == 0, "\(shown.err)")
        let all = try cli.json(shown.out)
        #expect(all["warning"] as? Int == 85 && all["critical"] as? Int == 95)
        #expect(all["snoozedUntil"] is NSNull)
        let sources = try #require(all["sources"] as? [[String: Any]])
        let battery = try #require(sources.first)
        #expect(Set(battery.keys) == ["name", "kind", "usage", "remaining", "warning", "critical", "enabled", "state"])
        #expect(battery["kind"] as? String == "system")
        let name = try #require(battery["name"] as? String)

        #expect(try await cli.run(["alerts", "set", "--warning", "80"]).out == "Alerts at 80 % used (warning) and 95 % used (critical).\n")
        let source = try await cli.run(["alerts", "source", name, "--critical", "90"], scenario: "energy-discharging")
        #expect(source.exitCode == 0, "\(source.err)")
        #expect(source.out.hasSuffix(": alerts at 80 / 90 % used\n"), "\(source.out)")
        let off = try await cli.run(["alerts", "source", name, "--disable"], scenario: "energy-discharging")
        #expect(off.out.hasSuffix(": alerts off\n"), "\(off.out)")
        let snoozed = try await cli.run(["alerts", "snooze", "4h"])
        #expect(snoozed.exitCode == 0 && snoozed.out.hasPrefix("Alerts snoozed until "), "\(snoozed.out)")
        let json = try cli.json(try await cli.run(["alerts", "show", "--json"], scenario: "energy-discharging").out)
        #expect(json["snoozedUntil"] is String)
        #expect((json["sources"] as? [[String: Any]])?.first?["enabled"] as? Bool == false)
        #expect(try await cli.run(["alerts", "snooze", "off"]).out == "Alerts are on.\n")
        let template = try await cli.run(["alerts", "template", "warning", "{source} is at {remaining}% ({level})"])
        #expect(template.out == "The warning alert reads: BAT0 is at 14% (warning)\n", "\(template.out) \(template.err)")
        #expect(try await cli.run(["alerts", "template", "warning", "--reset"]).out == "The warning alert reads: BAT0 battery low: 14% left\n")
        #expect(try await cli.run(["alerts", "history", "--json"]).out == "[]\n")
        #expect(try await cli.run(["alerts", "history"]).out == "No alerts yet.\n")
        #expect(try await cli.run(["alerts", "history", "--clear"]).out == "Cleared 0 alerts from the history.\n")
    }

    @Test("bad input: one line on stderr, a non-zero exit, nothing changed", arguments: [
        (["alerts", "set"], Int32(64), "nothing to change"),
        (["alerts", "set", "--warning", "96", "--critical", "95"], 64, "warning (96 %) must be lower than critical (95 %)"),
        (["alerts", "set", "--warning", "100"], 64, "warning (100 %) must be between 10 and 99 % used"),
        (["alerts", "set", "--critical", "4"], 64, "critical (4 %) must be between 5 and 95 % used"),
        (["alerts", "set", "--critical", "80"], 1, "warning (85 %) must be lower than critical (80 %)"),
        (["alerts", "set", "--warning", "-5"], 64, "--warning"),
        (["alerts", "set", "--warning", "８５"], 64, "--warning"),
        (["alerts", "set", "--warning", "nan"], 64, "--warning"),
        (["alerts", "source", "BAT9", "--disable"], 1, "no source 'BAT9': see dosetap alerts show"),
        (["alerts", "source", "BAT0", "--enable", "--disable"], 64, "exclude each other"),
        (["alerts", "source", "BAT0"], 64, "nothing to change"),
        (["alerts", "snooze", "2h"], 64, "invalid snooze '2h': use 15m, 1h, 4h, 24h or off"),
        (["alerts", "template", "warning", "{source} {pct}"], 1, "unknown placeholder {pct}"),
        (["alerts", "template", "urgent", "x"], 64, "invalid level 'urgent'"),
        (["alerts", "template", "warning"], 64, "give the message, or --reset"),
        (["alerts", "history", "--json", "--clear"], 64, "not both"),
    ])
    func badInput(args: [String], code: Int32, message: String) async throws {
        let cli = try CLI()
        let r = try await cli.run(args)
        #expect(r.exitCode == code, "\(r.out) \(r.err)")
        #expect(r.err.hasPrefix("dosetap: "), "\(r.err)")
        #expect(r.err.contains(message), "\(r.err)")
        #expect(r.err.filter { $0 == "\n" }.count == 1, "\(r.err)")
        let show = try cli.json(try await cli.run(["alerts", "show", "--json"]).out)
        #expect(show["warning"] as? Int == 85 && show["critical"] as? Int == 95)
    }

    @Test("a snooze ends on its own: still on a minute before, over a second after (faketime)")
    func snoozeExpires() async throws {
        let cli = try CLI()
        let set = try await cli.run(["alerts", "snooze", "1h"], fakeTime: "2026-05-04 21:00:00")
        #expect(set.out == "Alerts snoozed until Mon 2026-05-04 22:00 GMT.\n", "\(set.out) \(set.err)")
        let before = try cli.json(try await cli.run(["alerts", "show", "--json"], fakeTime: "2026-05-04 21:59:00").out)
        #expect(before["snoozedUntil"] as? String == "2026-05-04T22:00:00Z")
        let after = try cli.json(try await cli.run(["alerts", "show", "--json"], fakeTime: "2026-05-04 22:00:01").out)
        #expect(after["snoozedUntil"] is NSNull)
    }

    @Test("a command source of config.toml is listed before its first run (kind command, not read yet), and can be turned off")
    func commandSourceListed() async throws {
        let cli = try CLI()
        try cli.writeConfig("""
            [[alerts.command]]
            name = "API quota"
            command = ["quota-left", "--percent"]
            """)
        let shown = try cli.json(try await cli.run(["alerts", "show", "--json"], scenario: "no-supplies").out)
        let sources = try #require(shown["sources"] as? [[String: Any]])
        let quota = try #require(sources.first { $0["name"] as? String == "API quota" })
        #expect(quota["kind"] as? String == "command" && quota["usage"] is NSNull && quota["state"] as? String == "unreadable")
        let off = try await cli.run(["alerts", "source", "API quota", "--disable"], scenario: "no-supplies")
        #expect(off.exitCode == 0 && off.out == "API quota: alerts off\n", "\(off.out) \(off.err)")
    }
}
