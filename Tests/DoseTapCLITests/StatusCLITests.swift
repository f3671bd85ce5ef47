import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// `dosetap status` (#16 §3) with the real binary: the glance now, and `--follow` on the running agent's
/// event stream — a dose taken on the command line reaches the bar as a new line within a second.
@Suite("dosetap status for a status bar (the real binary)")
struct StatusCLITests {
    @Test("a glance now: waybar and i3blocks lines, the text with its details")
    func once() async throws {
        let cli = try CLI()
        let idle = try await cli.run(["status", "--format", "waybar"])
        #expect(idle.exitCode == 0)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(idle.out.utf8)) as? [String: Any])
        #expect(line["text"] as? String == "💊" && line["class"] as? [String] == ["idle"])
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:00:00")
        let waiting = try await cli.dose(["status", "--format", "i3blocks"], at: "2026-01-15 22:10:00")
        #expect(waiting.out == "{\"full_text\":\"💊 00:30\",\"short_text\":\"💊 00:30\"}\n", "\(waiting.out)")
        let open = try await cli.dose(["status"], at: "2026-01-16 00:40:30")
        #expect(open.out.hasPrefix("💊 open 80 min\n  Dose 1 at 22:00 · window 00:30–02:00\n"), "\(open.out)")
        let bad = try await cli.run(["status", "--format", "polybar"])
        #expect(bad.exitCode == 64)
    }

    @Test("--follow without a running agent: one line naming the fix, exit 1")
    func followWithoutAgent() async throws {
        let cli = try CLI()
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let r = try await cli.run(["status", "--format", "waybar", "--follow"], env: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(r.exitCode == 1)
        #expect(r.err.hasPrefix("dosetap: no agent answers on ") && r.err.contains("systemctl --user start dosetap")
                && r.err.filter { $0 == "\n" }.count == 1, "\(r.err)")
        let none = try await cli.run(["status", "--follow"], env: ["XDG_RUNTIME_DIR": ""])
        #expect(none.exitCode == 1 && none.err.contains("XDG_RUNTIME_DIR"), "\(none.err)")
    }

    @Test("--follow: the current line at once, a new one within a second of a dose taken elsewhere, none when nothing changed")
    func follow() async throws {
        let cli = try CLI()
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try cli.writeConfig("[web]\nlisten = []\n")  // the socket only
        let env = ["XDG_RUNTIME_DIR": runtime.path, "DOSETAP_AUDIO_DEVICE": "null"]
        let agentLog = LineBuffer()
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        _ = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(extra: env),
                                     input: .none, output: .discarded, error: .sequence) { agent in
            let reader = Task { for try await line in agent.standardError.strings() { agentLog.append(line) } }
            #expect(await agentLog.wait(for: "web dashboard listening", timeout: 15) != nil, "\(agentLog.all.joined(separator: "\n"))")
            let bar = LineBuffer()
            let (fexe, fargv) = cli.command(["status", "--format", "waybar", "--follow"], scenario: nil, fakeTime: nil)
            let follower = try await Subprocess.run(fexe, arguments: Arguments(fargv), environment: cli.environment(extra: env),
                                                    input: .none, output: .sequence, error: .discarded) { status in
                let lines = Task { for try await line in status.standardOutput.strings() { bar.append(line) } }
                #expect(await bar.wait(for: "\"class\":[\"idle\"]", timeout: 10) != nil, "\(bar.all)")
                // A write that changes nothing the bar shows (a setting) prints nothing new.
                #expect(try await cli.run(["feedback", "set", "--quiet", "on"], env: env).exitCode == 0)
                try await Task.sleep(for: .milliseconds(500))  // a negative: nothing more arrives
                #expect(bar.all.count == 1, "\(bar.all)")
                let take = try await cli.run(["dose", "take"], env: env)
                #expect(take.exitCode == 0, "\(take.err)")
                let seconds = await bar.wait(for: "\"class\":[\"waiting\"]", timeout: 20)
                // Pushed, not polled: well inside the agent's minute tick. (The sub-second figure is a benchmark's, in
                // docs/performance.md: on a loaded 2-core machine a test's own wait can lag by seconds.)
                #expect(seconds != nil && seconds! < 15, "after \(String(describing: seconds)) s: \(bar.all)")
                #expect(bar.all.count == 2, "\(bar.all)")
                try status.send(signal: .terminate)
                _ = try? await lines.value
            }
            #expect(follower.terminationStatus == .signaled(SIGTERM) || follower.terminationStatus == .exited(0),
                    "\(follower.terminationStatus)")
            try agent.send(signal: .terminate)
            _ = try? await reader.value
        }
    }
}
