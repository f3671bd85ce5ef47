import DoseTapTesting
import Foundation
import Subprocess
import SystemPackage
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `dosetap export ics` (checked by parsing it with Python's icalendar, pinned in .venv-ical/) and
/// `dosetap logs export` (a fake `journalctl` on PATH records how it is called and plays hostile entries).
@Suite("dosetap export ics and logs export (the real binary)")
struct ExportCLITests {
    static let ny = "America/New_York"

    /// The venv's python (scripts/icalendar-reference.sh). Missing → the test fails, never skips.
    static func icalendarPython() throws -> String {
        let path = Fixtures.packageRoot.appendingPathComponent(".venv-ical/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError("the iCalendar parser is not set up: run scripts/icalendar-reference.sh (it creates .venv-ical/ with icalendar 7.3.0); \(path) is missing")
        }
        return path
    }

    /// What icalendar makes of a calendar file.
    static func parse(_ file: String) async throws -> [String: Any] {
        let checker = Fixtures.packageRoot.appendingPathComponent("hw-fixtures/ical/check-ics.py").path
        let r = try await Subprocess.run(.path(FilePath(try icalendarPython())), arguments: [checker, file],
                                         output: .string(limit: 1 << 22), error: .string(limit: 1 << 20))
        guard case .exited(0) = r.terminationStatus,
              let object = try JSONSerialization.jsonObject(with: Data(r.standardOutput.utf8)) as? [String: Any] else {
            throw FixtureError("icalendar could not read \(file): \(r.standardError)")
        }
        return object
    }

    static func events(_ parsed: [String: Any]) -> [[String: Any]] { parsed["events"] as? [[String: Any]] ?? [] }

    @Test("export ics: alarms across a DST change and the planned window, as icalendar reads them; UIDs stable")
    func ics() async throws {
        let cli = try CLI()
        let at = "2026-10-29 12:00:00"
        #expect(try await cli.dose(["setup", "--bedtime", "22:30", "--wake-time", "06:30", "--dose1-grams", "4.5", "--dose2-grams", "4.5",
                                    "--target", "165", "--notifications", "on", "--quiet-mode", "off"], at: at).exitCode == 0)
        #expect(try await cli.dose(["alarm", "add", "06:30", "--label", "Work, gym; \\ é\u{1b}[31m", "--repeat", "daily"], at: at).exitCode == 0)
        #expect(try await cli.dose(["alarm", "add", "07:00", "--repeat", "once"], at: at).exitCode == 0)
        #expect(try await cli.dose(["alarm", "add", "05:00", "--repeat", "daily", "--off"], at: at).exitCode == 0)
        let file = cli.home.appendingPathComponent("dosetap.ics").path
        let r = try await cli.dose(["export", "ics", "--days", "7", "--output", file], at: at)
        #expect(r.exitCode == 0, "\(r.err)")
        #expect(r.out.isEmpty)
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let raw = try String(contentsOfFile: file, encoding: .utf8)
        #expect(raw.hasPrefix("BEGIN:VCALENDAR\r\n"))
        for line in raw.components(separatedBy: "\r\n") { #expect(line.utf8.count <= 75) }
        #expect(!raw.unicodeScalars.contains { $0.value == 0x1b })

        let parsed = try await Self.parse(file)
        #expect(parsed["version"] as? String == "7.3.0")
        #expect(parsed["timezones"] as? [String] == [Self.ny])
        #expect((parsed["vtimezoneMismatches"] as? [Any])?.isEmpty == true, "\(parsed["vtimezoneMismatches"] ?? "")")
        let events = Self.events(parsed)
        let alarms = events.filter { ($0["uid"] as? String)?.hasPrefix("alarm-") == true }
        // 06:30 daily from Oct 30 to Nov 5 (EDT, then EST from Nov 1), 07:00 once on Oct 30; the off alarm never.
        let daily = alarms.filter { ($0["uid"] as? String)?.hasPrefix("alarm-1-") == true }.compactMap { $0["dtstart"] as? String }
        #expect(daily == ["2026-10-30T10:30:00+00:00", "2026-10-31T10:30:00+00:00", "2026-11-01T11:30:00+00:00",
                          "2026-11-02T11:30:00+00:00", "2026-11-03T11:30:00+00:00", "2026-11-04T11:30:00+00:00",
                          "2026-11-05T11:30:00+00:00"])
        #expect(alarms.count == 8)
        let first = try #require(alarms.first)
        #expect(first["dtstartTzid"] as? String == Self.ny && first["dtendTzid"] as? String == Self.ny)
        #expect(first["dtend"] as? String == "2026-10-30T10:40:00+00:00")
        #expect((first["summary"] as? String)?.hasPrefix(#"Alarm: Work, gym; \ é\x1b[31m"#) == true, "\(first["summary"] ?? "")")
        let alarm = try #require((first["alarms"] as? [[String: Any]])?.first)
        #expect(alarm["action"] as? String == "DISPLAY" && alarm["trigger"] as? Int == 0)
        // The planned window of tonight (Dose 1 at bedtime 22:30 EDT): 01:00 to 02:30 EDT.
        let window = try #require(events.first { ($0["uid"] as? String)?.hasPrefix("dose-window-2026-10-29-") == true })
        #expect(window["dtstart"] as? String == "2026-10-30T05:00:00+00:00" && window["dtend"] as? String == "2026-10-30T06:30:00+00:00")
        #expect((window["alarms"] as? [[String: Any]])?.compactMap { $0["trigger"] as? Int } == [-9000, 900])
        // UIDs: unique, and the same in a second export.
        let uids = events.compactMap { $0["uid"] as? String }
        #expect(Set(uids).count == uids.count)
        let again = try await cli.dose(["export", "ics", "--days", "7"], at: at)
        #expect(again.exitCode == 0)
        let second = cli.home.appendingPathComponent("again.ics").path
        try again.out.write(toFile: second, atomically: true, encoding: .utf8)
        #expect(Self.events(try await Self.parse(second)).compactMap { $0["uid"] as? String } == uids)
    }

    @Test("export ics on a fall-back night: a window opening in the repeated hour is written in UTC, so it is not an hour early")
    func fallBack() async throws {
        let cli = try CLI()
        #expect(try await cli.dose(["dose", "take"], at: "2026-10-31 23:45:00").exitCode == 0)
        let r = try await cli.dose(["export", "ics", "--days", "1"], at: "2026-11-01 00:30:00")
        #expect(r.exitCode == 0, "\(r.err)")
        let file = cli.home.appendingPathComponent("night.ics").path
        try r.out.write(toFile: file, atomically: true, encoding: .utf8)
        let window = try #require(Self.events(try await Self.parse(file)).first)
        #expect(window["summary"] as? String == "Dose 2 window")
        // 23:45 EDT + 150 min = 01:15 EST (the second 01:15); + 240 min = 02:45 EST.
        #expect(window["dtstart"] as? String == "2026-11-01T06:15:00+00:00")
        #expect(window["dtstartTzid"] is NSNull || window["dtstartTzid"] == nil)
        #expect(window["dtend"] as? String == "2026-11-01T07:45:00+00:00" && window["dtendTzid"] as? String == Self.ny)
        #expect((window["alarms"] as? [[String: Any]])?.compactMap { $0["trigger"] as? Int } == [0, 900, 4500])
    }

    @Test("export ics in Lord Howe's half-hour DST and in a POSIX TZ string: the VTIMEZONE agrees with zoneinfo, times stay 06:30 local")
    func otherZones() async throws {
        // Lord Howe: +11:00 until 2026-04-05 02:00, then +10:30.
        let cli = try CLI()
        let zone = "Australia/Lord_Howe"
        #expect(try await cli.dose(["alarm", "add", "06:30", "--repeat", "daily"], at: "2026-04-03 12:00:00", tz: zone).exitCode == 0)
        let r = try await cli.dose(["export", "ics", "--days", "3"], at: "2026-04-03 12:00:00", tz: zone)
        #expect(r.exitCode == 0, "\(r.err)")
        let file = cli.home.appendingPathComponent("lh.ics").path
        try r.out.write(toFile: file, atomically: true, encoding: .utf8)
        let parsed = try await Self.parse(file)
        #expect(parsed["timezones"] as? [String] == [zone])
        #expect((parsed["vtimezoneMismatches"] as? [Any])?.isEmpty == true, "\(parsed["vtimezoneMismatches"] ?? "")")
        #expect(Self.events(parsed).compactMap { $0["dtstart"] as? String } == ["2026-04-03T19:30:00+00:00", "2026-04-04T20:00:00+00:00", "2026-04-05T20:00:00+00:00"])
        #expect(r.out.contains("TZOFFSETFROM:+1100\r\nTZOFFSETTO:+1030\r\n"))

        // A POSIX TZ string: Foundation alone would take it for UTC; the system's zone is a fixed +03:30.
        let posix = try CLI()
        let tz = "<+0330>-3:30"
        #expect(try await posix.dose(["alarm", "add", "06:30", "--repeat", "daily"], at: "2026-04-03 12:00:00", tz: tz).exitCode == 0)
        let p = try await posix.dose(["export", "ics", "--days", "1"], at: "2026-04-03 12:00:00", tz: tz)
        #expect(p.exitCode == 0, "\(p.err)")
        let posixFile = posix.home.appendingPathComponent("posix.ics").path
        try p.out.write(toFile: posixFile, atomically: true, encoding: .utf8)
        let event = try #require(Self.events(try await Self.parse(posixFile)).first)
        #expect(event["dtstart"] as? String == "2026-04-04T03:00:00+00:00", "\(event)")
        #expect((event["dtstartTzid"] as? String)?.hasPrefix("GMT") == true, "\(event)")
    }

    @Test("export ics --days: 0, negative, too many, not a number → usage error 64 in one line; --output keeps the file rules")
    func icsUsage() async throws {
        let cli = try CLI()
        for bad in [["--days", "0"], ["--days=-1"], ["--days", "367"], ["--days", "abc"], ["--days", "99999999999999999999"], ["--days", "1.5"], ["--days", "٣"]] {
            let r = try await cli.run(["export", "ics"] + bad)
            #expect(r.exitCode == 64, "\(bad): \(r.err)")
            #expect(r.err.hasPrefix("dosetap: ") && r.err.split(separator: "\n").count == 1, "\(r.err)")
            #expect(r.out.isEmpty)
        }
        let file = cli.home.appendingPathComponent("cal.ics").path
        #expect(try await cli.run(["export", "ics", "--output", file]).exitCode == 0)
        let refused = try await cli.run(["export", "ics", "--output", file])
        #expect(refused.exitCode == 1 && refused.err.contains("--force"))
        #expect(try await cli.run(["export", "ics", "--output", file, "--force"]).exitCode == 0)
        let database = cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path
        _ = try await cli.run(["alarm", "add", "06:30"])
        let overDatabase = try await cli.run(["export", "ics", "--output", database, "--force"])
        #expect(overDatabase.exitCode == 1 && overDatabase.err.contains("database"))
        let overSecret = try await cli.run(["export", "ics", "--output", cli.dataDirectory.appendingPathComponent("install-secret").path, "--force"])
        #expect(overSecret.exitCode == 1, "\(overSecret.err)")
    }

    // MARK: logs export

    /// A fake `journalctl` in the private home: records its arguments, prints `lines`.
    func fakeJournal(_ cli: CLI, _ lines: [[String: Any]], exitStatus: Int = 0) throws -> [String: String] {
        let bin = cli.home.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let fixture = cli.home.appendingPathComponent("journal.json")
        let text = try lines.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(separator: "\n") + "\n"
        try text.write(to: fixture, atomically: true, encoding: .utf8)
        let script = """
        #!/bin/sh
        printf '%s\\n' "$*" > "\(cli.home.path)/journalctl-args"
        cat "\(fixture.path)"
        [ \(exitStatus) -eq 0 ] || echo "Failed to open journal: Permission denied" >&2
        exit \(exitStatus)
        """
        let path = bin.appendingPathComponent("journalctl")
        try script.write(to: path, atomically: true, encoding: .utf8)
        chmod(path.path, 0o755)
        return ["PATH": bin.path + ":/usr/local/bin:/usr/bin:/bin"]
    }

    static let now = "2026-11-24 08:00:00"
    static let nowEpoch: Int64 = 1_795_478_400 + 8 * 3600  // 2026-11-24T08:00:00Z
    static func micros(_ secondsBefore: Int64) -> String { String((nowEpoch - secondsBefore) * 1_000_000) }

    @Test("logs export: the journal's entries anonymised (addresses, names, keys, amounts), hostile text defused, 90 days at most")
    func logsFromJournal() async throws {
        let cli = try CLI()
        let add = try await cli.run(["button", "add", "A4:C1:38:8D:18:B2", "--kind", "bthome", "--name", "Bedside",
                                     "--bindkey", "231d39c1d7cc1ab1aee224f7ec1ad4c4"], fakeTime: Self.now)
        #expect(add.exitCode == 0, "\(add.err)")
        let env = try fakeJournal(cli, [
            ["__REALTIME_TIMESTAMP": Self.micros(3600), "PRIORITY": "6",
             "MESSAGE": "2026-11-24T07:00:00+0000 info dosetap.agent: address=A4:C1:38:8D:18:B2 button=Bedside [DoseTapAgent] press from Bedside (a4-c1-38-8d-18-b2) at /org/bluez/hci0/dev_A4_C1_38_8D_18_B2"],
            ["__REALTIME_TIMESTAMP": Self.micros(1800), "PRIORITY": "6",
             "MESSAGE": #"2026-11-24T07:30:00+0000 notice dosetap.agent: bindkey=231d39c1d7cc1ab1aee224f7ec1ad4c4 [DoseTapAgent] settings {"dose1Grams":4.5,"dose2Grams":3.75} key 231D39C1D7CC1AB1AEE224F7EC1AD4C4 took 4.5 g"#],
            ["__REALTIME_TIMESTAMP": Self.micros(900), "PRIORITY": "4", "MESSAGE": "=cmd|' /C calc'!A0"],
            ["__REALTIME_TIMESTAMP": Self.micros(600), "PRIORITY": "3",
             "MESSAGE": "name \"quoted\", with\u{1b}[31m escape\r and Ａ４：Ｃ１：３８：８Ｄ：１８：Ｂ２ \u{202e}evil"],
            ["__REALTIME_TIMESTAMP": Self.micros(100 * 86_400), "PRIORITY": "6", "MESSAGE": "older than ninety days"],
        ])
        let file = cli.home.appendingPathComponent("log.csv").path
        let r = try await cli.run(["logs", "export", "--output", file], fakeTime: Self.now, env: env)
        #expect(r.exitCode == 0, "\(r.err)")
        let args = try String(contentsOfFile: cli.home.appendingPathComponent("journalctl-args").path, encoding: .utf8)
        #expect(args == "--user -u dosetap.service -o json --since @\(Self.nowEpoch - 90 * 86_400) --no-pager -q\n")
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let csv = try String(contentsOfFile: file, encoding: .utf8)
        let rows = csv.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(rows.first == "time,level,message,metadata")
        #expect(rows.count == 5, "\(csv)")
        for secret in ["Bedside", "A4:C1", "a4-c1", "A4_C1", "231d39", "231D39", "4.5", "3.75", "Ａ４", "older than", "\u{1b}", "\u{202e}", "\r,"] {
            #expect(!csv.contains(secret), "\(secret.debugDescription) in \(csv)")
        }
        #expect(rows[1].hasPrefix("2026-11-24T07:00:00Z,info,press from button-"))
        #expect(rows[1].contains("address=bt-") && rows[1].contains("button=button-"))
        #expect(rows[3] == "2026-11-24T07:45:00Z,warning,'=cmd|' /C calc'!A0,")
        #expect(rows[4].contains(#""name ""quoted"", with\x1b[31m escape\r and bt-"#))
        // The same address is the same hash everywhere: in the metadata, the text, the D-Bus path and the look-alike.
        let hashes = Set(csv.matches(of: #/bt-[0-9a-f]{8}/#).map { String($0.output) })
        #expect(hashes.count == 1, "\(hashes)")
    }

    @Test("logs export --system reads the system journal; a failing journalctl is exit 1 with its reason")
    func logsJournalChoices() async throws {
        let cli = try CLI()
        let env = try fakeJournal(cli, [])
        let r = try await cli.run(["logs", "export", "--system", "--since", "7d"], fakeTime: Self.now, env: env)
        #expect(r.exitCode == 0, "\(r.err)")
        #expect(r.out == "time,level,message,metadata\r\n")
        let args = try String(contentsOfFile: cli.home.appendingPathComponent("journalctl-args").path, encoding: .utf8)
        #expect(args == "-u dosetap.service -o json --since @\(Self.nowEpoch - 7 * 86_400) --no-pager -q\n")
        let failing = try fakeJournal(cli, [], exitStatus: 1)
        let f = try await cli.run(["logs", "export"], fakeTime: Self.now, env: failing)
        #expect(f.exitCode == 1 && f.err.contains("Permission denied") && f.err.split(separator: "\n").count == 1, "\(f.err)")
        // No journalctl at all: one line pointing at --file.
        let none = try await cli.run(["logs", "export"], fakeTime: Self.now, env: ["PATH": cli.home.appendingPathComponent("nothing").path])
        #expect(none.exitCode == 1 && none.err.contains("--file"), "\(none.err)")
    }

    @Test("logs export --file: a captured log; --since cuts older lines; lines without a time are left out and counted")
    func logsFromFile() async throws {
        let cli = try CLI()
        let log = cli.home.appendingPathComponent("agent.log")
        try """
        2026-11-10T07:00:00+0000 info dosetap.agent: [DoseTapAgent] two weeks ago
        2026-11-23T07:00:00+0100 info dosetap.agent: remote=11:22:33:44:55:66 [DoseTapAgent] HID remote disconnected
        Fatal error: a crash report line
        2026-11-24T07:59:00+0000 error dosetap.agent: [DoseTapAgent] @SUM(A1) 2.25 grams

        """.write(to: log, atomically: true, encoding: .utf8)
        let r = try await cli.run(["logs", "export", "--file", log.path, "--since", "7d"], fakeTime: Self.now)
        #expect(r.exitCode == 0, "\(r.err)")
        let rows = r.out.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(rows.count == 3, "\(r.out)")
        #expect(rows[1].hasPrefix("2026-11-23T06:00:00Z,info,HID remote disconnected,remote=bt-"))
        #expect(rows[2] == "2026-11-24T07:59:00Z,error,'@SUM(A1) [amount removed],")
        #expect(r.err.contains("1 line without a readable time left out"), "\(r.err)")
        let missing = try await cli.run(["logs", "export", "--file", cli.home.appendingPathComponent("none.log").path])
        #expect(missing.exitCode == 1 && missing.err.contains("No such file"), "\(missing.err)")
    }

    @Test("logs export usage errors are exit 64: --since beyond 90 days, zero, not a duration; --file with --system")
    func logsUsage() async throws {
        let cli = try CLI()
        for bad in [["--since", "91d"], ["--since", "0d"], ["--since", "7"], ["--since", "1y"], ["--since", "2161h"],
                    ["--file", "x.log", "--system"]] {
            let r = try await cli.run(["logs", "export"] + bad)
            #expect(r.exitCode == 64, "\(bad): \(r.err)")
            #expect(r.err.hasPrefix("dosetap: ") && r.err.split(separator: "\n").count == 1, "\(r.err)")
        }
        let refused = try await cli.run(["logs", "export", "--since", "120d"])
        #expect(refused.err.contains("90 days"))
    }
}
