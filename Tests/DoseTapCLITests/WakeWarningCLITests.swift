import DoseTapTesting
import Foundation
import Subprocess
import SystemPackage
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// "This machine may sleep through the alarm: …" from `dosetap alarm add/on/list/edit`, through the real binary.
/// The CLI is run without CAP_WAKE_ALARM (`setpriv` drops it from the bounding set when the tests run as
/// root) and under `umockdev-run` with a machine that has no RTC: neither way to wake exists.
@Suite("dosetap alarm: the may-sleep-through warning (the real binary)", .serialized)
struct WakeWarningCLITests {
    static let line = "This machine may sleep through the alarm: this process lacks CAP_WAKE_ALARM for a CLOCK_REALTIME_ALARM timer "
        + "(Operation not permitted), and no wake helper listens at /nonexistent/dosetap-wake.sock (No such file or directory), "
        + "and there is no RTC wake alarm at /sys/class/rtc/rtc0/wakealarm. Fix: start the wake helper that the package installs: "
        + "sudo systemctl enable --now dosetap-wake.socket (from source: sudo make install-wake; see docs/alarms.md)"

    /// `dosetap ARGS` without the capability, on a machine without an RTC.
    func unable(_ cli: CLI, _ args: String, env: [String: String] = [:]) async throws -> CLI.Result {
        let machine = Fixtures.root.appendingPathComponent("power_supply/ac-online.umockdev").path
        let drop = getuid() == 0 ? "setpriv --bounding-set=-wake_alarm --inh-caps=-wake_alarm" : ""
        return try await cli.shell("exec umockdev-run -d '\(machine)' -- faketime -f '2026-05-04 21:00:00' \(drop) \"$DOSETAP\" \(args)", env: env)
    }

    @Test("add, on, edit and list say it after the answer; --json keeps stdout's shape and says it on stderr; an alarm that is off does not")
    func neitherWay() async throws {
        let cli = try CLI()
        let added = try await unable(cli, "alarm add 05:30")
        #expect(added.exitCode == 0, "\(added.err)")
        #expect(added.out == "Added alarm: 1  05:30  once  \"Alarm\"  next Tue 2026-05-05 05:30\n\(Self.line)\n")

        let off = try await unable(cli, "alarm add 07:00 --off")
        #expect(off.exitCode == 0, "\(off.err)")
        #expect(!off.out.contains(Self.line) && !off.err.contains(Self.line))

        let on = try await unable(cli, "alarm on 2")
        #expect(on.exitCode == 0, "\(on.err)")
        #expect(on.out.hasSuffix("\n\(Self.line)\n"), "\(on.out)")

        let edited = try await unable(cli, "alarm edit 2 --label Work")
        #expect(edited.out.hasSuffix("\n\(Self.line)\n"), "\(edited.out)")

        let list = try await unable(cli, "alarm list")
        #expect(list.out.hasPrefix("\(Self.line)\n"), "\(list.out)")

        let json = try await unable(cli, "alarm list --json")
        #expect(json.exitCode == 0, "\(json.err)")
        let all = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(all.count == 2)
        #expect(json.err == "\(Self.line)\n")

        let addJSON = try await unable(cli, "alarm add 08:00 --json")
        #expect((try? cli.json(addJSON.out))?["id"] as? Int == 3)
        #expect(addJSON.err == "\(Self.line)\n")

        // Every alarm off: nothing to warn about.
        for id in 1...3 { _ = try await unable(cli, "alarm off \(id)") }
        let quiet = try await unable(cli, "alarm list")
        #expect(!quiet.out.contains("may sleep"), "\(quiet.out)")
    }

    /// Writes the agent's record and holds its lock, as a running agent does, while `body` runs.
    static func withAgentRecord(_ cli: CLI, _ json: String, _ body: () async throws -> Void) async throws {
        try FileManager.default.createDirectory(at: cli.dataDirectory, withIntermediateDirectories: true)
        let file = cli.dataDirectory.appendingPathComponent("wake-status.json")
        try Data(json.utf8).write(to: file)
        let fd = open(file.path, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0 && flock(fd, LOCK_EX) == 0)
        defer { close(fd) }
        try await body()
    }

    @Test("a running agent's finding wins over the CLI's own: the agent can wake the machine, the CLI could not")
    func agentCan() async throws {
        let cli = try CLI()
        try await Self.withAgentRecord(cli, #"{"pid":1,"checkedAt":"2026-05-04T21:00:00Z","method":"alarmTimer"}"#) {
            let added = try await unable(cli, "alarm add 05:30")
            #expect(added.out == "Added alarm: 1  05:30  once  \"Alarm\"  next Tue 2026-05-05 05:30\n", "\(added.out)")
        }
        // The agent gone (its lock released): the CLI checks for itself again.
        let list = try await unable(cli, "alarm list")
        #expect(list.out.hasPrefix("\(Self.line)\n"), "\(list.out)")
    }

    @Test("a running agent that cannot wake the machine: its reason and fix, even when the CLI itself could")
    func agentCannot() async throws {
        let cli = try CLI()
        let record = #"{"pid":1,"checkedAt":"2026-05-04T21:00:00Z","method":null,"reason":"the agent lacks it\u001b[2J","fix":"do the thing"}"#
        try await Self.withAgentRecord(cli, record) {
            let added = try await cli.run(["alarm", "add", "05:30"], scenario: "ac-online", fakeTime: "2026-05-04 21:00:00")
            #expect(added.exitCode == 0, "\(added.err)")
            #expect(added.out == "Added alarm: 1  05:30  once  \"Alarm\"  next Tue 2026-05-05 05:30\n"
                + "This machine may sleep through the alarm: the agent lacks it\\x1b[2J. Fix: do the thing\n", "\(added.out)")
        }
    }

    @Test("end to end: an agent without a way to wake logs the line and records it; the CLI, which could wake, says the agent's")
    func realAgent() async throws {
        let cli = try CLI()
        let added = try await cli.run(["alarm", "add", "06:30", "--repeat", "daily"])
        #expect(added.exitCode == 0, "\(added.err)")
        let machine = Fixtures.root.appendingPathComponent("power_supply/ac-online.umockdev").path
        var argv = ["/usr/bin/umockdev-run", "-d", machine, "--"]
        if getuid() == 0 { argv += ["/usr/bin/setpriv", "--bounding-set=-wake_alarm", "--inh-caps=-wake_alarm"] }
        argv += [CLI.binary, "agent"]
        let buffer = LineBuffer()
        let result = try await Subprocess.run(.path(FilePath(argv[0])), arguments: Arguments(Array(argv.dropFirst())),
                                              environment: cli.environment(), input: .none, output: .discarded,
                                              error: .sequence) { execution in
            let reader = Task {
                for try await line in execution.standardError.strings() { buffer.append(line) }
            }
            #expect(await buffer.wait(for: Self.line, timeout: 15) != nil, "\(buffer.all.joined(separator: "\n"))")
            // The CLI itself (root in CI) could wake the machine: it reports the running agent's finding.
            let list = try await cli.run(["alarm", "list"])
            #expect(list.out.hasPrefix("\(Self.line)\n"), "\(list.out)")
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0))
        #expect(buffer.count(Self.line) == 1, "said once at start")
        // The agent gone: the CLI's own check (as root with CAP_WAKE_ALARM: no line).
        if getuid() == 0 {
            let after = try await cli.run(["alarm", "list"])
            #expect(!after.out.contains("may sleep through"), "\(after.out)")
        }
    }

    @Test("with the wake helper listening (the real binary's wake-helper), an agent and a CLI without the capability can wake: no line; the helper gone: the line again")
    func helper() async throws {
        let cli = try CLI()
        let (helper, socket, users) = try cli.startWakeHelper()
        defer { if helper.isRunning { helper.terminate() } }
        // Whoever runs the tests is a user logind tracks, as far as this helper knows.
        try Data().write(to: users.appendingPathComponent(String(getuid())))
        let with = try await unable(cli, "alarm add 05:30", env: ["DOSETAP_WAKE_SOCKET": socket])
        #expect(with.exitCode == 0, "\(with.err)")
        #expect(with.out == "Added alarm: 1  05:30  once  \"Alarm\"  next Tue 2026-05-05 05:30\n", "\(with.out)\(with.err)")
        helper.terminate()
        helper.waitUntilExit()
        let without = try await unable(cli, "alarm list", env: ["DOSETAP_WAKE_SOCKET": socket])
        #expect(without.out.hasPrefix("This machine may sleep through the alarm: "), "\(without.out)")
        #expect(without.out.contains("no wake helper listens at \(socket)"), "\(without.out)")
    }
}
