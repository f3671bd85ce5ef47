import DoseTapTesting
import Foundation
import PropertyBased
import Subprocess
import SystemPackage
import Testing

/// The installed `dosetap` is the one-shot front (#29, Sources/dosetap-front): it answers the frequent read-only
/// commands itself and runs the full program for everything else. Whatever it is given, what a person or a
/// script sees — standard output, standard error, the exit status — must be what the full program gives.
@Suite("dosetap-front: the same answers as the full program")
struct FrontTests {
    /// The front built beside the full program (`.build/debug/dosetap-front`), or DOSETAP_FRONT_BIN.
    static var front: String {
        ProcessInfo.processInfo.environment["DOSETAP_FRONT_BIN"]
            ?? URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("dosetap-front").path
    }

    /// Both programs on the same arguments, in the same private home, at the same frozen instant.
    func compare(_ args: [String], cli: CLI, fakeTime: String? = nil, tz: String = "UTC",
                 sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let full = try await cli.run(args, fakeTime: fakeTime, tz: tz)
        let front = try await cli.run(args, fakeTime: fakeTime, tz: tz, binary: Self.front)
        let shown = args.map { $0.debugDescription }.joined(separator: " ")
        #expect(front.out == full.out, "\(shown): stdout", sourceLocation: sourceLocation)
        #expect(front.err == full.err, "\(shown): stderr", sourceLocation: sourceLocation)
        #expect(front.exitCode == full.exitCode, "\(shown): exit \(String(describing: front.exitCode)) against \(String(describing: full.exitCode))",
                sourceLocation: sourceLocation)
    }

    static let predictLines: [[String]] = [
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--json", "--hours", "7", "--drain", "6", "--level", "55"],
        ["predict", "--level=55", "--drain=6.5", "--hours=7.25", "--json", "--charging"],
        ["predict", "--level", "0", "--drain", "0", "--hours", "0", "--json"],
        ["predict", "--level", "100", "--drain", "0", "--hours", "1000", "--json"],
        ["predict", "--level", "21", "--drain", "1", "--hours", "0", "--json"],      // just above the warning line
        ["predict", "--level", "20", "--drain", "0", "--hours", "0", "--json"],      // on it
        ["predict", "--level", "5", "--drain", "0", "--hours", "0", "--json"],       // critical
        ["predict", "--level", "55", "--drain", "6", "--hours", "7"],                // text: the full program's
        ["predict", "--level", "-5", "--drain", "6", "--hours", "7", "--json"],      // out of range
        ["predict", "--level", "100.5", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "55", "--drain", "-1", "--hours", "7", "--json"],
        ["predict", "--level", "nan", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "inf", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "1e3", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "0x10", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "５５", "--drain", "6", "--hours", "7", "--json"],     // full-width digits
        ["predict", "--level", "55", "--drain", "6", "--hours", "1" + String(repeating: "0", count: 40), "--json"],
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--jsοn"],      // a Greek omicron
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json", "--json"],
        ["predict", "--level", "55", "--level", "56", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "55", "--drain", "6", "--json"],                      // no --hours
        ["predict", "--level", "55", "--drain", "6", "--hours", "--json"],           // a value missing
        ["predict", "--level=", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json=true"],
        ["predict", "--level", "55\u{1B}[31m", "--drain", "6", "--hours", "7", "--json"],
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json", "extra"],
        ["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json", "--"],
        ["predict", "--help"],
        ["predict", "-h"],
        ["predict"],
        ["--version"],
        ["--help"],
        [],
        ["no-such-command"],
        ["no-such-\u{1B}[31m", "ü", "", "--json"],                                     // handed over before the runtime starts
        ["dose", "stat"],
        ["dosestatus", "--json"],
        ["dose", "status", "--json"],
        ["dose", "status"],
        ["alarm", "list", "--json"],
    ]

    @Test("predict and the commands the front passes on: every line as the full program answers it",
          arguments: 0..<predictLines.count)
    func sameAnswer(index: Int) async throws {
        try await compare(Self.predictLines[index], cli: try CLI())
    }

    @Test("any arrangement of predict's words: the same output and exit status")
    func anyArrangement() async throws {
        let cli = try CLI()
        let words = ["--level", "--drain", "--hours", "--json", "--charging", "55", "6", "7", "-3", "0", "100", "--level=9",
                     "--hours=0.5", "--drain=", "x", "--"]
        await propertyCheck(count: 30, input: Gen.int(in: 0...(words.count - 1)).array(of: 0...9)) { picks in
            try await compare(["predict"] + picks.map { words[$0] }, cli: cli)
        }
    }

    @Test("it answers predict --json itself: alone, without the full program, it still does")
    func answersItself() async throws {
        let cli = try CLI()
        let alone = cli.home.appendingPathComponent("alone/bin")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        let copy = alone.appendingPathComponent("dosetap").path
        try FileManager.default.copyItem(atPath: Self.front, toPath: copy)
        let r = try await cli.run(["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json"], binary: copy)
        #expect(r.exitCode == 0 && r.out == "{\"risk\":\"warning\",\"predictedLevel\":13}\n" && r.err.isEmpty, "\(r.out)\(r.err)")
        // ...and anything else needs the full program, which is not there: one line, exit 127.
        let missing = try await cli.run(["--version"], binary: copy)
        #expect(missing.exitCode == 127, "\(missing.err)")
        #expect(missing.out.isEmpty)
        #expect(missing.err == "dosetap: the full program is missing (looked for \(alone.path)/../lib/dosetap/dosetap); reinstall dosetap\n",
                "\(missing.err)")
        // A value the full program would refuse is not answered either: the refusal is the full program's to word.
        let refused = try await cli.run(["predict", "--level", "-5", "--drain", "6", "--hours", "7", "--json"], binary: copy)
        #expect(refused.exitCode == 127 && refused.out.isEmpty, "\(refused.out)\(refused.err)")
        // dose status --json it answers alone, but not without HOME: the home folder would then come from the
        // password database (NSS modules, which the static front does not load), so the full program answers.
        let status = try await cli.run(["dose", "status", "--json"], binary: copy)
        #expect(status.exitCode == 0 && status.out.hasPrefix("{\"phase\":") && status.err.isEmpty, "\(status.out)\(status.err)")
        let dataDir = ["--data-dir", cli.dataDirectory.path]
        #expect(try await cli.run(["dose", "status", "--json"] + dataDir, binary: copy).exitCode == 0)
        let homeless = try await cli.run(["dose", "status", "--json"] + dataDir, env: ["HOME": ""], binary: copy)
        #expect(homeless.exitCode == 127 && homeless.out.isEmpty, "\(homeless.out)\(homeless.err)")
    }

    @Test("as installed: bin/dosetap runs lib/dosetap/dosetap for what it does not answer, with the same arguments")
    func installedLayout() async throws {
        let cli = try CLI()
        let prefix = cli.home.appendingPathComponent("prefix")
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("lib/dosetap"), withIntermediateDirectories: true)
        let installed = prefix.appendingPathComponent("bin/dosetap").path
        try FileManager.default.copyItem(atPath: Self.front, toPath: installed)
        try FileManager.default.createSymbolicLink(atPath: prefix.appendingPathComponent("lib/dosetap/dosetap").path,
                                                   withDestinationPath: CLI.binary)
        for args in [["--version"], ["dose", "take"], ["dose", "status", "--json"], ["alarm", "add", "06:30"], ["dose", "status", "--jsn"]] {
            let full = try await cli.run(args, fakeTime: "2026-11-22 23:00:00", tz: "America/New_York")
            // (the full program's own runs change the data: each line runs once through the front, once directly, on
            // the same home — `dose take` and `alarm add` answer the second time with a refusal, on both sides alike)
            let front = try await cli.run(args, fakeTime: "2026-11-22 23:00:00", tz: "America/New_York", binary: installed)
            if args == ["dose", "take"] || args == ["alarm", "add", "06:30"] {
                #expect(full.exitCode == 0, "\(full.err)")
                #expect(front.exitCode != nil && front.exitCode != 127 && front.exitCode != 126, "\(front.err)")
                continue
            }
            #expect(front.out == full.out && front.err == full.err && front.exitCode == full.exitCode,
                    "\(args): \(front.out)\(front.err) against \(full.out)\(full.err)")
        }
        // A front that finds only itself (bin/dosetap beside nothing but its own copy) never runs itself.
        let lonely = cli.home.appendingPathComponent("lonely")
        try FileManager.default.createDirectory(at: lonely, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.front, toPath: lonely.appendingPathComponent("dosetap").path)
        let r = try await cli.run(["--version"], binary: lonely.appendingPathComponent("dosetap").path)
        #expect(r.exitCode == 127, "\(r.out)\(r.err)")
    }

    /// A night in New York: Dose 1 at 21:00 (fake time), then what `actions` add.
    func night(_ cli: CLI, _ actions: [(args: [String], at: String)]) async throws {
        for (args, at) in actions {
            let r = try await cli.dose(args, at: at)
            #expect(r.exitCode == 0 || r.exitCode == 2, "\(args): \(r.err)")
        }
    }

    static let statusLines: [[String]] = [
        ["dose", "status", "--json"],
        ["dose", "status", "--json", "--json"],
        ["dose", "status"],
        ["dose", "status", "--jsn"],
        ["dose", "status", "--json", "extra"],
        ["dose", "status", "--json", "--data-dir"],
        ["dose", "status", "--json", "--data-dir", "--json"],
        ["dose", "status", "--json", "--data-dir="],
    ]

    @Test("dose status --json through a night: the same bytes at every step, and the front answers it itself")
    func doseStatusThroughANight() async throws {
        let cli = try CLI()
        let zone = "America/New_York"
        // No data yet: an empty night (and the data folder is not created by either).
        for line in Self.statusLines { try await compare(line, cli: cli, fakeTime: "2026-11-29 21:00:00", tz: zone) }
        #expect(!FileManager.default.fileExists(atPath: cli.dataDirectory.path))
        let steps: [(args: [String], at: String, checkAt: [String])] = [
            (["dose", "take"], "2026-11-29 21:00:00", ["2026-11-29 21:00:00", "2026-11-29 23:29:59", "2026-11-29 23:30:00", "2026-11-30 00:45:00"]),
            (["dose", "snooze"], "2026-11-29 23:46:00", ["2026-11-29 23:50:00"]),
            (["dose", "take"], "2026-11-30 00:10:00", ["2026-11-30 00:10:00", "2026-11-30 09:00:00"]),
            (["dose", "undo"], "2026-11-30 00:10:04", ["2026-11-30 00:10:05", "2026-11-30 00:20:00"]),
            (["dose", "skip", "--reason", "side-effects", "--yes"], "2026-11-30 00:30:00", ["2026-11-30 00:31:00", "2026-11-30 01:06:00"]),
        ]
        for step in steps {
            try await night(cli, [(step.args, step.at)])
            for at in step.checkAt {
                for line in Self.statusLines { try await compare(line, cli: cli, fakeTime: at, tz: zone) }
                // A zone the C library reads and Foundation does not (a POSIX rule): the same zone for both.
                try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: "EST5EDT,M3.2.0,M11.1.0")
                try await compare(["dose", "status", "--json", "--data-dir", cli.dataDirectory.path], cli: cli, fakeTime: at, tz: zone)
                try await compare(["dose", "status", "--data-dir=\(cli.dataDirectory.path)", "--json"], cli: cli, fakeTime: at, tz: zone)
            }
        }
        // The front answered these itself: alone (no full program beside it) it still does, with the same bytes.
        let alone = cli.home.appendingPathComponent("alone")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.front, toPath: alone.appendingPathComponent("dosetap").path)
        let itself = try await cli.run(["dose", "status", "--json"], fakeTime: "2026-11-30 00:31:00", tz: zone,
                                       binary: alone.appendingPathComponent("dosetap").path)
        let full = try await cli.run(["dose", "status", "--json"], fakeTime: "2026-11-30 00:31:00", tz: zone)
        #expect(itself.exitCode == 0 && itself.out == full.out && itself.out.contains("\"skipReason\":\"side-effects\""), "\(itself.out)\(itself.err)")
    }

    @Test("dose status --json on data the full program refuses or must repair: its answer, whatever the front could read")
    func doseStatusOnTroubledData() async throws {
        let zone = "America/New_York"
        let at = "2026-11-29 22:00:00"
        // An entry that cannot be read: an error (exit 1) from the full program; set aside, the night again.
        do {
            let cli = try CLI()
            try await night(cli, [(["dose", "take"], "2026-11-29 21:00:00")])
            _ = try await cli.sqlite("INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES ('x', 'dose2', 1795340000, 'UTC', 'cli', '{}')")
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: zone)
            let full = try await cli.run(["dose", "status", "--json"], fakeTime: at, tz: zone)
            #expect(full.exitCode == 1, "\(full.out)\(full.err)")
            _ = try await cli.sqlite("INSERT INTO dose_event_ignored (seq) SELECT MAX(seq) FROM dose_event")
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: zone)
            // A payload that is not an object, a time as text, a NUL and invalid UTF-8 in the id.
            _ = try await cli.sqlite("INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES ('" + UUID().uuidString + "', 'dose2', '1795340000', 'UTC', 'cli', '[]')")
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: zone)
            _ = try await cli.sqlite("INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (CAST(X'" + "41" + "00" + "FF" + "' AS TEXT), 'snooze', 1795340000, 'UTC', 'cli', '{}')")
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: zone)
        }
        // A database of an older version (its last migration not recorded): the full program upgrades it first.
        do {
            let cli = try CLI()
            try await night(cli, [(["dose", "take"], "2026-11-29 21:00:00")])
            _ = try await cli.sqlite("DELETE FROM grdb_migrations WHERE identifier = (SELECT identifier FROM grdb_migrations ORDER BY rowid DESC LIMIT 1)")
            let front = try await cli.run(["dose", "status", "--json"], fakeTime: at, tz: zone, binary: Self.front)
            let full = try await cli.run(["dose", "status", "--json"], fakeTime: at, tz: zone)
            #expect(front.out == full.out && front.err == full.err && front.exitCode == full.exitCode, "\(front.out)\(front.err) | \(full.out)\(full.err)")
        }
        // Not a database; a data folder that is a file; a relative DOSETAP_DATA_DIR; a folder that cannot be searched.
        do {
            let cli = try CLI()
            try FileManager.default.createDirectory(at: cli.dataDirectory, withIntermediateDirectories: true)
            try Data("not a database".utf8).write(to: cli.dataDirectory.appendingPathComponent("dosetap.sqlite"))
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: at, tz: zone)
            let file = cli.home.appendingPathComponent("a-file")
            try Data().write(to: file)
            try await compare(["dose", "status", "--json", "--data-dir", file.path], cli: cli, fakeTime: at, tz: zone)
            try await compare(["dose", "status", "--json", "--data-dir", file.path + "/below"], cli: cli, fakeTime: at, tz: zone)
            let full = try await cli.run(["dose", "status", "--json"], fakeTime: at, tz: zone, env: ["DOSETAP_DATA_DIR": "relative/dir"])
            let front = try await cli.run(["dose", "status", "--json"], fakeTime: at, tz: zone, env: ["DOSETAP_DATA_DIR": "relative/dir"], binary: Self.front)
            #expect(full.exitCode != 0 && front.out == full.out && front.err == full.err && front.exitCode == full.exitCode, "\(front.err) | \(full.err)")
        }
    }

    /// "2026-11-29 21:00:00" plus `minutes`, as New York's local time (no DST change in those days).
    static func newYork(minutesAfterNine minutes: Int) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: Date(timeIntervalSince1970: 1_796_004_000 - 5 * 3600 + Double(minutes * 60)))
        func two(_ n: Int?) -> String { String(format: "%02d", n ?? 0) }
        return "\(c.year ?? 0)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):00"
    }

    @Test("any night of doses, read at any minute: the front's dose status --json is the full program's")
    func anyNight() async throws {
        let actions = [["dose", "take"], ["dose", "snooze"], ["dose", "undo"], ["dose", "skip", "--yes"], ["dose", "take", "--late"]]
        await propertyCheck(count: 6, input: Gen.int(in: 0...(actions.count - 1)).array(of: 1...4), Gen.int(in: 0...600)) { picks, readAt in
            let cli = try CLI()
            var minute = 0
            for pick in picks {
                minute += 40
                _ = try await cli.dose(actions[pick], at: Self.newYork(minutesAfterNine: minute))
            }
            try await compare(["dose", "status", "--json"], cli: cli, fakeTime: Self.newYork(minutesAfterNine: readAt), tz: "America/New_York")
        }
    }

    @Test("standard output that cannot be written: the full program's line and exit status")
    func outputFails() async throws {
        let cli = try CLI()
        for binary in [CLI.binary, Self.front] {
            let r = try await Subprocess.run(.path("/bin/bash"),
                                             arguments: ["-c", "\"$0\" predict --level 55 --drain 6 --hours 7 --json > /dev/full", binary],
                                             environment: cli.environment(), output: .string(limit: 1 << 16), error: .string(limit: 1 << 16))
            #expect(r.terminationStatus == .exited(1), "\(binary)")
            #expect(r.standardError == "dosetap: standard output could not be written (No space left on device)\n", "\(binary): \(r.standardError)")
        }
    }
}
