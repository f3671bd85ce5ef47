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

    @Test("a hung command is killed at its timeout, with the processes it started")
    func hung() async throws {
        // A duration no other process uses: the sleep's own command line names it.
        let marker = "29.\(Int.random(in: 1000...9999))"
        let started = Date()
        do {
            // A shell here is the program under test (a script that starts a child and waits), not how DoseTap runs it.
            _ = try await runner.output(of: ["/bin/sh", "-c", "sleep \(marker) & wait", "dosetap-hung-\(marker)"], timeout: 1)
            Issue.record("a hung command returned")
        } catch {
            #expect("\(error)" == "/bin/sh ran longer than 1 s and was killed", "\(error)")
        }
        // Killed, not waited for: well before the 29 s sleep would have ended (a loaded CI machine took 9 s).
        #expect(Date().timeIntervalSince(started) < 25)
        let left = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)  // this process is still fine
        #expect(left.contains("Name:"))
        var survivors = 0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) {
            if let cmdline = try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8), cmdline.contains(marker) { survivors += 1 }
        }
        #expect(survivors == 0, "the script or its sleep survived the timeout")
    }
}
