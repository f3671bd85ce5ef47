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
        try await Self.withAgent { cli, env in
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
        }
    }

    @Test("--follow ends with its reader: when the program that started it exits with nothing new to write, and at the first line it cannot write")
    func followEndsWithItsReader() async throws {
        try await Self.withAgent { cli, env in
            // A bar's shell starts the follower and exits (the bar was closed); nothing changes, so nothing is written.
            let started = try await cli.shell("""
                "$DOSETAP" status --format waybar --follow > "$HOME/bar1" 2>/dev/null &
                echo $!
                for i in $(seq 200); do [ -s "$HOME/bar1" ] && exit 0; sleep 0.1; done
                exit 1
                """, env: env)
            #expect(started.exitCode == 0, "the follower printed nothing: \(started.err)")
            let pid = try #require(Int32(started.out.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await Self.ends(pid, within: 10), "the follower outlived the shell that started it")

            // The reader of its lines goes while its parent stays: it ends at the next line it has to write.
            let piped = try await cli.shell("""
                ( sh -c 'echo $$ > "$HOME/pid2"; exec "$DOSETAP" status --format waybar --follow 2>/dev/null' | head -n 1 > "$HOME/bar2" ) &
                for i in $(seq 200); do [ -s "$HOME/bar2" ] && break; sleep 0.1; done
                [ -s "$HOME/bar2" ] || { echo "no first line"; exit 1; }
                "$DOSETAP" dose take > /dev/null || exit 1
                for i in $(seq 200); do kill -0 "$(cat "$HOME/pid2")" 2>/dev/null || { echo ended; exit 0; }; sleep 0.1; done
                echo "still running"
                kill "$(cat "$HOME/pid2")"
                exit 1
                """, env: env)
            #expect(piped.exitCode == 0 && piped.out == "ended\n", "\(piped.out) \(piped.err)")
        }
    }

    /// A running agent (the web socket only) in a private home, for `body`; stopped afterwards.
    static func withAgent(_ body: (CLI, [String: String]) async throws -> Void) async throws {
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
            try await body(cli, env)
            try agent.send(signal: .terminate)
            _ = try? await reader.value
        }
    }

    /// True once `pid` has exited (gone, or a zombie its new parent has not reaped yet) within `seconds`.
    static func ends(_ pid: Int32, within seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGKILL)
        return false
    }
}
