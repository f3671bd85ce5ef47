import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// #51 on the real agent and the real clock: another process (`sqlite3`) holds the database's write lock across an
/// alarm and the opening of the Dose 2 window — from before the agent starts —, and a data folder on a full tmpfs
/// made by the test. The alarm rings on time, the reminder is told once, the log and the CPU stay quiet, the person
/// is told (`alarm list`), and what could not be written is written once the store takes it.
@Suite("dosetap agent: a locked or full store never silences an alarm", .serialized, .timeLimit(.minutes(4)))
struct StoreTroubleE2ETests {
    /// Runs the agent in `tz` while `body` acts, with its pid; returns its log lines.
    func withAgent(_ cli: CLI, tz: String, env: [String: String] = [:],
                   _ body: @Sendable (LineBuffer, Int32) async throws -> Void) async throws -> [String] {
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let buffer = LineBuffer()
        let result = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(tz: tz, extra: env),
                                              input: .none, output: .discarded, error: .sequence) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { buffer.append(line) } }
            #expect(await buffer.wait(for: "agent ready", timeout: 30) != nil, "\(buffer.all.joined(separator: "\n"))")
            try await body(buffer, execution.processIdentifier.value)
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0), "\(buffer.all.joined(separator: "\n"))")
        return buffer.all
    }

    /// An alarm at the next local minute at least `lead` seconds away, and a Dose 1 whose window opens then.
    func arrange(_ cli: CLI, lead: Int) throws -> (tz: String, minute: Date, hhmm: String) {
        let (tz, zone, minute) = AlarmAgentTests.zone(lead: lead)
        let database = try DoseTapDatabase(directory: cli.dataDirectory)
        let hhmm = AlarmAgentTests.hourMinute(minute, zone)
        _ = try AlarmRepository(database: database).add(try Alarm(id: 0, time: try TimeOfDay(parsing: hhmm), label: "Wake"),
                                                        now: minute.addingTimeInterval(-120))
        let dose1 = DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: minute.addingTimeInterval(-150 * 60),
                              timeZone: "UTC", source: .cli)
        try DoseRepository(database: database).append([dose1])
        return (tz, minute, hhmm)
    }

    @Test("a write lock held from before the start to 30 s past the alarm: the agent starts, rings on time, tells the reminder once; all is saved after")
    func lockedAcrossTheAlarm() async throws {
        let cli = try CLI()
        let (tz, minute, hhmm) = try arrange(cli, lead: 40)
        let path = cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path
        let lock = try HeldWriteLock(database: path)
        let log = try await withAgent(cli, tz: tz) { log, _ in
            try #require(Date() < minute.addingTimeInterval(-1), "the agent started too late to prove anything")
            #expect(await log.wait(for: "Alarm \(hhmm): ringing", timeout: minute.timeIntervalSinceNow + 15) != nil,
                    "\(log.all.joined(separator: "\n"))")
            let late = Date().timeIntervalSince(minute)
            // Seen from here within AlarmAgentTests' bound for a loaded 2-core machine; begun within a second by the
            // agent's own figure (its log line's lateMs).
            #expect(late < 2, "rang \(late) s after its minute")
            let lateMs = LongLockTests.lateMs(log.all.first { $0.contains("Alarm \(hhmm): ringing") })
            #expect(lateMs.map { (0..<1000).contains($0) } == true, "rang \(lateMs.map(String.init) ?? "?") ms late")
            #expect(log.count("DoseTap cannot write its data (another program keeps the database locked)") == 1,
                    "the start on a locked store is told once: \(log.all.joined(separator: "\n"))")
            let list = try await cli.run(["alarm", "list"], tz: tz)
            #expect(list.out.contains("DoseTap cannot write its data (another program keeps the database locked): alarms still ring, doses cannot be recorded"),
                    "\(list.out)")
            #expect(await log.wait(for: "Dose window now open", timeout: 5) != nil, "\(log.all.joined(separator: "\n"))")
            // 30 s of the lock past the alarm: no second reminder, no storm in the log.
            let quiet = log.all.count
            try await Task.sleep(for: .seconds(max(0, minute.addingTimeInterval(30).timeIntervalSinceNow)))
            #expect(log.count("Dose window now open") == 1)
            #expect(log.all.count - quiet <= 6, "\(log.all.dropFirst(quiet).joined(separator: "\n"))")
            lock.release()
            #expect(await log.wait(for: "the data can be written again", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
            #expect(await log.wait(for: "the alarms' rings kept in memory are saved", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
            let cleared = try await cli.run(["alarm", "list"], tz: tz)
            #expect(!cleared.out.contains("cannot write its data"), "\(cleared.out)")
            let stop = try await cli.run(["alarm", "stop"], tz: tz)
            #expect(stop.exitCode == 0, "the ring written after the lock is answered from the command line: \(stop.err)")
            #expect(await log.wait(for: "alarm ring ended", timeout: 10) != nil)
        }
        #expect(log.filter { $0.contains("Dose window now open") }.count == 1)
        #expect(try await cli.sqlite("SELECT outcome || ' ' || ended_by FROM alarm_ring") == "stopped cli\n")
        #expect(try await cli.sqlite("SELECT kind FROM reminder_fired") == "dose-window-open\n")
    }

    @Test("restarted while the store is locked: the ring kept in memory rings on, the reminder is not told again, nothing is lost; released, all is written once and the copies are removed")
    func restartWhileLocked() async throws {
        let cli = try CLI()
        let (tz, minute, hhmm) = try arrange(cli, lead: 40)
        let lock = try HeldWriteLock(database: cli.dataDirectory.appendingPathComponent("dosetap.sqlite").path)
        defer { lock.release() }
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let env = ["XDG_RUNTIME_DIR": runtime.path]
        @Sendable func copies() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: runtime.appendingPathComponent("dosetap").path)) ?? [])
                .filter { $0.hasPrefix("kept-") }.sorted()
        }
        // The first run rings and tells the reminder, the store locked; then it dies (SIGKILL: no goodbye).
        let first = LineBuffer()
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let killed = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(tz: tz, extra: env),
                                              input: .none, output: .discarded, error: .sequence) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { first.append(line) } }
            #expect(await first.wait(for: "agent ready", timeout: 30) != nil, "\(first.all.joined(separator: "\n"))")
            try #require(Date() < minute.addingTimeInterval(-1), "the agent started too late to prove anything")
            #expect(await first.wait(for: "Alarm \(hhmm): ringing", timeout: minute.timeIntervalSinceNow + 15) != nil,
                    "\(first.all.joined(separator: "\n"))")
            #expect(await first.wait(for: "Dose window now open", timeout: 5) != nil, "\(first.all.joined(separator: "\n"))")
            // Each copy is made at the end of the pass that kept it.
            let deadline = Date().addingTimeInterval(10)
            while copies().count < 2, Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
            try execution.send(signal: .kill)
            _ = try? await reader.value
        }
        #expect(killed.terminationStatus == .signaled(SIGKILL))
        #expect(copies().count == 2 && copies().contains { $0.hasPrefix("kept-alarms-") } && copies().contains { $0.hasPrefix("kept-reminders-") },
                "\(copies())")
        let mode = try FileManager.default.attributesOfItem(atPath: runtime.appendingPathComponent("dosetap/\(copies()[0])").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The second run, the store still locked: the ring goes on (one ring), the reminder is not told again.
        let log = try await withAgent(cli, tz: tz, env: env) { log, _ in
            #expect(await log.wait(for: "the agent restarted while an alarm rang: ringing again", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
            #expect(log.count("rings kept in memory by the agent before it restarted are kept again") == 1, "\(log.all.joined(separator: "\n"))")
            #expect(log.count("reminders fired before the agent restarted, not yet recorded, are kept again") == 1, "\(log.all.joined(separator: "\n"))")
            try await Task.sleep(for: .seconds(3))
            #expect(log.count("Dose window now open") == 0, "the reminder was told again after the restart")
            let stop = try await cli.run(["alarm", "stop"], tz: tz, env: env)
            #expect(stop.exitCode == 0 && stop.out.contains("through the running agent"), "\(stop.out) \(stop.err)")
            lock.release()
            #expect(await log.wait(for: "the data can be written again", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
            #expect(await log.wait(for: "the alarms' rings kept in memory are saved", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
            let deadline = Date().addingTimeInterval(10)
            while !copies().isEmpty, Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(copies().isEmpty, "the copies are removed once all is written: \(copies())")
        }
        #expect(log.filter { $0.contains("Alarm \(hhmm): ringing") }.count == 1, "one ring, resumed, not a second: \(log.joined(separator: "\n"))")
        #expect(try await cli.sqlite("SELECT outcome || ' ' || ended_by FROM alarm_ring") == "stopped cli\n")
        #expect(try await cli.sqlite("SELECT kind FROM reminder_fired") == "dose-window-open\n")
    }

    @Test("the data folder on a full tmpfs: the alarm rings on time, the log says it once, the CPU stays idle, alarm list tells, alarm stop works through the agent; freed, the ring and its Stop are saved; an agent started on the full disk runs and reads")
    func fullDisk() async throws {
        #expect(getuid() == 0, "mounting the test's tmpfs needs root (make test runs as root in CI)")
        let cli = try CLI()
        let mount = cli.home.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        let mounted = try await cli.shell("mount -t tmpfs -o size=4m tmpfs '\(mount.path)'")
        #expect(mounted.exitCode == 0, "\(mounted.err)")
        defer { _ = try? Process.run(URL(fileURLWithPath: "/bin/umount"), arguments: ["-l", mount.path]).waitUntilExit() }
        let (tz, minute, hhmm) = try arrange(cli, lead: 45)
        let filler = mount.appendingPathComponent("filler").path
        // The agent's socket, for `alarm stop` (it cannot write the answer itself on the full disk).
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let env = ["XDG_RUNTIME_DIR": runtime.path]
        let log = try await withAgent(cli, tz: tz, env: env) { log, pid in
            let filled = try await cli.shell("dd if=/dev/zero of='\(filler)' bs=64k 2>/dev/null; sync; df -k '\(mount.path)' | tail -1")
            #expect(filled.out.contains(" 100% "), "\(filled.out)")
            try #require(Date() < minute.addingTimeInterval(-1), "the agent started too late to prove anything")
            let cpuBefore = StrangerFloodTests.cpuTicks(pid) ?? 0
            let lines = log.all.count
            #expect(await log.wait(for: "Alarm \(hhmm): ringing", timeout: minute.timeIntervalSinceNow + 15) != nil,
                    "\(log.all.joined(separator: "\n"))")
            let late = Date().timeIntervalSince(minute)
            #expect(late < 2, "rang \(late) s after its minute")
            let lateMs = LongLockTests.lateMs(log.all.first { $0.contains("Alarm \(hhmm): ringing") })
            #expect(lateMs.map { (0..<1000).contains($0) } == true, "rang \(lateMs.map(String.init) ?? "?") ms late")
            #expect(await log.wait(for: "DoseTap cannot write its data (the disk is full)", timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
            let told = try await cli.run(["alarm", "list"], tz: tz)
            #expect(told.out.contains("DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on"),
                    "\(told.out) \(told.err)")
            // The status bar's glance says it first (#51).
            let glance = try await cli.run(["status"], tz: tz)
            #expect(glance.out.hasPrefix("⚠ 💊 open"), "\(glance.out) \(glance.err)")
            #expect(glance.out.split(separator: "\n").dropFirst().first?.hasPrefix("  DoseTap cannot write its data (the disk is full)") == true, "\(glance.out)")
            let bar = try await cli.run(["status", "--format", "waybar"], tz: tz)
            #expect(bar.out.contains(#""store-trouble","urgent""#), "\(bar.out)")
            // 30 s on the full disk.
            let start = Date()
            try await Task.sleep(for: .seconds(30))
            let seconds = Date().timeIntervalSince(start) + Date().timeIntervalSince(minute)
            let cpu = Double((StrangerFloodTests.cpuTicks(pid) ?? 0) - cpuBefore) / Double(sysconf(Int32(_SC_CLK_TCK)))
            // The ring itself plays a sound (ALSA's null device) and vibrates: well under 5 % of one core.
            #expect(cpu / max(seconds, 1) < 0.05, "CPU \(cpu) s in \(seconds) s")
            let said = log.all.dropFirst(lines).filter { $0.contains(" error ") || $0.contains(" notice ") || $0.contains(" warning ") }
            #expect(said.count <= 8, "\(said.joined(separator: "\n"))")
            #expect(log.count("Dose window now open") == 1)
            // Stop from a shell while the disk is full: the command cannot write it, the agent answers (#51).
            let stop = try await cli.run(["alarm", "stop"], tz: tz, env: env)
            #expect(stop.exitCode == 0, "\(stop.out) \(stop.err)")
            #expect(stop.out == "Stopped the alarm ringing here, through the running agent (it saves the answer when its data can be written).\n",
                    "\(stop.out) \(stop.err)")
            let again = try await cli.run(["alarm", "stop"], tz: tz, env: env)
            #expect(again.exitCode == 1, "none rings now: \(again.out)")
            try FileManager.default.removeItem(atPath: filler)
            #expect(await log.wait(for: "the data can be written again", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
            #expect(await log.wait(for: "the alarms' rings kept in memory are saved", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
        }
        #expect(log.filter { $0.contains("Dose window now open") }.count == 1)
        #expect(try await cli.sqlite("SELECT outcome || ' ' || ended_by FROM alarm_ring") == "stopped cli\n")

        // An agent started on the full disk runs on what it reads (it exited at once, #51 finding 2), and can write
        // once space is freed.
        let refilled = try await cli.shell("dd if=/dev/zero of='\(filler)' bs=64k 2>/dev/null; sync; df -k '\(mount.path)' | tail -1")
        #expect(refilled.out.contains(" 100% "), "\(refilled.out)")
        let started = try await withAgent(cli, tz: tz, env: env) { log, _ in
            #expect(log.count("DoseTap cannot write its data (the disk is full)") == 1, "\(log.all.joined(separator: "\n"))")
            let list = try await cli.run(["alarm", "list"], tz: tz, env: env)
            #expect(list.exitCode == 0 && list.out.contains("Wake"), "the alarms are read on the full disk: \(list.out) \(list.err)")
            try FileManager.default.removeItem(atPath: filler)
            #expect(await log.wait(for: "the data can be written again", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
        }
        #expect(started.contains { $0.contains("running on what it can read") }, "\(started.joined(separator: "\n"))")
        let added = try await cli.run(["alarm", "add", "07:15"], tz: tz)
        #expect(added.exitCode == 0, "a write works again once space is freed: \(added.err)")
    }
}
