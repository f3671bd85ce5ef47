import DoseTapTesting
import Foundation
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The hardening issue's findings against the real binary: each test fails on the binary before the fix.
@Suite("dosetap under hostile use (the real binary)")
struct HardeningCLITests {
    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    func events(_ cli: CLI) async throws -> Int {
        Int(try await cli.sqlite("SELECT COUNT(*) FROM dose_event").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    // MARK: 1. export csv --output never destroys anything

    @Test("export --output refuses the database, its -wal and -shm, a symlink and a device; the history survives")
    func exportOverDatabase() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let db = cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path
        let link = cli.home.appendingPathComponent("history.csv").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: db)
        for (target, reason) in [(db, "it is DoseTap's database"), (db + "-wal", "it is DoseTap's database"),
                                 (db + "-shm", "it is DoseTap's database"),
                                 (cli.dataDirectory.path + "/../dosetap/dosetap.sqlite", "it is DoseTap's database"),
                                 (link, "it is a symbolic link"), ("/dev/null", "it is a character device, not a regular file")] {
            let r = try await cli.run(["export", "csv", "--output", target, "--force"])
            #expect(r.exitCode == 1, "\(target)")
            #expect(r.err.contains(reason) && r.err.hasPrefix("dosetap: refusing to write") && r.err.filter { $0 == "\n" }.count == 1, "\(r.err)")
        }
        #expect(try await events(cli) == 1)
        let destination = try FileManager.default.destinationOfSymbolicLink(atPath: link)
        #expect(destination == db)
        let status = try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:40:00")
        #expect(try cli.json(status.out)["phase"] as? String == "waiting")
    }

    @Test("export --output: a new file is 0600; an existing one needs --force and keeps its mode")
    func exportModes() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let file = cli.home.appendingPathComponent("night.csv").path
        let first = try await cli.run(["export", "csv", "--output", file])
        #expect(first.exitCode == 0)
        #expect(try mode(file) == 0o600)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o640)
        let refused = try await cli.run(["export", "csv", "--output", file])
        #expect(refused.exitCode == 1)
        #expect(refused.err == "dosetap: \(file) already exists: add --force to replace it\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me")
        let forced = try await cli.run(["export", "csv", "--output", file, "--force", "--last", "all"])
        #expect(forced.exitCode == 0)
        #expect(try mode(file) == 0o640)
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("Date,Dose1Time"))
        let missing = try await cli.run(["export", "csv", "--output", cli.home.path + "/no/such/folder/x.csv"])
        #expect(missing.err == "dosetap: cannot write \(cli.home.path)/no/such/folder/x.csv: the folder \(cli.home.path)/no/such/folder does not exist\n")
    }

    @Test("export --output with a non-ASCII name (Foundation's path methods trap on a lone '２')")
    func exportNonASCIIName() async throws {
        let cli = try CLI()
        let r = try await cli.shell(#"cd "$HOME" && "$DOSETAP" export csv --output ２ && "$DOSETAP" export csv --output ٣/é.csv"#)
        #expect(r.exitCode == 1)
        #expect(r.err == "dosetap: cannot write ٣/é.csv: the folder ٣ does not exist\n")
        #expect(try String(contentsOfFile: cli.home.path + "/２", encoding: .utf8).hasPrefix("Date,"))
    }

    // MARK: 3. output that cannot be written, unreadable rows, unbounded input

    @Test("stdout to /dev/full, closed, or a reader that left: one line, no trap; a recorded dose exits 0")
    func unwritableStdout() async throws {
        let cli = try CLI()
        let take = try await cli.shell(#""$DOSETAP" dose take > /dev/full"#)
        #expect(take.exitCode == 0)
        #expect(take.err.hasPrefix("dosetap: recorded (Dose 1 taken at ") && take.err.hasSuffix("but standard output could not be written (No space left on device)\n"))
        #expect(try await events(cli) == 1)
        for script in [#""$DOSETAP" dose status > /dev/full"#, #""$DOSETAP" dose status >&-"#,
                       #"exec > >(exit 0); sleep 0.3; "$DOSETAP" export csv --last all"#] {
            let r = try await cli.shell(script)
            #expect(r.exitCode == 1, "\(script): \(r.status)")
            #expect(r.err.hasPrefix("dosetap: standard output could not be written (") && r.err.filter { $0 == "\n" }.count == 1, "\(script): \(r.err)")
            #expect(!r.err.contains("Fatal error") && !r.err.contains("Backtrace"))
        }
    }

    @Test("unreadable rows: status and take refuse naming the seq, export warns, data unreadable sets them aside")
    func unreadableRows() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        _ = try await cli.dose(["dose", "undo"], at: "2026-01-15 22:30:02")
        _ = try await cli.sqlite("INSERT INTO dose_event (id, kind, at, time_zone, source) VALUES ('c0ffee00-0000-4000-8000-000000000001', 'dose1', 'last night', 'UTC', 'cli')")
        _ = try await cli.sqlite("INSERT INTO dose_event (id, kind, at, time_zone, source) VALUES ('not-a-uuid', 'dose1', 1768534200, 'UTC', 'cli')")
        let status = try await cli.dose(["dose", "status"], at: "2026-01-15 22:35:00")
        #expect(status.exitCode == 1)
        #expect(status.err.hasPrefix("dosetap: the dose log has 2 unreadable entries (seq 3, 4): "))
        let take = try await cli.dose(["dose", "take"], at: "2026-01-15 22:35:00")
        #expect(take.exitCode == 2)
        #expect(try await events(cli) == 4)
        let csv = try await cli.dose(["export", "csv"], at: "2026-01-16 08:00:00")
        #expect(csv.exitCode == 0)
        #expect(csv.err == "dosetap: warning: 2 unreadable entries of the dose log left out (seq 3, 4); see docs/doses.md\n")
        let list = try await cli.run(["data", "unreadable"])
        #expect(list.out.contains("seq 3: id='c0ffee00-0000-4000-8000-000000000001' kind='dose1' at='last night'"))
        let aside = try await cli.run(["data", "unreadable", "--ignore", "3", "--ignore", "4"])
        #expect(aside.exitCode == 0)
        let again = try await cli.dose(["dose", "take"], at: "2026-01-15 22:36:00")
        #expect(again.exitCode == 0)
        #expect(again.out.hasPrefix("Dose 1 taken at 22:36."))
    }

    @Test("data clear < /dev/zero reads a bounded answer and deletes nothing")
    func clearFromZero() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let r = try await cli.shell(#"ulimit -v 2000000; timeout 60 "$DOSETAP" data clear < /dev/zero"#)
        #expect(r.exitCode == 1)
        #expect(r.err == "dosetap: aborted: nothing deleted\n")
        #expect(try await events(cli) == 1)
    }

    // MARK: 6. storage: racing first commands, readers beside a writer, read-only files

    @Test("thirty first commands on a fresh data folder all succeed (ten rounds)")
    func migrationRace() async throws {
        let cli = try CLI()
        // Before the fix most runs of ten rounds had a "table … already exists" failure.
        let r = try await cli.shell(#"""
            for round in $(seq 10); do
              for i in $(seq 30); do
                ("$DOSETAP" setup --target 180 --data-dir "$HOME/race.$round" > /dev/null 2> "$HOME/err.$round.$i"; echo $? > "$HOME/rc.$round.$i") &
              done
              wait
            done
            cat "$HOME"/rc.* | sort | uniq -c | tr -s ' '; cat "$HOME"/err.*
            """#)
        #expect(r.out == " 300 0\n")
    }

    @Test("read commands work beside a held write transaction and on a database the user cannot write")
    func readers() async throws {
        let cli = try CLI()
        // Dose 1 now (on the real clock, as the commands below run): the snooze then has a night to act on and
        // reaches the write (taken on another date, it was refused for "No Dose 1 tonight" before that).
        #expect(try await cli.run(["dose", "take"]).exitCode == 0)
        let db = cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path
        // A writer holds BEGIN IMMEDIATE for 8 s (longer than the 5-s busy timeout); the readers finish first.
        let held = try await cli.shell("""
            (echo "BEGIN IMMEDIATE; INSERT INTO setting VALUES ('held', '1');"; sleep 8; echo "COMMIT;") | sqlite3 '\(db)' &
            sleep 1
            "$DOSETAP" dose status --json > /dev/null; echo "status=$?"
            "$DOSETAP" export csv --last all > /dev/null; echo "export=$?"
            "$DOSETAP" battery > /dev/null; echo "battery=$?"
            wait
            """)
        #expect(held.out == "status=0\nexport=0\nbattery=0\n", "\(held.err)")
        // The file read-only for its owner (not root: root ignores permission bits).
        let readOnly = try await cli.shell("""
            chown -R 65534:65534 '\(cli.home.path)'; chmod 0444 '\(db)'
            for c in "dose status" "export csv" "battery"; do setpriv --reuid=65534 --regid=65534 --clear-groups "$DOSETAP" $c > /dev/null; echo "$c=$?"; done
            setpriv --reuid=65534 --regid=65534 --clear-groups "$DOSETAP" dose snooze; echo "snooze=$?"
            """)
        #expect(readOnly.out == "dose status=0\nexport csv=0\nbattery=0\nsnooze=1\n", "\(readOnly.err)")
        #expect(readOnly.err.contains("the database is read-only"))
    }

    @Test("INSERT OR REPLACE through sqlite3 cannot rewrite the log")
    func replaceRefused() async throws {
        let cli = try CLI()
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let out = try await cli.sqlite("INSERT OR REPLACE INTO dose_event (seq, id, kind, at, time_zone, source) VALUES (1, 'c0ffee00-0000-4000-8000-000000000002', 'dose2', 1768534200, 'UTC', 'cli')")
        #expect(out.contains("append-only"))
        #expect(try await cli.sqlite("SELECT kind FROM dose_event") == "dose1\n")
    }

    // MARK: 7. wrong results

    @Test("a POSIX TZ is stored and shown as the system's real zone", arguments: [
        ("<+0330>-3:30", "GMT+0330", "2026-01-15T22:30:00+03:30"),
        ("CET-1CEST,M3.5.0,M10.5.0/3", "", "2026-07-15T22:30:00+02:00"),
        (":Asia/Tehran", "Asia/Tehran", "2026-01-15T22:30:00+03:30"),
    ])
    func posixTZ(_ tz: String, stored: String, dose1At: String) async throws {
        let cli = try CLI()
        let local = dose1At.hasPrefix("2026-07") ? "2026-07-15 22:30:00" : "2026-01-15 22:30:00"
        let take = try await cli.dose(["dose", "take"], at: local, tz: tz)
        #expect(take.out.hasPrefix("Dose 1 taken at 22:30."), "\(take.out)")
        let status = try cli.json(try await cli.dose(["dose", "status", "--json"], at: local, tz: tz).out)
        #expect(status["dose1At"] as? String == dose1At)
        let zone = try await cli.sqlite("SELECT time_zone FROM dose_event").trimmingCharacters(in: .newlines)
        if stored.isEmpty {
            #expect(TimeZone(identifier: zone)?.secondsFromGMT(for: Date(timeIntervalSince1970: 1_784_000_000)) == 7200, "\(zone)")
            #expect(TimeZone(identifier: zone)?.secondsFromGMT(for: Date(timeIntervalSince1970: 1_768_000_000)) == 3600, "\(zone)")
        } else {
            #expect(zone == stored)
        }
    }

    @Test("a data path that is a file, and a relative DOSETAP_DATA_DIR, are errors")
    func dataPaths() async throws {
        let cli = try CLI()
        let file = cli.home.appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)
        for args in [["dose", "status"], ["export", "csv"], ["dose", "take"]] {
            let r = try await cli.run(args + ["--data-dir", file.path])
            #expect(r.exitCode == 1)
            #expect(r.err == "dosetap: data directory \(file.path) is not a folder (it is a file); choose another with --data-dir or DOSETAP_DATA_DIR\n")
        }
        let relative = try await cli.run(["dose", "status"], env: ["DOSETAP_DATA_DIR": "relative/dir"])
        #expect(relative.exitCode == 1)
        #expect(relative.err == "dosetap: DOSETAP_DATA_DIR must be an absolute path (got 'relative/dir'); use --data-dir for a path relative to here\n")
    }

    @Test("setup < /dev/null saves nothing and leaves setup to do")
    func setupWithoutInput() async throws {
        let cli = try CLI()
        let r = try await cli.shell(#""$DOSETAP" setup < /dev/null"#)
        #expect(r.exitCode == 1)
        #expect(r.err.hasPrefix("dosetap: standard input ended before setup was answered: nothing saved"))
        let show = try cli.json(try await cli.run(["setup", "--show", "--json"]).out)
        #expect(show["configured"] as? Bool == false)
    }

    @Test("numbers are plain decimals: 0x10, 1e3, inf, nan and non-ASCII digits are usage errors",
          arguments: ["0x10", "1e3", "inf", "nan", "٣", "５5", "1_0", " 5"])
    func strictNumbers(_ text: String) async throws {
        let cli = try CLI()
        let predict = try await cli.run(["predict", "--level", text, "--drain", "1", "--hours", "1"])
        #expect(predict.exitCode == 64, "\(text)")
        #expect(predict.err.hasPrefix("dosetap: The value '\(text)' is invalid for '--level <level>'"), "\(predict.err)")
        let setup = try await cli.run(["setup", "--dose1-grams", text])
        #expect(setup.exitCode == 64)
    }

    @Test("bedtime equal to wake time is refused and nothing is saved")
    func bedtimeIsWake() async throws {
        let cli = try CLI()
        let r = try await cli.run(["setup", "--bedtime", "06:30", "--wake-time", "06:30"])
        #expect(r.exitCode == 1)
        #expect(r.err == "dosetap: bedtime and wake time must differ (both are 06:30): a night needs a start and an end\n")
        #expect(try cli.json(try await cli.run(["setup", "--show", "--json"]).out)["configured"] as? Bool == false)
        let ok = try await cli.run(["setup", "--bedtime", "06:29", "--wake-time", "06:30"])
        #expect(ok.exitCode == 0)
    }

    @Test("a stored negative target never puts the reminder before Dose 1")
    func negativeTarget() async throws {
        let cli = try CLI()
        _ = try await cli.run(["setup", "--target", "180"])
        _ = try await cli.sqlite(#"UPDATE setting SET value = replace(value, '"dose2TargetMinutes":180', '"dose2TargetMinutes":-30') WHERE key = 'user'"#)
        let take = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00", tz: "UTC")
        #expect(take.out.hasPrefix("Dose 1 taken at 22:30. Window opens at 01:00, closes at 02:30; reminder at 01:15."), "\(take.out)")
        let status = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:31:00", tz: "UTC").out)
        #expect(status["reminderAt"] as? String == "2026-01-16T01:15:00Z")
    }

    @Test("a full disk is one plain sentence naming the file, and nothing is recorded")
    func fullDisk() async throws {
        let cli = try CLI()
        // A private mount namespace with a 1 MB tmpfs (room for a new database with every migration and its WAL) (this needs root, as the test command runs here and in CI).
        let r = try await cli.shell("""
            mkdir -p "$HOME/full"
            unshare -m bash -c '
              mount -t tmpfs -o size=1m tmpfs "$HOME/full" || exit 99
              "$DOSETAP" dose take --data-dir "$HOME/full/d" > /dev/null || exit 98
              dd if=/dev/zero of="$HOME/full/fill" bs=4k 2> /dev/null
              "$DOSETAP" dose snooze --data-dir "$HOME/full/d"; echo "snooze=$?"
              "$DOSETAP" export csv --output "$HOME/full/x.csv"; echo "export=$?"
              rm "$HOME/full/fill"
              "$DOSETAP" dose status --json --data-dir "$HOME/full/d"'
            """)
        #expect(r.exitCode == 0, "the tmpfs could not be mounted: \(r.err)")
        #expect(r.out.contains("snooze=1\nexport=1\n"), "\(r.out) \(r.err)")
        #expect(r.err.contains("dosetap: cannot open \(cli.home.path)/full/d/dosetap.sqlite: the disk is full; free some space and try again (nothing was recorded)\n")
                || r.err.contains("dosetap: cannot write \(cli.home.path)/full/d/dosetap.sqlite: the disk is full"), "\(r.err)")
        #expect(r.err.contains("dosetap: cannot write \(cli.home.path)/full/x.csv: the disk is full (No space left on device)\n"), "\(r.err)")
        #expect(!r.err.contains("disk I/O error") && !r.err.contains("NSCocoaErrorDomain"))
        #expect(r.out.contains(#""snoozesUsed":0"#), "\(r.out)")
    }
    @Test("a read-only data folder (a read-only mount) serves every read: dose status, export csv, alarm list, status; a write says why (#51)")
    func readOnlyFolder() async throws {
        let cli = try CLI()
        let take = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00", tz: "UTC")
        #expect(take.exitCode == 0, "\(take.err)")
        // The agent and every command closed: no -wal/-shm left. Then the folder mounted read-only (root, as here and in CI).
        let r = try await cli.shell("""
            dir="$XDG_DATA_HOME/dosetap"
            unshare -m bash -c '
              mount --bind -o ro "$0" "$0" || exit 99
              touch "$0/x" 2> /dev/null && exit 97
              faketime "2026-01-15 22:40:00" "$DOSETAP" dose status; echo "status=$?"
              faketime "2026-01-16 08:00:00" "$DOSETAP" export csv; echo "csv=$?"
              "$DOSETAP" alarm list; echo "alarms=$?"
              "$DOSETAP" status --format json > /dev/null; echo "glance=$?"
              faketime "2026-01-16 01:00:00" "$DOSETAP" dose take; echo "take=$?"' "$dir"
            """)
        #expect(r.exitCode == 0, "the folder could not be mounted read-only: \(r.err)")
        #expect(r.out.contains("Night of 2026-01-15: waiting\nDose 1: 22:30\n"), "\(r.out) \(r.err)")
        #expect(r.out.contains("status=0\n") && r.out.contains("alarms=0\n") && r.out.contains("glance=0\n"), "\(r.out) \(r.err)")
        #expect(r.out.contains("Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped\r\n2026-01-15,22:30:00,,,false,true\r\ncsv=0\n"), "\(r.out)")
        #expect(r.out.contains("take=1\n"), "\(r.out)")
        #expect(r.err.contains("is read-only"), "\(r.err)")
    }
    @Test("#51: a history deleted or emptied is not a fresh start: dose status, dose take and the agent each say which, in one line, and make nothing")
    func lostHistory() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["dose", "take"]).exitCode == 0)
        let file = cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path
        let marker = cli.dataDirectory.appendingPathComponent("dosetap.history").path
        #expect(FileManager.default.fileExists(atPath: marker))
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        for args in [["dose", "status"], ["dose", "take"], ["export", "csv"], ["alarm", "list"]] {
            let r = try await cli.run(args)
            #expect(r.exitCode == 1, "\(args): \(r.out) \(r.err)")
            #expect(r.err.contains("\(file) is missing, but this folder has held a DoseTap history since"), "\(args): \(r.err)")
            #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
        }
        let agent = try await cli.shell(#"timeout -s TERM 20 "$DOSETAP" agent 2>&1; echo "agent=$?""#, env: ["XDG_RUNTIME_DIR": ""])
        #expect(agent.out.contains("is missing, but this folder has held a DoseTap history since"), "\(agent.out)")
        #expect(!agent.out.contains("agent=0") && !agent.out.contains("agent=124"), "it stops at once, with the reason: \(agent.out)")
        #expect(!FileManager.default.fileExists(atPath: file), "nothing made in its place")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let empty = try await cli.run(["dose", "status"])
        #expect(empty.exitCode == 1 && empty.err.contains("\(file) is empty (0 bytes), but this folder has held"), "\(empty.err)")
    }

    @Test("the agent starts on a read-only data folder and plans tonight's night from what it reads (#51)")
    func agentOnReadOnlyFolder() async throws {
        let cli = try CLI()
        let now = Date()
        _ = try await cli.run(["dose", "take"])
        let r = try await cli.shell("""
            dir="$XDG_DATA_HOME/dosetap"
            unshare -m bash -c '
              mount --bind -o ro "$0" "$0" || exit 99
              timeout -s TERM 8 "$DOSETAP" agent 2>&1; echo "agent=$?"' "$dir"
            """, env: ["XDG_RUNTIME_DIR": ""])
        #expect(r.exitCode == 0, "the folder could not be mounted read-only: \(r.err)")
        // It ran until it was told to stop (not an exit at start), and read tonight's Dose 1.
        #expect(r.out.contains("agent ready"), "\(r.out)")
        #expect(r.out.contains("night scheduled"), "\(r.out)")
        #expect(r.out.contains("agent stopped"), "\(r.out)")
        #expect(Date().timeIntervalSince(now) >= 8)
    }
}
