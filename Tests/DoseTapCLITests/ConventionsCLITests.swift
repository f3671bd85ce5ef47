import DoseTapTesting
import Foundation
import Testing

/// The command line's conventions (#16 §2), against the real binary: `--version`, one exit status for each
/// kind of outcome, `--config` only where the configuration is read, help without doubled defaults.
@Suite("dosetap's conventions (the real binary)")
struct ConventionsCLITests {
    @Test("--version: version, git commit and build date on one line, exit 0")
    func version() async throws {
        let r = try await CLI().run(["--version"])
        #expect(r.exitCode == 0)
        let line = r.out.trimmingCharacters(in: .newlines)
        #expect(r.out.filter { $0 == "\n" }.count == 1)
        // dosetap 0.9.0 (commit 0123456789ab[-dirty], built 2026-11-24)
        let pattern = #/^dosetap \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), built \d{4}-\d{2}-\d{2}\)$/#
        #expect(line.wholeMatch(of: pattern) != nil, "\(line)")
        let version = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(line.hasPrefix("dosetap \(version.trimmingCharacters(in: .whitespacesAndNewlines)) "))
    }

    /// A bad time, date, level, intensity, address, event or option is a usage error in every command.
    @Test("a malformed argument is a usage error (64) in every command, on one line", arguments: [
        ["alarm", "add", "25:00"], ["alarm", "add", "7"], ["alarm", "edit", "1", "--time", "07:60"], ["battery", "--alarm", "24:00"],
        ["setup", "--bedtime", "25:00"], ["setup", "--wake-time", "７:00"], ["setup", "--notifications", "maybe"],
        ["export", "csv", "--from", "2026-02-30"], ["export", "csv", "--last", "7d"],
        ["agent", "--log-level", "loud"], ["feedback", "set", "--intensity", "max"], ["feedback", "event", "nope", "--chime", "off"],
        ["haptics", "test", "--intensity", "max"], ["button", "map", "zz:zz", "--single", "take"],
        ["button", "add", "00:00:00:00:00:00", "--kind", "bthome"], ["button", "add", "AA:BB:CC:DD:EE:F0", "--kind", "bthome", "--bindkey", "xyz"],
        ["dose", "skip", "--reason", "x"], ["dose", "status", "--config", "/tmp/x.toml"], ["predict", "--level", "nan", "--drain", "5"],
        ["web", "link", "--host", "a b"], ["nonsense"],
    ])
    func usageErrors(args: [String]) async throws {
        let cli = try CLI()
        let r = try await cli.run(args)
        #expect(r.exitCode == 64, "\(args): \(r.err)")
        #expect(r.err.hasPrefix("dosetap: ") && r.err.filter { $0 == "\n" }.count == 1, "\(args): \(r.err)")
        #expect(r.out.isEmpty, "\(args)")
    }

    @Test("0 done, 2 refused by the dose rules, 1 an error")
    func outcomes() async throws {
        let cli = try CLI()
        #expect(try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00").exitCode == 0)
        let early = try await cli.dose(["dose", "take"], at: "2026-01-15 22:40:00")
        #expect(early.exitCode == 2 && early.err.contains("Too early for Dose 2"), "\(early.err)")
        let missing = try await cli.run(["alarm", "on", "99"])
        #expect(missing.exitCode == 1 && missing.err == "dosetap: no alarm 99: see dosetap alarm list\n", "\(missing.err)")
    }

    @Test("--log-level names every accepted value, critical included, in its help and its error")
    func logLevels() async throws {
        let cli = try CLI()
        let help = try await cli.run(["agent", "--help"])
        let flat = help.out.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(flat.contains("trace, debug, info, notice, warning, error, critical"), "\(help.out)")
        let bad = try await cli.run(["agent", "--log-level", "loud"])
        #expect(bad.err.contains("'critical'") && bad.err.contains("'trace'"), "\(bad.err)")
        let env = try await cli.run(["agent"], env: ["DOSETAP_LOG_LEVEL": "chatty"])
        #expect(env.exitCode == 64 && env.err.hasPrefix("dosetap: invalid DOSETAP_LOG_LEVEL 'chatty'"), "\(env.err)")
    }

    /// Every command's help, walked from the root's list of subcommands.
    func helps(_ cli: CLI, _ path: [String] = []) async throws -> [([String], String)] {
        let r = try await cli.run(path + ["--help"])
        #expect(r.exitCode == 0, "\(path)")
        var all = [(path, r.out)]
        guard let section = r.out.range(of: "SUBCOMMANDS:\n") else { return all }
        for line in r.out[section.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { continue }
            let sub = String(name)
            if sub == "help" || sub.hasPrefix("See") { continue }
            all += try await helps(cli, path + [sub])
        }
        return all
    }

    @Test("--config only on the commands that read config.toml; no help says its default twice")
    func helpTexts() async throws {
        let cli = try CLI()
        let all = try await helps(cli)
        #expect(all.count > 40, "walked \(all.count) helps")
        let readers: Set<[String]> = [["agent"], ["web", "link"], ["web", "open"], ["alarm", "backup"],
                                      ["alerts", "show"], ["alerts", "set"], ["alerts", "source"], ["alerts", "snooze"],
                                      ["alerts", "history"], ["alerts", "template"]]
        for (path, text) in all {
            let flat = text.replacingOccurrences(of: "\n", with: " ")
            let hasConfig = text.contains("--config <config>")
            if text.contains("USAGE:"), !text.contains("SUBCOMMANDS:") {
                #expect(hasConfig == readers.contains(path), "\(path): --config \(hasConfig ? "offered" : "missing")")
            }
            // "(default: medium). (default: medium)": a default written in the help and added again by the parser.
            let defaults = flat.matches(of: #/\(default:[^)]*\)\.?\s*\(default:/#)
            #expect(defaults.isEmpty, "\(path): \(flat)")
        }
    }

    /// A command without a `commandName` is named by ArgumentParser through `String(describing:)`, a dynamic
    /// cast that scans every protocol conformance of the binary at each start (docs/performance.md,
    /// "One-shot commands"). Every command of the tree names itself.
    @Test("every command's configuration names the command, so starting up casts nothing")
    func commandsAreNamed() throws {
        let folder = Fixtures.packageRoot.appendingPathComponent("Sources/dosetap")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        var configurations = 0
        var unnamed: [String] = []
        for file in files {
            let lines = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where line.contains("static let configuration = CommandConfiguration(") {
                configurations += 1
                // The name is the first argument: on the same line, or the next one.
                let head = lines[index...].prefix(2).joined(separator: " ")
                if !head.contains("commandName:") { unnamed.append("\(file):\(index + 1)") }
            }
        }
        #expect(configurations >= 60, "found \(configurations) command configurations")
        #expect(unnamed.isEmpty, "commands without a commandName: \(unnamed)")
    }
}
