import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// `dosetap alarm …` through the real binary, on recorded batteries (umockdev) and a fixed clock (faketime).
@Suite("dosetap alarm (the real binary)")
struct AlarmCLITests {
    /// The output without its "Assuming: …" lines (#24; their text depends on whether this machine can wake itself).
    static func withoutAssumption(_ out: String) -> String {
        out.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("Assuming: ") }.joined(separator: "\n")
    }

    /// Runs `body` with the running agent's record that it can wake the machine, locked as a running agent holds it:
    /// the nudge (#52) then does not depend on whether the machine running the tests could wake itself (one that
    /// cannot will not sleep, and is nudged at once).
    static func agentCanWake(_ cli: CLI, _ body: () async throws -> Void) async throws {
        try FileManager.default.createDirectory(at: cli.dataDirectory, withIntermediateDirectories: true)
        let file = cli.dataDirectory.appendingPathComponent("wake-status.json")
        try Data(#"{"pid":1,"checkedAt":"2026-05-04T21:00:00Z","method":"alarmTimer"}"#.utf8).write(to: file)
        let fd = open(file.path, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0 && flock(fd, LOCK_EX) == 0)
        defer { close(fd) }
        try await body()
    }

    // energy-discharging at 22:00 EDT: 77 % at 19.66 %/h, a new install (asleep at the 3 %/h prior, forecast awake).

    @Test("add on a draining battery in the evening (#52): silent while sleep would save it, with the deadline in JSON; the forecast is unchanged")
    func addAtRisk() async throws {
        let cli = try CLI()
        try await Self.agentCanWake(cli) {
            let r = try await cli.run(["alarm", "add", "06:30", "--label", "Work", "--repeat", "daily", "--json"], scenario: "energy-discharging",
                                      fakeTime: "2026-10-31 22:00:00", tz: "America/New_York")
            #expect(r.exitCode == 0, "\(r.err)")
            let a = try cli.json(r.out)
            #expect(a["id"] as? Int == 1)
            #expect(a["time"] as? String == "06:30")
            #expect(a["label"] as? String == "Work")
            #expect(a["repeat"] as? String == "daily")
            #expect(a["enabled"] as? Bool == true)
            #expect(a["nextAt"] as? String == "2026-11-01T06:30:00-05:00")
            // Before #52: "Alarm at Risk" (the forecast awake, below). Asleep by 23:27 the alarm is safe: no nudge.
            #expect(a["nudge"] is NSNull)
            #expect(a["deadline"] as? String == "2026-10-31T23:27:13-04:00")
            #expect(a["deadlineWhy"] as? String == "safe if it sleeps or is plugged in by then")
            #expect(a["nudgeWhy"] as? String == "sleepSavesIt")
            let forecast = try #require(a["forecast"] as? [String: Any])
            #expect(forecast["assumption"] as? String == "awake")
            #expect(forecast["risk"] as? String == "critical")
            #expect(forecast["asleepDrain"] is NSNull)

            // Text: the line alone (no deadline where no nudge is shown).
            let text = try await cli.run(["alarm", "list"], scenario: "energy-discharging", fakeTime: "2026-10-31 22:00:00", tz: "America/New_York")
            #expect(text.exitCode == 0, "\(text.err)")
            #expect(text.out == "1  06:30  daily  \"Work\"  next Sun 2026-11-01 06:30\n")
        }
    }

    @Test("the deadline 20 minutes away or less nudges (the seed's copy, the night it assumes, the deadline line); 27 minutes away is silent")
    func deadlineNear() async throws {
        let cli = try CLI()
        try await Self.agentCanWake(cli) {
            // 12:00 is 15 h away: asleep from now 77 − 45 − 3.3 = 28.7 %, the deadline 27 min away. 13:00: 17 min away.
            let far = try await cli.run(["alarm", "add", "12:00", "--json"], scenario: "energy-discharging", fakeTime: "2026-10-31 22:00:00",
                                        tz: "America/New_York")
            #expect(try cli.json(far.out)["nudge"] is NSNull, "\(far.out)")
            #expect(try cli.json(far.out)["nudgeWhy"] as? String == "sleepSavesIt")
            let near = try await cli.run(["alarm", "add", "13:00", "--json"], scenario: "energy-discharging", fakeTime: "2026-10-31 22:00:00",
                                         tz: "America/New_York")
            let a = try cli.json(near.out)
            #expect(a["deadline"] as? String == "2026-10-31T22:17:00-04:00")
            #expect(a["nudgeWhy"] as? String == "deadlineNear")
            let nudge = try #require(a["nudge"] as? [String: Any])
            #expect(nudge["severity"] as? String == "critical")
            #expect(nudge["header"] as? String == "Alarm at Risk")
            #expect(nudge["headline"] as? String == "Estimated battery at alarm: 0%")
            #expect(nudge["action"] as? String == "Plug in now.")
            // 0 % is at or below the power-off level (UPower's default 2 % here: no UPower.conf): said as an extra key.
            #expect(nudge["powerOff"] as? String == "This machine powers itself off at 2%.")
            #expect(nudge["assumption"] as? String == "if this machine stays awake until the alarm")
            #expect(nudge["deadlineText"] as? String == "At risk unless this machine sleeps or is plugged in by 22:17.")
            #expect(Set(nudge.keys) == ["severity", "header", "headline", "action", "powerOff", "assumption", "deadlineText"])

            let text = try await cli.run(["alarm", "list"], scenario: "energy-discharging", fakeTime: "2026-10-31 22:00:00", tz: "America/New_York")
            #expect(text.out == "1  12:00  once  \"Alarm\"  next Sun 2026-11-01 12:00\n2  13:00  once  \"Alarm\"  next Sun 2026-11-01 13:00\n"
                + "   Alarm at Risk: Estimated battery at alarm: 0% — Plug in now.\n   This machine powers itself off at 2%.\n"
                + "   Assuming: if this machine stays awake until the alarm\n   At risk unless this machine sleeps or is plugged in by 22:17.\n", "\(text.err)")
        }
    }

    /// ac-offline: 62 % at 11.898 %/h. 21:00 → 15:30 is 18.5 h: at risk even asleep from now (#52: the nudge then shows that
    /// night) — 62 − 3 × 18.5 at the prior − 10 min of ringing at 11.9 %/h = 4.52 → 4 %.
    @Test("the power-off level of UPower.conf and its drop-ins counts as empty: at it the nudge says so, just above it does not")
    func powerOffLevel() async throws {
        let cli = try CLI()
        try await Self.agentCanWake(cli) {
            // No UPower configuration: 2 %; 4 % is critical by the tiers, no power-off line.
            let plain = try await cli.run(["alarm", "add", "15:30"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            #expect(Self.withoutAssumption(plain.out) == "Added alarm: 1  15:30  once  \"Alarm\"  next Tue 2026-05-05 15:30\n"
                + "Alarm at Risk: Estimated battery at alarm: 4% — Plug in now.\n", "\(plain.err)")
            // PercentageAction=4 with CriticalPowerAction=PowerOff: at the level.
            try cli.writeUPower("[UPower]\nPercentageLow=20\nPercentageCritical=5\nPercentageAction=4\nCriticalPowerAction=PowerOff\n")
            let at = try await cli.run(["alarm", "list"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            #expect(Self.withoutAssumption(at.out) == "1  15:30  once  \"Alarm\"  next Tue 2026-05-05 15:30\n"
                + "   Alarm at Risk: Estimated battery at alarm: 4% — Plug in now.\n   This machine powers itself off at 4%.\n", "\(at.err)")
            // A drop-in lowers it to 3: just above, no power-off line; `battery --alarm` uses the same value.
            try cli.writeUPower(nil, dropIns: ["50-local.conf": "[UPower]\nPercentageAction=3\n"])
            let above = try await cli.run(["alarm", "list", "--json"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(above.out.utf8)) as? [[String: Any]])
            let nudge = try #require(listed.first?["nudge"] as? [String: Any])
            #expect(nudge["severity"] as? String == "critical")
            #expect(Set(nudge.keys) == ["severity", "header", "headline", "action", "assumption"])
            // A later drop-in (by name) raises it to 4.5 and names hibernation; the battery command agrees.
            try cli.writeUPower(nil, dropIns: ["60-more.conf": "[UPower]\nPercentageAction=4.5\nCriticalPowerAction=Hibernate\n"])
            let battery = try await cli.run(["battery", "--alarm", "15:30", "--json"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            let forecast = try cli.json(battery.out)
            #expect(forecast["risk"] as? String == "critical")
            #expect((forecast["nudge"] as? [String: Any])?["powerOff"] as? String == "This machine hibernates at 4.5%.")
            let text = try await cli.run(["alarm", "on", "1"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            #expect(Self.withoutAssumption(text.out).hasSuffix("This machine hibernates at 4.5%.\n"), "\(text.out)")
            // Garbage in UPower.conf.d: ignored, the earlier values count (4.5 % of 60-more.conf stays).
            try cli.writeUPower(nil, dropIns: ["70-bad.conf": "[UPower]\nPercentageAction=NaN\n"])
            let garbage = try await cli.run(["alarm", "list"], scenario: "ac-offline", fakeTime: "2026-05-04 21:00:00")
            #expect(garbage.exitCode == 0)
            #expect(Self.withoutAssumption(garbage.out).hasSuffix("   This machine hibernates at 4.5%.\n"), "\(garbage.out)")
        }
    }

    @Test("unknown drain: an enabled alarm says it cannot predict yet (text and JSON); nudge stays null; off says nothing")
    func unknownDrain() async throws {
        let cli = try CLI()
        // capacity-only-ups: a level but no rate, and no history yet.
        let added = try await cli.run(["alarm", "add", "06:30"], scenario: "capacity-only-ups", fakeTime: "2026-05-04 21:00:00")
        #expect(added.out == "Added alarm: 1  06:30  once  \"Alarm\"  next Tue 2026-05-05 06:30\n"
            + "Cannot predict the battery at this alarm yet: the drain is not known yet: no hardware rate and not enough history\n", "\(added.err)")
        _ = try await cli.run(["alarm", "add", "07:00", "--off"], scenario: "capacity-only-ups", fakeTime: "2026-05-04 21:00:00")
        let text = try await cli.run(["alarm", "list"], scenario: "capacity-only-ups", fakeTime: "2026-05-04 21:00:00")
        #expect(text.out == "1  06:30  once  \"Alarm\"  next Tue 2026-05-05 06:30\n"
            + "   Cannot predict the battery at this alarm yet: the drain is not known yet: no hardware rate and not enough history\n"
            + "2  07:00  once  \"Alarm\"  off\n", "\(text.err)")
        let json = try await cli.run(["alarm", "list", "--json"], scenario: "capacity-only-ups", fakeTime: "2026-05-04 21:00:00")
        let all = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(all[0]["nudge"] is NSNull)
        let forecast = try #require(all[0]["forecast"] as? [String: Any])
        #expect(forecast["risk"] as? String == "unknown")
        #expect(forecast["reason"] as? String == "the drain is not known yet: no hardware rate and not enough history")
        #expect(Array(all[0].keys).sorted() == ["deadline", "deadlineWhy", "enabled", "forecast", "id", "label", "nextAt", "nudge", "nudgeWhy",
                                                "repeat", "time"])
        #expect(Array(all[1].keys).sorted() == ["deadline", "deadlineWhy", "enabled", "id", "label", "nextAt", "nudge", "nudgeWhy", "repeat", "time"])
        // #52: no deadline where the drain awake is not known yet, nor for an alarm that is off.
        #expect(all[0]["deadline"] is NSNull)
        #expect(all[0]["nudgeWhy"] as? String == "unknown")
        #expect(all[1]["deadline"] is NSNull)
        #expect(all[1]["deadlineWhy"] as? String == "the alarm is off")
        #expect(all[1]["nudgeWhy"] is NSNull)
        let on = try await cli.run(["alarm", "on", "2", "--json"], scenario: "capacity-only-ups", fakeTime: "2026-05-04 21:00:00")
        #expect((try cli.json(on.out)["forecast"] as? [String: Any])?["risk"] as? String == "unknown")
    }

    @Test("on AC: no nudge at all (no \"all good\" message); an alarm that is off carries none and has no next time")
    func safeAndOff() async throws {
        let cli = try CLI()
        let added = try await cli.run(["alarm", "add", "05:30"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        #expect(added.exitCode == 0, "\(added.err)")
        #expect(added.out == "Added alarm: 1  05:30  once  \"Alarm\"  next Tue 2026-05-05 05:30\n")
        let off = try await cli.run(["alarm", "add", "07:00", "--off", "--repeat", "fri,mon", "--json"], scenario: "energy-discharging",
                                    fakeTime: "2026-05-04 21:00:00")
        #expect(off.exitCode == 0, "\(off.err)")
        let o = try cli.json(off.out)
        #expect(o["enabled"] as? Bool == false)
        #expect(o["repeat"] as? String == "mon,fri")
        #expect(o["nextAt"] is NSNull)
        #expect(o["nudge"] is NSNull)

        try await Self.agentCanWake(cli) {
            let list = try await cli.run(["alarm", "list", "--json"], scenario: "energy-discharging", fakeTime: "2026-05-04 21:00:00")
            #expect(list.exitCode == 0, "\(list.err)")
            let all = try #require(try JSONSerialization.jsonObject(with: Data(list.out.utf8)) as? [[String: Any]])
            #expect(all.map { $0["id"] as? Int } == [1, 2])
            // The enabled one carries its forecast (with the night it assumes); the one that is off does not. Both say
            // whether a deadline applies (#52).
            #expect(all.map { Array($0.keys).sorted() } == [
                ["deadline", "deadlineWhy", "enabled", "forecast", "id", "label", "nextAt", "nudge", "nudgeWhy", "repeat", "time"],
                ["deadline", "deadlineWhy", "enabled", "id", "label", "nextAt", "nudge", "nudgeWhy", "repeat", "time"]])
            // 05:30 on a draining battery 8.5 h away: at risk awake, but asleep by its deadline it is safe — no nudge
            // (before #52: a nudge); the one that is off: nothing.
            #expect(all[0]["nudge"] is NSNull)
            #expect(all[0]["nudgeWhy"] as? String == "sleepSavesIt")
            #expect(all[0]["deadline"] is String)
            #expect(all[1]["nudge"] is NSNull)
            #expect(all[1]["deadline"] is NSNull)
        }
        // On AC no deadline applies.
        let plugged = try await cli.run(["alarm", "list", "--json"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        let onAC = try #require(try JSONSerialization.jsonObject(with: Data(plugged.out.utf8)) as? [[String: Any]])
        #expect(onAC.first?["deadline"] is NSNull)
        #expect(onAC.first?["deadlineWhy"] as? String == "on external power")
        #expect(onAC.first?["nudgeWhy"] as? String == "safe")
    }

    @Test("on, off, edit and remove; the change is kept and shown")
    func lifecycle() async throws {
        let cli = try CLI()
        _ = try await cli.run(["alarm", "add", "06:30"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        let off = try await cli.run(["alarm", "off", "1"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        #expect(off.out == "Off: 1  06:30  once  \"Alarm\"  off\n", "\(off.err)")
        let on = try await cli.run(["alarm", "on", "1"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        #expect(on.out == "On: 1  06:30  once  \"Alarm\"  next Tue 2026-05-05 06:30\n", "\(on.err)")
        let edit = try await cli.run(["alarm", "edit", "1", "--time", "6:45", "--label", "Gym \u{1b}[2J", "--repeat", "sat,sun"],
                                     scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
        #expect(edit.out == "Changed alarm: 1  06:45  sat,sun  \"Gym \\x1b[2J\"  next Sat 2026-05-09 06:45\n", "\(edit.err)")
        let removed = try await cli.run(["alarm", "remove", "1"])
        #expect(removed.exitCode == 0)
        #expect(removed.out == "Removed alarm 1 (06:45, \"Gym \\x1b[2J\")\n")
        let list = try await cli.run(["alarm", "list"])
        #expect(list.out == "No alarms. Add one: dosetap alarm add 06:30 --repeat daily\n")
    }

    @Test("bad input: one line on stderr, a non-zero exit, nothing stored", arguments: [
        (["alarm", "add", "25:00"], Int32(64), "invalid time '25:00'"),
        (["alarm", "add", "06:30", "--repeat", "mon,funday"], 64, "invalid repeat 'mon,funday'"),
        (["alarm", "add", "06:30", "--repeat", "mon,mon"], 64, "mon is given twice"),
        (["alarm", "add", "06:30", "--label", ""], 64, "the label is empty"),
        (["alarm", "add", "06:30", "--label", String(repeating: "x", count: 201)], 64, "at most 200"),
        (["alarm", "on", "7"], 1, "no alarm 7: see dosetap alarm list"),
        (["alarm", "remove", "7"], 1, "no alarm 7: see dosetap alarm list"),
        (["alarm", "off", "0"], 64, "invalid for '<id>'"),
        (["alarm", "off", "-1"], 64, "'<id>'"),
        (["alarm", "off", "１"], 64, "invalid for '<id>'"),
        (["alarm", "edit", "1"], 64, "nothing to change"),
        (["alarm", "edit", "1", "--time", "24:00"], 64, "invalid time '24:00'"),
        (["alarm", "stop"], 1, "no alarm is ringing"),
        (["alarm", "snooze"], 1, "no alarm is ringing"),
        (["alarm", "stop", "1"], 64, "Unexpected argument '1'"),
        (["alarm", "add", "06:30", "--haptics", "extreme"], 64, "invalid intensity 'extreme'"),
        (["alarm", "add", "06:30", "--sound", "no-such-sound"], 1, "unknown sound 'no-such-sound': see dosetap sounds list"),
        (["alarm", "add", "06:30", "--sound", "bell\u{1b}[2J"], 1, "unknown sound 'bell\\x1b[2J'"),
    ])
    func badInput(args: [String], code: Int32, message: String) async throws {
        let cli = try CLI()
        let r = try await cli.run(args)
        #expect(r.exitCode == code, "\(r.out) \(r.err)")
        #expect(r.err.hasPrefix("dosetap: "), "\(r.err)")
        #expect(r.err.contains(message), "\(r.err)")
        #expect(r.err.filter { $0 == "\n" }.count == 1, "\(r.err)")
        #expect(r.out.isEmpty)
        let list = try await cli.run(["alarm", "list", "--json"])
        #expect(list.out == "[]\n")
    }

    @Test("stop and snooze act on the alarm ringing now: snooze says when it rings again; a ring left by a dead agent is not answerable")
    func stopAndSnooze() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["alarm", "add", "06:30", "--label", "Work \u{1b}[2J", "--repeat", "daily"]).exitCode == 0)
        let database = try DoseTapDatabase(directory: cli.dataDirectory)
        let rings = AlarmRingRepository(database: database)
        let now = Date()
        // As the agent does at the occurrence.
        let ring = try rings.start(.init(alarmID: 1, kind: .scheduled, dueAt: now.addingTimeInterval(-60)), at: now.addingTimeInterval(-60))
        let snoozed = try await cli.run(["alarm", "snooze"], tz: "UTC")
        #expect(snoozed.exitCode == 0, "\(snoozed.err)")
        let until = try #require(try rings.ring(id: ring.id)?.snoozeUntil)
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "HH:mm"
        #expect(snoozed.out == "Snoozed alarm 1 (06:30, \"Work \\x1b[2J\"): it rings again at \(f.string(from: until)).\n")
        #expect(abs(until.timeIntervalSince(now) - 540) < 30)
        #expect(try rings.ring(id: ring.id)?.endedBy == .cli)
        let again = try await cli.run(["alarm", "stop"])
        #expect(again.exitCode == 1 && again.err == "dosetap: no alarm is ringing\n", "\(again.err)")

        // The snooze rings: stop it.
        let second = try rings.start(.init(alarmID: 1, kind: .snooze, dueAt: until), at: Date())
        let stopped = try await cli.run(["alarm", "stop"])
        #expect(stopped.exitCode == 0, "\(stopped.err)")
        #expect(stopped.out == "Stopped alarm 1 (06:30, \"Work \\x1b[2J\").\n")
        #expect(try rings.ring(id: second.id)?.outcome == .stopped)

        // A row still `ringing` eleven minutes after it started (its agent died): nothing to answer.
        let stale = try rings.start(.init(alarmID: 1, kind: .scheduled, dueAt: now.addingTimeInterval(86_400 - 660)),
                                    at: Date().addingTimeInterval(-660))
        let late = try await cli.run(["alarm", "stop"])
        #expect(late.exitCode == 1 && late.err == "dosetap: no alarm is ringing\n")
        #expect(try rings.ring(id: stale.id)?.outcome == .ringing, "left for the agent to record as missed")
    }

    @Test("an alarm's own sound and vibration: set, shown, kept in JSON only when set, back to the alarm event's with default")
    func ownSoundAndHaptics() async throws {
        let cli = try CLI()
        let added = try await cli.run(["alarm", "add", "06:30", "--sound", "bell", "--haptics", "strong", "--json"])
        #expect(added.exitCode == 0, "\(added.err)")
        let a = try cli.json(added.out)
        #expect(a["sound"] as? String == "bell" && a["haptics"] as? String == "strong")
        let list = try await cli.run(["alarm", "list"])
        #expect(list.out.hasPrefix("1  06:30  once  \"Alarm\"  next "), "\(list.out)")
        #expect(list.out.contains("  sound bell  vibration strong\n"), "\(list.out)")
        let reset = try await cli.run(["alarm", "edit", "1", "--sound", "default", "--haptics", "default", "--json"])
        #expect(reset.exitCode == 0, "\(reset.err)")
        let r = try cli.json(reset.out)
        #expect(r["sound"] == nil && r["haptics"] == nil)
        let changed = try await cli.run(["alarm", "edit", "1", "--haptics", "light"])
        #expect(changed.exitCode == 0 && changed.out.contains("vibration light"), "\(changed.out) \(changed.err)")
    }

    @Test("backups: add, move, remove, on; the pinned preview; the primary device and duplicates refused; device targets need a broker")
    func backups() async throws {
        let cli = try CLI()
        try cli.writeConfig("[household]\nname = \"Jen's family\"\ndevice = \"laptop\"\n")
        #expect(try await cli.run(["alarm", "add", "05:00", "--label", "Flight", "--repeat", "daily"], tz: "UTC").exitCode == 0)
        let device = try await cli.run(["alarm", "backup", "1", "add", "device:bedroom-pi"])
        #expect(device.exitCode == 0 && device.out.contains("Note: device targets need the household broker"), "\(device.out) \(device.err)")
        #expect(try await cli.run(["alarm", "backup", "1", "add", "push:https://ntfy.sh/jen"]).exitCode == 0)
        let phone = try await cli.run(["alarm", "backup", "1", "add", "phone:5551234567"])
        #expect(phone.out.contains("   3  (555) 123-4567  phone  Calls with automated backup message\n"), "\(phone.out)")
        let preview = try await cli.run(["alarm", "preview", "1"], tz: "UTC")
        #expect(preview.out == "05:02 — Alarm on bedroom-pi\n05:04 — Alarm on jen\n05:06 — Call (555) 123-4567\n", "\(preview.out) \(preview.err)")
        let json = try JSONSerialization.jsonObject(with: Data(try await cli.run(["alarm", "preview", "1", "--json"], tz: "UTC").out.utf8)) as? [String: Any]
        let slots = try #require(json?["slots"] as? [[String: Any]])
        #expect(slots.map { $0["action"] as? String } == ["Alarm on bedroom-pi", "Alarm on jen", "Call (555) 123-4567"])
        #expect(try await cli.run(["alarm", "backup", "1", "move", "phone:(555) 123-4567", "--to", "1"]).exitCode == 0)
        #expect(try await cli.run(["alarm", "backup", "1", "remove", "push:https://ntfy.sh/jen"]).exitCode == 0)
        let on = try await cli.run(["alarm", "backup", "1", "on"])
        #expect(on.out.hasPrefix("Backups of alarm 1 (05:00, \"Flight\"): on\n   1  (555) 123-4567  phone"), "\(on.out)")
        let list = try JSONSerialization.jsonObject(with: Data(try await cli.run(["alarm", "backup", "1", "list", "--json"]).out.utf8)) as? [String: Any]
        #expect((list?["targets"] as? [[String: Any]])?.map { $0["target"] as? String } == ["phone:+15551234567", "device:bedroom-pi"])
        #expect(list?["enabled"] as? Bool == true)
        for (args, code, message) in [
            (["alarm", "backup", "1", "add", "device:laptop"], Int32(1), "laptop is this machine"),
            (["alarm", "backup", "1", "add", "phone:555.123.4567"], 1, "is already a backup of alarm 1"),
            (["alarm", "backup", "1", "move", "device:bedroom-pi", "--to", "3"], 1, "--to 3: a position from 1 to 2"),
            (["alarm", "backup", "1", "remove", "device:kitchen"], 1, "device:kitchen is not a backup of alarm 1"),
            (["alarm", "backup", "9", "list"], 1, "no alarm 9: see dosetap alarm list"),
            (["alarm", "backup", "1", "add"], 64, "add needs a target"),
            (["alarm", "backup", "1", "jump"], 64, "invalid action 'jump'"),
            (["alarm", "preview", "9"], 1, "no alarm 9"),
        ] as [([String], Int32, String)] {
            let r = try await cli.run(args)
            #expect(r.exitCode == code && r.err.hasPrefix("dosetap: ") && r.err.contains(message) && r.err.filter { $0 == "\n" }.count == 1,
                    "\(args): \(r.exitCode.map(String.init) ?? "-") \(r.err)")
        }
        // Removing the alarm removes its backups.
        #expect(try await cli.run(["alarm", "remove", "1"]).exitCode == 0)
        #expect(try await cli.run(["alarm", "add", "06:00"]).exitCode == 0)
        #expect(try await cli.run(["alarm", "backup", "2", "list"]).out.contains("none yet"))
    }
}
