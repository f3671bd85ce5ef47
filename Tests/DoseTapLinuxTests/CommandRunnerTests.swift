import DoseTapCore
import DoseTapLinux
import Foundation
import Testing

/// Real programs on the real clock (the runner's timeout waits on a timerfd scheduler of its own: the
/// shared one's tests count its sleepers, and set the clock).
@Suite("Running a command source (swift-subprocess, no shell)")
struct CommandRunnerTests {
    static let scheduler = TimerFDScheduler()
    let runner = SubprocessCommandRunner(clock: CommandRunnerTests.scheduler)

    @Test("its output; found on PATH or by path; arguments are passed as they are, never through a shell")
    func output() async throws {
        #expect(try await runner.output(of: ["echo", "42"], timeout: 10) == "42\n")
        #expect(try await runner.output(of: ["/bin/echo", "$HOME;", "`id`"], timeout: 10) == "$HOME; `id`\n")
    }

    @Test("a failure, a missing program and no program are one-line errors")
    func failures() async throws {
        await #expect(throws: CommandError.self) { try await runner.output(of: ["false"], timeout: 10) }
        do {
            _ = try await runner.output(of: ["/nonexistent/quota-left"], timeout: 10)
            Issue.record("a missing program ran")
        } catch {
            #expect("\(error)".hasPrefix("/nonexistent/quota-left could not run") && !"\(error)".contains("\n"), "\(error)")
        }
        await #expect(throws: CommandError("no program to run")) { try await runner.output(of: [], timeout: 10) }
    }

    /// #25 §9: a command that exits left its background children running for ever (+9 per interval).
    @Test("a command that exits leaves nothing behind: its background children end with the run")
    func backgroundChildren() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-bg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pidFile = dir.appendingPathComponent("child.pid").path
        // A shell here is the program under test: it starts a detached child (its output elsewhere), then answers.
        let output = try await runner.output(of: ["/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > \(pidFile); echo 87"], timeout: 10)
        #expect(output == "87\n")
        let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Gone, or a zombie waiting for its new parent: not running.
        var alive = true
        for _ in 0..<100 where alive {
            alive = Self.running(pid)
            if alive { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!alive, "the background child \(pid) outlived the run")
        if alive { kill(pid, SIGKILL) }
    }

    /// True while `pid` exists and is not a zombie.
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
        return state != "Z" && state != "X"
    }

    @Test("a hung command is killed at its timeout, with the processes it started")
    func hung() async throws {
        // A duration no other process uses: the sleep's own command line names it.
        let marker = "300.\(Int.random(in: 1000...9999))"
        let started = Date()
        do {
            // A shell here is the program under test (a script that starts a child and waits), not how DoseTap runs it.
            _ = try await runner.output(of: ["/bin/sh", "-c", "sleep \(marker) & wait", "dosetap-hung-\(marker)"], timeout: 1)
            Issue.record("a hung command returned")
        } catch {
            #expect("\(error)" == "/bin/sh ran longer than 1 s and was killed", "\(error)")
        }
        // Killed, not waited for: long before the 300 s sleep would have ended. (Only that: on a loaded 2-core
        // machine the 1 s timeout itself was seen to take 28 s, so no tighter wall-clock bound is a fact.)
        #expect(Date().timeIntervalSince(started) < 200)
        let left = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)  // this process is still fine
        #expect(left.contains("Name:"))
        // SIGKILL is delivered at once but a process takes a moment to leave /proc (or to turn into a zombie, whose
        // cmdline is empty): survivors are counted again for up to 5 s before they count as survivors.
        var survivors = 0
        for _ in 0..<100 {
            survivors = 0
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
                if let cmdline = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8), cmdline.contains(marker),
                   Self.running(Int32(entry) ?? 0) { survivors += 1 }
            }
            if survivors == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(survivors == 0, "the script or its sleep survived the timeout")
    }
}
