import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

@Suite("dosetap agent as a process")
struct AgentProcessTests {
    @Test("READY=1 over NOTIFY_SOCKET, a sample stored, SIGHUP reloads, SIGTERM exits 0")
    func lifecycle() async throws {
        let cli = try CLI()
        try cli.writeConfig("[alarm]\ntime = \"06:30\"\n")
        let notify = try NotifySocket(directory: cli.home)
        let (exe, argv) = cli.command(["agent"], scenario: "energy-discharging", fakeTime: nil)
        let result = try await Subprocess.run(
            exe, arguments: Arguments(argv),
            environment: cli.environment(extra: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"]),
            input: .none, output: .discarded, error: .string(limit: 1 << 20)
        ) { execution in
            // READY=1 comes after the first battery evaluation.
            var messages: [String] = []
            while let m = notify.receive(timeout: 10) {
                messages.append(m)
                if m.contains("READY=1") { break }
            }
            #expect(messages.contains { $0.contains("READY=1") })
            // Watchdog pings at half of WATCHDOG_USEC.
            var sawWatchdog = false
            for _ in 0..<6 where !sawWatchdog {
                sawWatchdog = notify.receive(timeout: 2)?.contains("WATCHDOG=1") ?? false
            }
            #expect(sawWatchdog)
            try cli.writeConfig("[alarm]\ntime = \"07:45\"\n")
            try execution.send(signal: .terminalClosed)
            var reloaded = false
            for _ in 0..<10 where !reloaded {
                reloaded = notify.receive(timeout: 1)?.contains("RELOADING=1") ?? false
            }
            #expect(reloaded)
            try await Task.sleep(for: .milliseconds(300))
            try execution.send(signal: .terminate)
        }
        #expect(result.terminationStatus == .exited(0), "\result.standardError")
        let log = result.standardError
        #expect(log.contains("configuration reloaded") && log.contains("alarm=07:45"))
        #expect(log.contains("agent stopped"))
        let db = try #require(try DoseTapDatabase.openIfPresent(directory: cli.dataDirectory))
        #expect(try BatterySampleRepository(database: db).count() >= 1)
    }

    @Test("no battery: said once, and the agent keeps running until SIGTERM")
    func noBattery() async throws {
        let cli = try CLI()
        let (exe, argv) = cli.command(["agent"], scenario: "no-battery", fakeTime: nil)
        let result = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(),
                                              input: .none, output: .discarded, error: .string(limit: 1 << 20)) { execution in
            try await Task.sleep(for: .seconds(2))
            try execution.send(signal: .terminate)
        }
        #expect(result.terminationStatus == .exited(0))
        let log = result.standardError
        #expect(log.components(separatedBy: "no system battery found").count == 2, "\(log)")
    }

    @Test("a bad config at start: one line, non-zero exit; a bad config on reload: rejected, still running")
    func badConfig() async throws {
        let cli = try CLI()
        try cli.writeConfig("[alarm]\ntime = \"25:00\"\n")
        let r = try await cli.run(["agent"], scenario: "no-battery")
        #expect(r.exitCode == 1)
        #expect(r.err.contains("alarm.time: invalid time '25:00'"))
        #expect(r.err.split(separator: "\n").count == 1)

        try cli.writeConfig("[alarm]\ntime = \"06:30\"\n")
        let (exe, argv) = cli.command(["agent"], scenario: "no-battery", fakeTime: nil)
        let result = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(),
                                              input: .none, output: .discarded, error: .string(limit: 1 << 20)) { execution in
            try await Task.sleep(for: .seconds(1))
            try cli.writeConfig("[alarm]\ntime = \"banana\"\n")
            try execution.send(signal: .terminalClosed)
            try await Task.sleep(for: .seconds(1))
            try execution.send(signal: .terminate)
        }
        #expect(result.terminationStatus == .exited(0))
        #expect(result.standardError.contains("configuration rejected, keeping the previous one"))
    }

    @Test("an unwritable data directory is a one-line error")
    func unwritableData() async throws {
        let cli = try CLI()
        let blocker = cli.home.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let r = try await cli.run(["agent", "--data-dir", blocker.appendingPathComponent("d").path], scenario: "no-battery")
        #expect(r.exitCode == 1)
        #expect(r.err.hasPrefix("dosetap: cannot create data directory"))
        #expect(r.err.split(separator: "\n").count == 1)
    }
}
