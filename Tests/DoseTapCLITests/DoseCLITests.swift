import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// The real `dosetap` binary, driven through whole nights with faketime and TZ.
@Suite("dosetap dose, export, data, setup (the real binary)")
struct DoseCLITests {
    @Test("a whole night: Dose 1, too early, Dose 2, status, CSV")
    func night() async throws {
        let cli = try CLI()
        let d1 = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        #expect(d1.exitCode == 0)
        #expect(d1.out.hasPrefix("Dose 1 taken at 22:30. Window opens at 01:00, closes at 02:30; reminder at 01:15."))

        let early = try await cli.dose(["dose", "take"], at: "2026-01-16 00:00:00")
        #expect(early.exitCode == 2)
        #expect(early.err == "dosetap: Too early for Dose 2: the window opens at 01:00 (in 60 min)\n")

        let status = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-16 01:10:00").out)
        #expect(status.keys.sorted() == ["dose1At", "dose2At", "lastAction", "minutesRemaining", "nightDate", "onTime", "phase", "reminderAt",
                                         "reminderSetBy", "setAside", "skipReason", "snoozesLeft", "snoozesUsed", "windowClosesAt", "windowOpensAt"])
        #expect(status["phase"] as? String == "open")
        #expect(status["nightDate"] as? String == "2026-01-15")
        #expect(status["dose1At"] as? String == "2026-01-15T22:30:00-05:00")
        #expect(status["windowOpensAt"] as? String == "2026-01-16T01:00:00-05:00")
        #expect(status["windowClosesAt"] as? String == "2026-01-16T02:30:00-05:00")
        #expect(status["reminderAt"] as? String == "2026-01-16T01:15:00-05:00")
        #expect(status["minutesRemaining"] as? Int == 80)
        #expect(status["snoozesUsed"] as? Int == 0)
        #expect(status["snoozesLeft"] as? Int == 3)
        #expect(status["dose2At"] is NSNull && status["skipReason"] is NSNull && status["onTime"] is NSNull)

        let d2 = try await cli.dose(["dose", "take", "--json"], at: "2026-01-16 01:15:00")
        #expect(d2.exitCode == 0)
        let taken = try cli.json(d2.out)
        #expect(taken["recorded"] as? Bool == true)
        #expect((taken["status"] as? [String: Any])?["phase"] as? String == "completed")
        #expect((taken["status"] as? [String: Any])?["onTime"] as? Bool == true)

        let again = try await cli.dose(["dose", "take"], at: "2026-01-16 01:16:00")
        #expect(again.exitCode == 2)
        let csv = try await cli.dose(["export", "csv"], at: "2026-01-16 08:00:00")
        #expect(csv.out == "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped\r\n2026-01-15,22:30:00,01:15:00,165,true,false\r\n")
    }

    @Test("undo within 5 s, refused after")
    func undo() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let undo = try await cli.dose(["dose", "undo"], at: "2026-01-15 22:30:04")
        #expect(undo.out == "Dose 1 undone\n")
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:31:00")
        let late = try await cli.dose(["dose", "undo"], at: "2026-01-15 22:31:06")
        #expect(late.exitCode == 2)
        #expect(late.err == "dosetap: Undo window has passed\n")
        #expect(try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:32:00").out)["phase"] as? String == "waiting")
    }

    @Test("after close: refused without --late, recorded with it within the grace, too late after")
    func late() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let refused = try await cli.dose(["dose", "take"], at: "2026-01-16 02:35:00")
        #expect(refused.exitCode == 2)
        #expect(refused.err.contains("closed at 02:30") && refused.err.contains("--late"))
        let late = try await cli.dose(["dose", "take", "--late"], at: "2026-01-16 02:35:00")
        #expect(late.exitCode == 0)
        #expect(late.out.contains("not on time"))
        let status = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-16 02:40:00").out)
        #expect(status["onTime"] as? Bool == false)

        let other = try CLI()
        _ = try await other.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let tooLate = try await other.dose(["dose", "take", "--late"], at: "2026-01-16 03:00:00")
        #expect(tooLate.exitCode == 2)
        #expect(tooLate.err.contains("too late"))
    }

    @Test("skip asks first; y skips, anything else does not")
    func skip() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let no = try await cli.dose(["dose", "skip"], at: "2026-01-15 23:00:00", input: "n\n")
        #expect(no.out.hasPrefix("Skip Dose 2? [y/N] "))
        #expect(no.exitCode == 1)
        #expect(try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 23:00:01").out)["phase"] as? String == "waiting")
        let yes = try await cli.dose(["dose", "skip", "--reason", "side-effects"], at: "2026-01-15 23:00:02", input: "y\n")
        #expect(yes.exitCode == 0)
        #expect(yes.out.contains("Dose 2 skipped (Side effects)."))
        let status = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 23:00:03").out)
        #expect(status["phase"] as? String == "skipped")
        #expect(status["skipReason"] as? String == "side-effects")
        let bad = try await cli.dose(["dose", "skip", "--reason", "bored", "--yes"], at: "2026-01-15 23:00:04")
        #expect(bad.exitCode != 0 && bad.err.split(separator: "\n").count == 1)
    }

    @Test("snooze: three, then the limit")
    func snooze() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        for (i, time) in ["01:25", "01:35", "01:45"].enumerated() {
            let r = try await cli.dose(["dose", "snooze"], at: "2026-01-16 01:05:0\(i)")
            #expect(r.out.hasPrefix("Reminder snoozed to \(time)"))
        }
        let limit = try await cli.dose(["dose", "snooze", "--json"], at: "2026-01-16 01:06:00")
        #expect(limit.exitCode == 2)
        #expect((try cli.json(limit.out)["refusal"] as? [String: Any])?["code"] as? String == "snooze-limit")
    }

    @Test("DST spring-forward night in New York: 150 real minutes, whatever the clock says")
    func springForward() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-03-07 23:30:00") // EST
        // 01:59 EST is 149 real minutes later; one minute after, clocks jump to 03:00 EDT: 150.
        #expect(try await cli.dose(["dose", "take"], at: "2026-03-08 01:59:00").exitCode == 2) // 149 min, still EST
        let d2 = try await cli.dose(["dose", "take"], at: "2026-03-08 03:00:00")
        #expect(d2.exitCode == 0)
        #expect(d2.out.contains("150 min after Dose 1"))
    }

    @Test("DST fall-back night: the clock repeats an hour, the window does not")
    func fallBack() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-10-31 23:30:00") // EDT
        let s = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-10-31 23:31:00").out)
        #expect(s["windowOpensAt"] as? String == "2026-11-01T01:00:00-05:00")
        #expect(s["windowClosesAt"] as? String == "2026-11-01T02:30:00-05:00")
    }

    @Test("a time-zone change mid-night: New York to Los Angeles")
    func travel() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:00:00")
        let s = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:00:00", tz: "America/Los_Angeles").out)
        #expect(s["windowOpensAt"] as? String == "2026-01-15T21:30:00-08:00")
        #expect(s["nightDate"] as? String == "2026-01-15")
        let d2 = try await cli.dose(["dose", "take"], at: "2026-01-15 21:30:00", tz: "America/Los_Angeles")
        #expect(d2.exitCode == 0, "\(d2.err)")
    }

    @Test("Dose 1 at 00:30 belongs to the previous evening's night")
    func afterMidnight() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-16 00:30:00")
        let s = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-16 00:31:00").out)
        #expect(s["nightDate"] as? String == "2026-01-15")
    }

    @Test("two processes pressing take at the same instant record one Dose 2")
    func race() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let results = try await withThrowingTaskGroup(of: Int32?.self) { group in
            for _ in 0..<4 {
                group.addTask { try await cli.dose(["dose", "take"], at: "2026-01-16 01:20:00").exitCode }
            }
            return try await group.reduce(into: [Int32?]()) { $0.append($1) }
        }
        #expect(results.filter { $0 == 0 }.count == 1)
        #expect(results.filter { $0 == 2 }.count == 3)
    }

    @Test("export ranges: last 30d by default, 90d, all, from/to; RFC 4180; --output")
    func exportRanges() async throws {
        let cli = try CLI()
        let repo = DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory))
        let ny = TimeZone(identifier: "America/New_York")!
        var events: [DoseEvent] = []
        for night in ["2026-02-21", "2026-04-02", "2026-05-22", "2026-05-31"] {
            let d1 = localDate("\(night) 22:00:00", ny)
            events.append(DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: d1, timeZone: ny.identifier, source: .cli))
            if night != "2026-05-22" {
                events.append(DoseEvent(id: UUID(), kind: .dose2(late: false), at: d1.addingTimeInterval(170 * 60), timeZone: ny.identifier, source: .button))
            }
        }
        try repo.append(events)
        let now = "2026-06-01 12:00:00"
        func rows(_ args: [String]) async throws -> [String] {
            let r = try await cli.dose(["export", "csv"] + args, at: now)
            #expect(r.exitCode == 0, "\(r.err)")
            return r.out.split(separator: "\r\n").map(String.init)
        }
        #expect(try await rows([]) == ["Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped",
                                       "2026-05-22,22:00:00,,,false,true", "2026-05-31,22:00:00,00:50:00,170,true,false"])
        #expect(try await rows(["--last", "90d"]).count == 4)
        #expect(try await rows(["--last", "all"]).count == 5)
        #expect(try await rows(["--from", "2026-02-21", "--to", "2026-04-01"]) == ["Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped",
                                                                                "2026-02-21,22:00:00,00:50:00,170,true,false"])
        #expect(try await rows(["--from", "2026-04-02"]).count == 4)
        #expect(try await rows(["--to", "2026-02-21"]).count == 2)
        let file = cli.home.appendingPathComponent("out.csv")
        _ = try await cli.dose(["export", "csv", "--last", "all", "--output", file.path], at: now)
        #expect(try String(contentsOf: file, encoding: .utf8).split(separator: "\r\n").count == 5)
        for bad in [["--last", "7d"], ["--from", "2026-13-01"], ["--from", "2026-02-30"], ["--from", "2026-05-02", "--to", "2026-05-01"],
                    ["--last", "30d", "--from", "2026-05-01"]] {
            let r = try await cli.dose(["export", "csv"] + bad, at: now)
            #expect(r.exitCode == 64 && r.err.split(separator: "\n").count == 1, "\(bad): \(r.err)")  // a usage error
        }
    }

    @Test("data clear: lists, requires DELETE, anything else deletes nothing")
    func dataClear() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let no = try await cli.dose(["data", "clear"], at: "2026-01-15 22:31:00", input: "delete\n")
        #expect(no.exitCode == 1)
        #expect(no.out.contains("dose history: 1 event") && no.out.contains("settings") && no.out.contains("battery sample history"))
        // #26: it names everything it deletes — one line per table of the list the deletion runs over — and what it keeps.
        let lines = no.out.split(separator: "\n").filter { $0.hasPrefix("  - ") }
        #expect(lines.count == StoredTables.cleared.count, "\(no.out)")
        for part in StoredTables.cleared {
            #expect(lines.contains { $0.hasPrefix("  - \(part.what): ") }, "\(part.table): \(no.out)")
        }
        #expect(no.out.contains("\n  - buttons, with their keys and Flic 2 pairings: 0 buttons\n"), "\(no.out)")
        #expect(no.out.contains("\n  - usage-alert history: 0 alerts\n"), "\(no.out)")
        #expect(no.out.contains("\n  - backup alarms that rang here: 0 rings\n"), "\(no.out)")
        #expect(no.out.contains(StoredTables.keptSentence))
        #expect(no.err == "dosetap: aborted: nothing deleted\n")
        #expect(try DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).count() == 1)
        let wrong = try await cli.dose(["data", "clear", "--confirm", "yes"], at: "2026-01-15 22:31:00")
        #expect(wrong.exitCode == 1)
        let yes = try await cli.dose(["data", "clear", "--confirm", "DELETE"], at: "2026-01-15 22:31:00")
        #expect(yes.exitCode == 0)
        #expect(try DoseRepository(database: try DoseTapDatabase(directory: cli.dataDirectory)).count() == 0)
        // A button with its key is named, counted and deleted; an alarm is kept, as said.
        #expect(try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--name", "bedside",
                                   "--bindkey", "231d39c1d7cc1ab1aee224cd096db932"]).exitCode == 0)
        #expect(try await cli.run(["alarm", "add", "06:30"]).exitCode == 0)
        let named = try await cli.dose(["data", "clear", "--confirm", "DELETE"], at: "2026-01-15 22:32:00")
        #expect(named.exitCode == 0 && named.out.contains("\n  - buttons, with their keys and Flic 2 pairings: 1 button\n"), "\(named.out)")
        #expect(try await cli.run(["button", "list", "--json"]).out.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(try await cli.run(["alarm", "list"]).out.hasPrefix("1  06:30"))
    }

    @Test("setup: flags for scripts, a wizard on stdin, --show --json, --reconfigure, validation")
    func setup() async throws {
        let cli = try CLI()
        let flags = try await cli.run(["setup", "--bedtime", "23:00", "--wake-time", "07:15", "--dose1-grams", "4.5",
                                       "--dose2-grams", "3.75", "--target", "195", "--notifications", "off", "--quiet-mode", "on"])
        #expect(flags.exitCode == 0, "\(flags.err)")
        let shown = try cli.json(try await cli.run(["setup", "--show", "--json"]).out)
        #expect(shown["bedtime"] as? String == "23:00")
        #expect(shown["wakeTime"] as? String == "07:15")
        #expect(shown["dose2Grams"] as? Double == 3.75)
        #expect(shown["dose2TargetMinutes"] as? Int == 195)
        #expect(shown["notifications"] as? Bool == false)
        #expect(shown["quietMode"] as? Bool == true)
        #expect(shown["configured"] as? Bool == true)
        // Dose 1 now uses the chosen target.
        let d1 = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        #expect(d1.out.contains("reminder at 01:45"))

        let again = try await cli.run(["setup"])
        #expect(again.out.hasPrefix("Already set up"))

        let wizard = try CLI()
        let answers = "\n22:00\n25\n4\n3\n170\n180\nyes\noff\n"
        let w = try await wizard.run(["setup"], input: answers)
        #expect(w.exitCode == 0, "\(w.err)")
        #expect(w.out.contains("Bedtime (HH:MM) [22:30]: "))
        let ws = try wizard.json(try await wizard.run(["setup", "--show", "--json"]).out)
        #expect(ws["bedtime"] as? String == "22:30")
        #expect(ws["wakeTime"] as? String == "22:00")
        #expect(ws["dose1Grams"] as? Double == 4)
        #expect(ws["dose2Grams"] as? Double == 3)
        #expect(ws["dose2TargetMinutes"] as? Int == 180)

        let re = try await wizard.run(["setup", "--reconfigure", "--target", "225"], input: "\n\n\n\n\n\n")
        #expect(re.exitCode == 0)
        #expect(try wizard.json(try await wizard.run(["setup", "--show", "--json"]).out)["dose2TargetMinutes"] as? Int == 225)

        for bad in [["--target", "170"], ["--bedtime", "25:00"], ["--dose1-grams", "nan"], ["--dose1-grams", "-1"],
                    ["--dose1-grams", "6", "--dose2-grams", "6"], ["--notifications", "maybe"]] {
            let r = try await CLI().run(["setup"] + bad)
            #expect(r.exitCode != 0 && r.err.split(separator: "\n").count == 1, "\(bad): \(r.err)")
        }
    }
}

@Suite("Dose 1 on battery: will it last until the reminder?")
struct DoseBatteryCLITests {
    @Test("a battery that will not last: the Dose 1 confirmation carries the nudge")
    func nudge() async throws {
        let cli = try CLI()
        // 42 % draining at 13.8 %/h; the reminder is 165 min away: 4 % left.
        let r = try await cli.run(["dose", "take"], scenario: "mouse-beside-laptop", fakeTime: "2026-01-15 22:30:00",
                                  tz: "America/New_York")
        #expect(r.exitCode == 0, "\(r.err)")
        #expect(r.out.contains("Estimated battery at reminder: 4% — Plug in now."))
        let other = try CLI()
        let json = try other.json(try await other.run(["dose", "take", "--json"], scenario: "mouse-beside-laptop",
                                                      fakeTime: "2026-01-15 22:30:00", tz: "America/New_York").out)
        let nudge = try #require(json["batteryNudge"] as? [String: Any])
        #expect(nudge["severity"] as? String == "critical")
        #expect(nudge["headline"] as? String == "Estimated battery at reminder: 4%")
    }

    @Test("on AC, or with a battery that lasts: no nudge")
    func none() async throws {
        for scenario in ["ac-online", "energy-discharging", "no-battery"] {
            let cli = try CLI()
            let r = try await cli.run(["dose", "take"], scenario: scenario, fakeTime: "2026-01-15 22:30:00", tz: "America/New_York")
            #expect(r.exitCode == 0)
            #expect(!r.out.contains("Estimated battery"), "\(scenario): \(r.out)")
        }
    }
}
