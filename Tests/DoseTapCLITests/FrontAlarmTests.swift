import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import PropertyBased
import Subprocess
import SystemPackage
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The one-shot front answers `alarm list --json` and `status` itself when it can read everything the full program
/// reads (#29): the alarms, their rings, the battery (sysfs, its history, the night's learning, UPower's power-off
/// level) and the running agent's findings (whether it can wake the machine — asked again of the wake helper —
/// and play the sound). Whatever it is given, the bytes on both streams and the exit status are the full program's.
@Suite("dosetap-front: the alarm screen and the status bar as the full program shows them")
struct FrontAlarmTests {
    /// The running agent's records for the command line, written and held locked by this process as the agent holds
    /// them (`AgentStatusFile`): trusted only while locked.
    final class AgentRecords {
        private var descriptors: [Int32] = []

        init(_ directory: URL, wake: String?, sound: String?, store: String? = nil, locked: Bool = true) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (name, text) in [("wake-status.json", wake), ("sound-status.json", sound), ("store-status.json", store)] {
                let path = directory.appendingPathComponent(name).path
                unlink(path)
                guard let text else { continue }
                let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw FixtureError("cannot open \(path)") }
                if locked { flock(fd, LOCK_EX) }
                _ = Array(text.utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                descriptors.append(fd)
            }
        }

        deinit { for fd in descriptors { close(fd) } }
    }

    static let canWake = #"{"pid":1,"checkedAt":"2026-11-29T20:00:00Z","method":"alarmTimer"}"#
    static let cannotWake = #"{"pid":1,"checkedAt":"2026-11-29T20:00:00Z","method":null,"reason":"this process lacks CAP_WAKE_ALARM (Operation not permitted), and /sys/class/rtc/rtc0/wakealarm is not writable (Permission denied)","fix":"install the wake helper: sudo make install-wake"}"#
    static let canPlay = #"{"pid":1,"checkedAt":"2026-11-29T20:00:00Z","canPlay":true}"#
    static let cannotPlay = #"{"pid":1,"checkedAt":"2026-11-29T20:00:00Z","canPlay":false,"reason":"it has no sound card \u001b[31m","fix":"connect a speaker"}"#

    /// Both programs on the same line, data, machine (a umockdev scenario) and frozen instant.
    func compare(_ args: [String], cli: CLI, scenario: String? = nil, at fakeTime: String, tz: String = "America/New_York",
                 env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        // In the private home: a word taken for a relative --data-dir lands there, not in the checkout.
        let full = try await cli.run(args, scenario: scenario, fakeTime: fakeTime, tz: tz, env: env, inHome: true)
        let front = try await cli.run(args, scenario: scenario, fakeTime: fakeTime, tz: tz, env: env, binary: FrontTests.front, inHome: true)
        let shown = args.map { $0.debugDescription }.joined(separator: " ") + " [\(scenario ?? "no supplies")] at \(fakeTime)"
        #expect(front.out == full.out, "\(shown): stdout", sourceLocation: sourceLocation)
        #expect(front.err == full.err, "\(shown): stderr", sourceLocation: sourceLocation)
        #expect(front.exitCode == full.exitCode, "\(shown): exit \(String(describing: front.exitCode)) against \(String(describing: full.exitCode))",
                sourceLocation: sourceLocation)
    }

    /// Whether the front answered without the full program: a copy of it alone (nothing beside it to run).
    func answersAlone(_ args: [String], cli: CLI, scenario: String? = nil, at fakeTime: String, tz: String = "America/New_York",
                      env: [String: String] = [:]) async throws -> Bool {
        let alone = cli.home.appendingPathComponent("alone")
        let copy = alone.appendingPathComponent("dosetap").path
        if !FileManager.default.fileExists(atPath: copy) {
            try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: FrontTests.front, toPath: copy)
        }
        let r = try await cli.run(args, scenario: scenario, fakeTime: fakeTime, tz: tz, env: env, binary: copy)
        return r.exitCode != 127
    }

    static let lines: [[String]] = [
        ["alarm", "list", "--json"],
        ["status", "--format", "waybar"],
        ["status", "--format=i3blocks"],
        ["status", "--format", "json"],
        ["status"],
        ["status", "--format", "text"],
    ]

    static let otherLines: [[String]] = [
        ["alarm", "list"],
        ["alarm", "list", "--json", "--json"],
        ["alarm", "list", "--jsn"],
        ["alarm", "list", "--json", "extra"],
        ["alarm", "lis", "--json"],
        ["status", "--format", "xml"],
        ["status", "--format", "waybar", "--format", "json"],
        ["status", "--format", "WAYBAR"],
        ["status", "--format"],
        ["status", "--follow"],
        ["status", "--format", "waybar", "--help"],
        ["status", "--format", "wаybar"],  // a Cyrillic a
        ["status", "--data-dir="],
    ]

    /// A home with three alarms (one off), Dose 1 at 21:00 on 29 November, and what `extra` adds.
    func household(_ cli: CLI) async throws {
        for args in [["alarm", "add", "06:30", "--label", "work", "--repeat", "mon,tue,wed,thu,fri"], ["alarm", "add", "07:15", "--off"],
                     ["alarm", "add", "05:30", "--label", "early \u{1B}[31m", "--repeat", "daily"]] {
            let r = try await cli.run(args, fakeTime: "2026-11-29 20:00:00", tz: "America/New_York")
            #expect(r.exitCode == 0, "\(args): \(r.err)")
        }
        let dose = try await cli.dose(["dose", "take"], at: "2026-11-29 21:00:00")
        #expect(dose.exitCode == 0, "\(dose.err)")
    }

    @Test("with the running agent's findings, on every recorded battery, through the night: the same bytes, and the front's own")
    func throughTheNight() async throws {
        let cli = try CLI()
        try await household(cli)
        let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
        defer { withExtendedLifetime(records) {} }
        for scenario in [nil, "energy-discharging", "ac-online", "capacity-only-ups", "garbage-values", "two-batteries"] as [String?] {
            for at in ["2026-11-29 20:59:00", "2026-11-29 23:00:00", "2026-11-29 23:45:00", "2026-11-30 01:05:00", "2026-11-30 06:29:00"] {
                for line in Self.lines { try await compare(line, cli: cli, scenario: scenario, at: at) }
            }
        }
        for line in Self.otherLines { try await compare(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00") }
        // The front answered the common lines itself.
        for line in Self.lines {
            #expect(try await answersAlone(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00"), "\(line)")
        }
        #expect(try await answersAlone(["alarm", "list", "--json", "--data-dir", cli.dataDirectory.path], cli: cli, at: "2026-11-29 23:00:00"))
    }

    /// #51: the agent's word that it cannot write its data, padded with blanks as `StoreHealth` writes it in place.
    static let cannotWrite = #"{"pid":1,"canWrite":false,"problem":"full","since":"2026-11-29T20:00:00Z","message":"DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on /data."}"#
        + String(repeating: " ", count: 600) + "\n"

    @Test("the running agent cannot write its data: the front and the full program show the same sentence; unlocked, neither does")
    func storeTrouble() async throws {
        let cli = try CLI()
        try await household(cli)
        let sentence = "DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on /data."
        do {
            let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay, store: Self.cannotWrite)
            defer { withExtendedLifetime(records) {} }
            for line in [["alarm", "list", "--json"], ["alarm", "list"]] {
                try await compare(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00")
            }
            let full = try await cli.run(["alarm", "list", "--json"], scenario: "energy-discharging", fakeTime: "2026-11-29 23:00:00",
                                         tz: "America/New_York")
            #expect(full.err.contains(sentence), "\(full.err)")
            #expect(try await answersAlone(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00"))
        }
        // A record nobody holds is a dead agent's: not shown.
        let stale = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay, store: Self.cannotWrite, locked: false)
        defer { withExtendedLifetime(stale) {} }
        let after = try await cli.run(["alarm", "list", "--json"], scenario: "energy-discharging", fakeTime: "2026-11-29 23:00:00",
                                      tz: "America/New_York")
        #expect(!after.err.contains("cannot write its data"), "\(after.err)")
    }

    @Test("with the real agent running: its records read as the full program reads them, and the front answers itself")
    func realAgent() async throws {
        let cli = try CLI()
        try await household(cli)
        let (exe, argv) = cli.command(["agent"], scenario: "energy-discharging", fakeTime: nil)
        let status = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(tz: "America/New_York"),
                                              input: .none, output: .discarded, error: .discarded) { execution in
            // Ready when it holds both records (AgentRecord reads a record only while its agent holds it locked).
            var ready = false
            for _ in 0..<300 {
                if AgentRecord.wake(dataDirectory: cli.dataDirectory.path) != nil, AgentRecord.sound(dataDirectory: cli.dataDirectory.path) != nil {
                    ready = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(ready, "the agent recorded nothing for the command line within 30 s")
            for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00") }
            for line in Self.lines {
                #expect(try await answersAlone(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00"), "\(line)")
            }
            try execution.send(signal: .terminate)
        }.terminationStatus
        #expect(status == .exited(0), "the agent: \(status)")
        // The agent gone, its records are a dead agent's: the full program checks the machine itself, and so says both.
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00") }
    }

    @Test("the agent's findings: a warning for each, none, a record no agent holds, a damaged record — the full program's lines")
    func findings() async throws {
        let cli = try CLI()
        try await household(cli)
        let at = "2026-11-29 23:00:00"
        let cases: [(wake: String?, sound: String?, locked: Bool, alone: Bool)] = [
            (Self.cannotWake, Self.cannotPlay, true, true),
            (Self.canWake, Self.cannotPlay, true, true),
            (Self.cannotWake, Self.canPlay, true, true),
            (#"{"method":"rtc","rtcPath":"/sys/class/rtc/rtc0/wakealarm"}"#, Self.canPlay, true, true),
            // No agent holds them: the full program checks the machine itself (the front hands over).
            (Self.canWake, Self.canPlay, false, false),
            (nil, Self.canPlay, true, false),
            (Self.canWake, nil, true, false),
            // Not what the agent writes: counts as none.
            (#"{"method":"sonar"}"#, Self.canPlay, true, false),
            (Self.canWake, #"{"canPlay":1}"#, true, false),
            (Self.canWake + ",", Self.canPlay, true, false),
            (#"{"method":null,"reason":"x\u0000y\u001b[2J","fix":"\u202Eevil"}"#, Self.canPlay, true, true),
        ]
        for (wake, sound, locked, alone) in cases {
            let records = try AgentRecords(cli.dataDirectory, wake: wake, sound: sound, locked: locked)
            for line in Self.lines + [["alarm", "list", "--json"]] {
                try await compare(line, cli: cli, scenario: "energy-discharging", at: at)
            }
            #expect(try await answersAlone(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: at) == alone,
                    "\(wake ?? "no wake record") / \(sound ?? "no sound record") locked \(locked)")
            withExtendedLifetime(records) {}
        }
        // With no alarm on, nothing needs the agent: the front answers without its records.
        _ = try await cli.run(["alarm", "off", "1"], fakeTime: at, tz: "America/New_York")
        _ = try await cli.run(["alarm", "off", "3"], fakeTime: at, tz: "America/New_York")
        try await compare(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: at)
        #expect(try await answersAlone(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: at))
    }

    @Test("the agent wakes the machine through the wake helper (the real one): asked again — answering, refusing, gone")
    func wakeHelper() async throws {
        let cli = try CLI()
        try await household(cli)
        let at = "2026-11-29 23:00:00"
        let (helper, socket, users) = try cli.startWakeHelper()
        defer { if helper.isRunning { helper.terminate() } }
        let records = try AgentRecords(cli.dataDirectory, wake: #"{"pid":1,"method":"helper","helperSocket":"\#(socket)"}"#, sound: Self.canPlay)
        defer { withExtendedLifetime(records) {} }
        // Refused (this user is not one logind tracks, as far as this helper knows; root it always serves): the full
        // program checks for itself.
        try await compare(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: at)
        #expect(try await answersAlone(["alarm", "list", "--json"], cli: cli, scenario: "energy-discharging", at: at) == (getuid() == 0))
        // Answering: no warning, and the front's own answer.
        try Data().write(to: users.appendingPathComponent(String(getuid())))
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        #expect(try await answersAlone(["status", "--format", "waybar"], cli: cli, scenario: "energy-discharging", at: at))
        // Gone since the agent looked.
        helper.terminate()
        helper.waitUntilExit()
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
    }

    @Test("what the store holds: a drain from the history, a learned night, a missed ring, rows that cannot be read, hostile values")
    func storedData() async throws {
        let cli = try CLI()
        try await household(cli)
        let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
        defer { withExtendedLifetime(records) {} }
        let at = "2026-11-29 23:00:00"
        // 23:00 New York is 04:00Z on the 30th: 1_796_004_000. Forty minutes of samples, a point lost every ten.
        let now = 1_796_011_200.0
        for i in 0..<40 {
            let t = now - Double(40 - i) * 60
            _ = try await cli.sqlite("INSERT INTO battery_sample (at, level, on_ac, status) VALUES (\(t), \(60 - Double(i) / 10), 0, 'discharging')")
        }
        // A battery with no hardware rate: the drain comes from the history.
        for line in Self.lines { try await compare(line, cli: cli, scenario: "capacity-only-ups", at: at) }
        // Hostile samples: text, NaN-ish, a blob, a huge number.
        _ = try await cli.sqlite("INSERT INTO battery_sample (at, level, on_ac, status) VALUES ('\(now - 30)', 50, 0, 'discharging'), (\(now - 20), 'x', 0, 'discharging'), (\(now - 10), X'00', 0, 'weird'), (\(now - 5), 1e308, 1.5, 'charging')")
        for line in Self.lines { try await compare(line, cli: cli, scenario: "capacity-only-ups", at: at) }
        // A learned night: seven evenings asleep at 23:30, a learned drain asleep.
        var learning = NightLearning()
        for day in 0..<8 {
            let evening = Date(timeIntervalSince1970: 1_795_305_600 + Double(day) * 86_400)  // 2026-11-21 23:00 EST + days
            learning.slept(SleepEpisode(start: evening.addingTimeInterval(1800), end: evening.addingTimeInterval(1800 + 7 * 3600),
                                        asleepSeconds: 7 * 3600, levelBefore: 80, levelAfter: 74), in: TimeZone(identifier: "America/New_York")!)
        }
        let text = String(decoding: try JSONEncoder().encode(learning), as: UTF8.self).replacingOccurrences(of: "'", with: "''")
        _ = try await cli.sqlite("INSERT INTO setting (key, value) VALUES ('night-learning', '\(text)') ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        for line in Self.lines { try await compare(line, cli: cli, scenario: "capacity-only-ups", at: at) }
        // A damaged learning: nothing learned, in both.
        _ = try await cli.sqlite("UPDATE setting SET value = '{\"sleepDrain\":' WHERE key = 'night-learning'")
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        // A missed ring, a ring that cannot be read, an alarm row written by hand.
        _ = try await cli.sqlite("INSERT INTO alarm_ring (alarm_id, kind, due_at, ended_at, outcome, ended_by) VALUES (1, 'scheduled', 1795951800, 1795952000, 'missed', 'late')")
        _ = try await cli.sqlite("INSERT INTO alarm_ring (alarm_id, kind, due_at, outcome) VALUES (3, 'scheduled', 'soon', 'missed')")
        _ = try await cli.sqlite("INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('25:00', 'bad', 'daily', 1, 0), ('06:00', 'x', 'sometimes', 1, 0), ('06:00', '', 'daily', 2, 0), ('06:00', 'ok', 'daily', 1, 0)")
        _ = try await cli.sqlite("UPDATE alarm SET haptics = 'thunder' WHERE id = 2")
        for line in Self.lines + Self.otherLines.prefix(1) { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        // UPower powers the machine off at 10 %.
        try cli.writeUPower("[UPower]\nPercentageAction=10\nCriticalPowerAction=PowerOff\n", dropIns: ["60-x.conf": "[UPower]\nPercentageAction=12\n", "bad.conf": "x"])
        for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
    }

    @Test("the data folder and the database: none yet, read-only, older, not one — the full program's answer")
    func troubledData() async throws {
        let at = "2026-11-29 23:00:00"
        do {
            // No data at all: an empty list; `status` would create the database (the full program's to do).
            let cli = try CLI()
            for line in Self.lines { try await compare(line, cli: cli, at: at) }
            #expect(try await answersAlone(["alarm", "list", "--json"], cli: cli, at: at))
        }
        do {
            let cli = try CLI()
            try await household(cli)
            let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
            defer { withExtendedLifetime(records) {} }
            // An older schema: the full program upgrades it first.
            _ = try await cli.sqlite("DELETE FROM grdb_migrations WHERE identifier = (SELECT identifier FROM grdb_migrations ORDER BY rowid DESC LIMIT 1)")
            for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        }
        do {
            let cli = try CLI()
            try await household(cli)
            let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
            defer { withExtendedLifetime(records) {} }
            // The database read-only for this user: `status` cannot open it for writing (no reminder nudge there).
            if getuid() != 0 {
                chmod(cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path, 0o400)
                for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
                chmod(cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path, 0o600)
            }
            // Not a database.
            try Data("not a database".utf8).write(to: cli.dataDirectory.appendingPathComponent("dosetap.sqlite"))
            for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
        }
    }

    @Test("the nights clocks change: a skipped 02:30 rings at 03:00, a repeated 01:30 once — the same next alarm in both")
    func clockChanges() async throws {
        let cli = try CLI()
        for args in [["alarm", "add", "02:30", "--repeat", "daily"], ["alarm", "add", "01:30", "--repeat", "sun"], ["alarm", "add", "00:00"]] {
            _ = try await cli.run(args, fakeTime: "2026-02-01 12:00:00", tz: "America/New_York")
        }
        let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
        defer { withExtendedLifetime(records) {} }
        for at in ["2026-03-07 23:00:00", "2026-03-08 01:59:00", "2026-03-08 03:00:00", "2026-10-31 23:00:00", "2026-11-01 01:20:00",
                   "2026-11-01 01:45:00"] {
            for line in Self.lines { try await compare(line, cli: cli, scenario: "energy-discharging", at: at) }
            try await compare(["alarm", "list", "--json"], cli: cli, at: at, tz: "Australia/Lord_Howe")
            try await compare(["alarm", "list", "--json"], cli: cli, at: at, tz: "EST5EDT,M3.2.0,M11.1.0")
        }
    }

    @Test("any arrangement of the words: the same output and exit status")
    func anyArrangement() async throws {
        let cli = try CLI()
        try await household(cli)
        let records = try AgentRecords(cli.dataDirectory, wake: Self.canWake, sound: Self.canPlay)
        defer { withExtendedLifetime(records) {} }
        let words = ["--json", "--format", "waybar", "json", "i3blocks", "--data-dir", cli.dataDirectory.path, "--format=text", "x", "--", "-h", "list"]
        await propertyCheck(count: 25, input: Gen.int(in: 0...1), Gen.int(in: 0...(words.count - 1)).array(of: 0...5)) { command, picks in
            let head = command == 0 ? ["alarm", "list"] : ["status"]
            try await compare(head + picks.map { words[$0] }, cli: cli, scenario: "energy-discharging", at: "2026-11-29 23:00:00")
        }
    }
}
