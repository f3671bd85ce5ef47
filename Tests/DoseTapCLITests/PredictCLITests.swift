import Foundation
import Testing

@Suite("dosetap predict and argument errors (the real binary)")
struct PredictCLITests {
    @Test("the seed's acceptance cases, as pinned JSON", arguments: [
        (["--level", "34", "--drain", "8", "--hours", "6"], #"{"risk":"critical","predictedLevel":0}"#),
        (["--level", "34", "--drain", "8", "--hours", "6", "--charging"], #"{"risk":"safe","predictedLevel":34}"#),
        (["--level", "80", "--drain", "3", "--hours", "8"], #"{"risk":"safe","predictedLevel":56}"#),
        (["--level", "55", "--drain", "6", "--hours", "7"], #"{"risk":"warning","predictedLevel":13}"#),
        (["--level", "45", "--drain", "5", "--hours", "8"], #"{"risk":"critical","predictedLevel":5}"#),
    ])
    func seed(args: [String], json: String) async throws {
        let r = try await CLI().run(["predict"] + args + ["--json"])
        #expect(r.exitCode == 0)
        #expect(r.out == json + "\n")
        #expect(r.err.isEmpty)
    }

    @Test("text output: the risk, then the nudge's three lines")
    func text() async throws {
        let critical = try await CLI().run(["predict", "--level", "34", "--drain", "8", "--hours", "6"])
        #expect(critical.out == "critical: estimated battery at alarm 0%\nAlarm at Risk\nEstimated battery at alarm: 0%\nPlug in now.\n")
        let warning = try await CLI().run(["predict", "--level", "55", "--drain", "6", "--hours", "7"])
        #expect(warning.out.contains("Low Battery Warning\nEstimated battery at alarm: 13%\nConsider plugging in.\n"))
        let safe = try await CLI().run(["predict", "--level", "80", "--drain", "3", "--hours", "8"])
        #expect(safe.out == "safe: estimated battery at alarm 56%\n")
    }

    @Test("bad arguments: one line on stderr, non-zero exit, nothing on stdout", arguments: [
        (["predict", "--level", "150", "--drain", "1", "--hours", "1"], "level must be a finite percentage between 0 and 100 (got 150)"),
        (["predict", "--level", "50", "--drain", "-1", "--hours", "1"], "drain must be a finite rate of at least 0 %/h (got -1)"),
        (["predict", "--level", "50", "--drain", "1", "--hours", "NaN"], "The value 'NaN' is invalid for '--hours <hours>'"),
        (["predict", "--level", "50", "--drain", "1", "--hours", "-2"], "hours must be a finite number of at least 0 (got -2)"),
        (["predict", "--level", "50", "--drain", "inf", "--hours", "1"], "The value 'inf' is invalid for '--drain <drain>'"),
        (["predict", "--level", "abc", "--drain", "1", "--hours", "1"], "abc"),
        (["predict", "--level", "50", "--drain", "1"], "--hours"),
        (["battery", "--alarm", "25:00"], "invalid time '25:00'"),
        (["battery", "--alarm", "6:5"], "invalid time '6:5'"),
        (["nonsense"], "nonsense"),
    ])
    func badArguments(args: [String], message: String) async throws {
        let r = try await CLI().run(args)
        #expect(r.exitCode != 0 && r.exitCode != nil)
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("dosetap: "))
        #expect(r.err.contains(message))
        #expect(r.err.split(separator: "\n").count == 1, "one line, got: \(r.err)")
        #expect(!r.err.contains("Usage") && !r.err.contains("Fatal error") && !r.err.contains("backtrace"))
    }

    @Test("--help still prints usage and exits 0")
    func help() async throws {
        let r = try await CLI().run(["predict", "--help"])
        #expect(r.exitCode == 0)
        #expect(r.out.contains("--level"))
    }
}
