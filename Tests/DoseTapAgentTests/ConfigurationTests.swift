import DoseTapAgent
import DoseTapApp
import DoseTapCore
import Foundation
import Testing

@Suite("config.toml")
struct ConfigurationTests {
    @Test("an empty file and a missing file are the defaults")
    func defaults() throws {
        #expect(try AgentConfiguration.parse("") == AgentConfiguration())
        let missing = URL(fileURLWithPath: "/nonexistent/dosetap/config.toml")
        #expect(try AgentConfiguration.load(from: missing) == AgentConfiguration(alarm: nil, pollSeconds: 60))
    }

    @Test("a full file")
    func full() throws {
        let c = try AgentConfiguration.parse("""
            # bedside Pi
            [alarm]
            time = "05:30"

            [battery]
            poll_seconds = 120
            guard = "nudge"
            """)
        #expect(c.alarm == (try TimeOfDay(hour: 5, minute: 30)))
        #expect(c.pollSeconds == 120)
        #expect(c.sleepGuard == .nudge)
    }

    @Test("[battery] guard: sleep by default; each of sleep, nudge, off")
    func sleepGuard() throws {
        #expect(try AgentConfiguration.parse("").sleepGuard == .sleep)
        for mode in SleepGuardMode.allCases {
            #expect(try AgentConfiguration.parse("[battery]\nguard = \"\(mode.rawValue)\"").sleepGuard == mode)
        }
    }

    @Test("bad files are refused in one line that names the problem", arguments: [
        ("[alarm]\ntime = \"25:00\"", "alarm.time: invalid time '25:00'"),
        ("[alarm]\ntime = 630", "alarm.time must be a string"),
        ("[alarm]\ntiem = \"06:30\"", "unknown key 'alarm.tiem'"),
        ("[alarms]\ntime = \"06:30\"", "unknown section 'alarms'"),
        ("alarm = \"06:30\"", "'alarm' must be a table"),
        ("[battery]\npoll_seconds = 59", "battery.poll_seconds must be a whole number from 60 to 3600"),
        ("[battery]\npoll_seconds = 3601", "battery.poll_seconds must be a whole number from 60 to 3600"),
        ("[battery]\npoll_seconds = nan", "battery.poll_seconds must be a whole number"),
        ("[battery]\npoll_seconds = \"60\"", "battery.poll_seconds must be a whole number"),
        ("[battery]\nguard = \"Sleep\"", "battery.guard must be one of \"sleep\", \"nudge\", \"off\""),
        ("[battery]\nguard = \"sl\u{0435}ep\"", "battery.guard must be one of"), // a Cyrillic е
        ("[battery]\nguard = \"\"", "battery.guard must be one of"),
        ("[battery]\nguard = true", "battery.guard must be one of"),
        ("[battery]\nguard = 1", "battery.guard must be one of"),
        ("[alarm\ntime = \"06:30\"", "config.toml:"),
    ])
    func invalid(text: String, message: String) {
        #expect {
            _ = try AgentConfiguration.parse(text)
        } throws: { error in
            let line = "\(error)"
            return line.contains(message) && !line.contains("\n")
        }
    }

    /// Finding: a dangling symlink or a symlink loop was "no file", so the agent ran on the defaults
    /// (and on SIGHUP dropped its configuration for them).
    @Test("only a missing file is the defaults: dangling symlinks, loops, directories and FIFOs are errors naming the path")
    func unreadable() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func expectError(_ file: URL, _ cause: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(sourceLocation: sourceLocation) {
                _ = try AgentConfiguration.load(from: file)
            } throws: { error in
                let line = "\(error)"
                return line.hasPrefix(file.path + ": ") && line.contains(cause) && !line.contains("\n")
            }
        }
        // Missing: the file, and a whole missing directory above it.
        #expect(try AgentConfiguration.load(from: dir.appendingPathComponent("config.toml")) == AgentConfiguration())
        #expect(try AgentConfiguration.load(from: dir.appendingPathComponent("no/such/config.toml")) == AgentConfiguration())

        let dangling = dir.appendingPathComponent("dangling.toml")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: dir.appendingPathComponent("gone.toml").path)
        expectError(dangling, "symlink to nothing")

        let loop = dir.appendingPathComponent("loop.toml")
        try FileManager.default.createSymbolicLink(atPath: loop.path, withDestinationPath: loop.path)
        expectError(loop, "symlink loop")
        expectError(loop.appendingPathComponent("config.toml"), "symlink loop")

        let danglingDirectory = dir.appendingPathComponent("dosetap")
        try FileManager.default.createSymbolicLink(atPath: danglingDirectory.path, withDestinationPath: dir.appendingPathComponent("moved").path)
        expectError(danglingDirectory.appendingPathComponent("config.toml"), "symlink to nothing")

        let directory = dir.appendingPathComponent("directory.toml")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        expectError(directory, "is a directory")

        let file = dir.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        expectError(file.appendingPathComponent("config.toml"), "not a directory")

        let fifo = dir.appendingPathComponent("fifo.toml")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        expectError(fifo, "not a regular file")

        let binary = dir.appendingPathComponent("binary.toml")
        try Data([0xFF, 0xFE, 0x00]).write(to: binary)
        expectError(binary, "not UTF-8")

        // A symlink to a real file is read through.
        let real = dir.appendingPathComponent("real.toml")
        try Data("[alarm]\ntime = \"06:30\"\n".utf8).write(to: real)
        let link = dir.appendingPathComponent("link.toml")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
        #expect(try AgentConfiguration.load(from: link).alarm == (try TimeOfDay(hour: 6, minute: 30)))
    }

    /// Inputs Fuzz/Config found: each made toml++ (under TOMLKit) fail an assertion and abort the process.
    /// They are refused, in one line, before toml++ sees them.
    @Test("malformed TOML that crashed toml++ is refused in one line", arguments: [
        ("[!]", "line 1: expected a [table]"),
        ("[.battery]\npoll_seconds = 60", "line 1: expected a [table]"),
        ("[ é]", "line 1: expected a [table]"),
        ("[[#]]", "line 1: expected a [table]"),
        ("[[\nalarm]", "line 1: expected a [table]"),
        ("[battery]\npoll_seconds = 60\n[\u{E6}\u{E6}battery]", "line 3: expected a [table]"),
        ("\ntime = [}\n", "line 2: expected a [table]"),
        ("[alarm]\ntime = [[\"06:30\"]]", "line 2: expected a [table]"),
        ("[alarm]\ntime = [\"06:30\"", "line 2: expected a [table]"),
        ("[[alerts.command]\nname = \"x\"", "line 1: expected a [table]"),
        ("[[alerts.command]]\ncommand = [\"a\", {b = 1}]", "line 2: expected a [table]"),
        ("[alarm]\ntime = \"\"\"06:30\"\"\"", "line 2: expected a [table]"),
        ("[alarm]\ntime = \"06:30\u{0}\"", "line 2: control character \\0 is not allowed"),
    ])
    func fuzzCrashes(text: String, message: String) {
        #expect {
            _ = try AgentConfiguration.parse(text)
        } throws: { error in
            let line = "\(error)"
            return line.hasPrefix("config.toml: ") && line.contains(message) && !line.contains("\n")
        }
    }

    /// Fuzz/Config: toml++'s own message quoted the character it saw, here a line break.
    @Test("toml++'s error message stays on one line")
    func tomlMessageOneLine() {
        #expect {
            _ = try AgentConfiguration.parse("time = i\n")
        } throws: { error in
            let line = "\(error)"
            return line.hasPrefix("config.toml: ") && !line.contains("\n")
        }
    }

    /// Fuzz/Config: TOML escapes put line breaks into a value or a key, which the errors quote.
    @Test("a quoted value or key with a line break still gives a one-line error", arguments: [
        ("[alarm]\ntime = \"46:Uo\\n\\t.\"", "alarm.time: invalid time '46:Uo\\n\\t.'"),
        ("[\"al\\narm\"]\ntime = \"06:30\"", "unknown section 'al\\narm'"),
        ("[battery]\n\"poll\\r\" = 60", "unknown key 'battery.poll\\r'"),
    ])
    func quotedLineBreaks(text: String, message: String) {
        #expect {
            _ = try AgentConfiguration.parse(text)
        } throws: { error in
            let line = "\(error)"
            return line.contains(message) && !line.contains("\n") && !line.contains("\r")
        }
    }

    @Test("the TOML the subset keeps: comments, dotted and quoted keys, inline tables, CRLF")
    func subsetKeepsValidFiles() throws {
        let dotted = try AgentConfiguration.parse("alarm.time = \"06:30\" # wake\r\nbattery . poll_seconds = 120\r\n")
        #expect(dotted == AgentConfiguration(alarm: try TimeOfDay(hour: 6, minute: 30), pollSeconds: 120))
        let inline = try AgentConfiguration.parse("alarm = { time = '07:05' }\n\"battery\" = { \"poll_seconds\" = 3600 }\n")
        #expect(inline == AgentConfiguration(alarm: try TimeOfDay(hour: 7, minute: 5), pollSeconds: 3600))
        let spaced = try AgentConfiguration.parse("\u{FEFF}  [ alarm ]   # the alarm\n\ttime=\"05:00\"\n\n# end\n")
        #expect(spaced.alarm == (try TimeOfDay(hour: 5, minute: 0)))
    }

    @Test("the edges of poll_seconds are accepted")
    func pollEdges() throws {
        #expect(try AgentConfiguration.parse("[battery]\npoll_seconds = 60").pollSeconds == 60)
        #expect(try AgentConfiguration.parse("[battery]\npoll_seconds = 3600").pollSeconds == 3600)
    }

    @Test("[[alerts.command]]: name, argv, interval and timeout; several; the defaults")
    func alertCommands() throws {
        let c = try AgentConfiguration.parse("""
            [[alerts.command]]
            name = "ups"
            command = ["upsc", "ups@localhost", "battery.charge"]
            interval = 120
            timeout = 5

            [[alerts.command]]
            name = "API quota"
            command = ['/usr/local/bin/quota-left', "--json",]
            """)
        #expect(c.alertCommands == [AlertCommandSource(name: "ups", argv: ["upsc", "ups@localhost", "battery.charge"], interval: 120, timeout: 5),
                                    AlertCommandSource(name: "API quota", argv: ["/usr/local/bin/quota-left", "--json"], interval: 300, timeout: 10)])
    }

    @Test("bad [[alerts.command]] entries are refused in one line", arguments: [
        ("[[alerts.command]]\nname = \"ups\"", "command must be a list"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = []", "command must be a list"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"upsc\", 3]", "every item of command must be a non-empty string"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"\"]", "every item of command must be a non-empty string"),
        ("[[alerts.command]]\ncommand = [\"upsc\"]", "name must be a few words"),
        ("[[alerts.command]]\nname = \"  \"\ncommand = [\"upsc\"]", "name must be a few words"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"upsc\"]\ninterval = 59", "interval must be a whole number of seconds from 60"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"upsc\"]\ninterval = 1e9", "interval must be"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"upsc\"]\ntimeout = 0", "timeout must be a whole number of seconds from 1 to 60"),
        ("[[alerts.command]]\nname = \"ups\"\ncommand = [\"upsc\"]\nshell = true", "unknown key 'shell'"),
        ("[[alerts.command]]\nname = \"a\"\ncommand = [\"x\"]\n[[alerts.command]]\nname = \"a\"\ncommand = [\"y\"]", "name 'a' is used twice"),
        ("[alerts]\ncommand = \"upsc\"", "alerts.command must be a list of [[alerts.command]] tables"),
        ("[alerts]\nthreshold = 3", "unknown key 'alerts.threshold'"),
        ("[alarm]\ntime = [\"06:30\"]", "alarm.time must be a string"),
    ])
    func badAlertCommands(text: String, message: String) {
        #expect {
            _ = try AgentConfiguration.parse(text)
        } throws: { error in
            let line = "\(error)"
            return line.hasPrefix("config.toml: ") && line.contains(message) && !line.contains("\n")
        }
    }

    @Test("a command's output: the first number is the percentage remaining, 0…100", arguments: [
        ("42\n", 42.0), ("12.5%", 12.5), ("battery.charge: 100", 100), ("0", 0), ("3 of 4 left", 3), ("7.", 7), ("\u{1b}[1;32m58\u{1b}[0m%", 58),
        // #25 §10: an OSC (a window title) with digits before the figure was read as 0 %, a false critical alert.
        ("\u{1b}]0;ups 0 status\u{07}87% left", 87), ("\u{1b}]2;title 3\u{1b}\\64%", 64), ("\u{9d}0;x 1\u{9c}55", 55),
        ("\u{1b}P1$r0m\u{1b}\\42", 42), ("\u{1b}(B\u{1b}[?25l71", 71), ("\u{1b}[38;5;196m\u{1b}[1m33\u{1b}[m", 33),
    ] as [(String, Double)])
    func remaining(output: String, value: Double) {
        #expect(AlertCommandSource.remaining(in: output) == value)
    }

    @Test("no usable percentage", arguments: ["", "none", "-5", "101", "١٢", "nan", "inf", "\u{1b}[31m",
                                              "\u{1b}]0;87% left", "\u{1b}]0;87\u{07}"])
    func noRemaining(output: String) {
        #expect(AlertCommandSource.remaining(in: output) == nil)
    }

    @Test("[household] and [mqtt]: names, the broker URL, and a password file others can read is refused")
    func household() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-mqtt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let secret = dir.appendingPathComponent("mqtt.pass")
        try Data("s3cret\n".utf8).write(to: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        let c = try AgentConfiguration.parse("""
            [household]
            name = "Jen's family"
            device = "bedroom-pi"
            [mqtt]
            url = "mqtt://pi.local:1883"
            username = "dosetap"
            password_file = "\(secret.path)"
            """)
        #expect(c.householdName == "Jen's family" && c.device == "bedroom-pi")
        #expect(c.mqtt == MQTTSettings(url: "mqtt://pi.local:1883", username: "dosetap", passwordFile: secret.path, caFile: nil))
        #expect(AgentConfiguration().device.isEmpty == false, "the host name by default")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret.path)
        #expect {
            _ = try AgentConfiguration.parse("[mqtt]\nurl = \"mqtt://pi.local\"\npassword_file = \"\(secret.path)\"")
        } throws: { "\($0)".contains("is readable by others: chmod 600") }
        for (text, message) in [("[mqtt]\nurl = \"http://pi.local\"", "mqtt.url must be mqtt://"),
                                ("[mqtt]\nurl = \"mqtt://pi\"\npassword = \"x\"", "unknown key 'mqtt.password'"),
                                ("[household]\ndevice = \"bed room\"", "household.device must be a name"),
                                ("[mqtt]\nurl = \"mqtt://pi\"\npassword_file = \"relative\"", "must be an absolute path")] {
            #expect { _ = try AgentConfiguration.parse(text) } throws: { "\($0)".contains(message) && !"\($0)".contains("\n") }
        }
    }

    @Test("[web] listen: the default loopback address, IPv4 and IPv6, an empty list, and bad addresses in one line")
    func webListen() throws {
        #expect(try AgentConfiguration.parse("").webListen == [WebListenAddress(host: "127.0.0.1", port: 8765)])
        let c = try AgentConfiguration.parse("[web]\nlisten = [\"0.0.0.0:8765\", \"[::1]:9000\", \"0.0.0.0:8765\"]")
        #expect(c.webListen == [WebListenAddress(host: "0.0.0.0", port: 8765), WebListenAddress(host: "::1", port: 9000)])
        #expect(c.webListen.map(\.description) == ["0.0.0.0:8765", "[::1]:9000"])
        #expect(c.webListen[0].isWildcard && c.webListen[1].isLoopback)
        #expect(try AgentConfiguration.parse("[web]\nlisten = []").webListen.isEmpty)
        for (text, message) in [
            ("listen = \"127.0.0.1:8765\"", "web.listen must be a list"),
            ("listen = [8765]", "every item must be a string"),
            ("listen = [\"localhost:8765\"]", "'localhost' is not an IPv4 address"),
            ("listen = [\"127.0.0.1\"]", "is not HOST:PORT"),
            ("listen = [\"127.0.0.1:0\"]", "the port must be a number from 1 to 65535"),
            ("listen = [\"127.0.0.1:65536\"]", "the port must be a number from 1 to 65535"),
            ("listen = [\"127.0.0.1:+80\"]", "the port must be a number"),
            ("listen = [\"[::1:8765\"]", "is not [IPv6]:PORT"),
            ("port = 1", "unknown key 'web.port'"),
        ] {
            #expect(throws: ConfigurationError.self) { try AgentConfiguration.parse("[web]\n" + text) }
            do {
                _ = try AgentConfiguration.parse("[web]\n" + text)
            } catch {
                #expect(error.description.contains(message), "\(text): \(error.description)")
                #expect(!error.description.contains("\n"))
            }
        }
    }

    @Test("[web] rate_burst and rate_refuse_above: 60 and 200 by default; whole numbers, burst not above refuse-above")
    func webRateLimit() throws {
        let plain = try AgentConfiguration.parse("")
        #expect(plain.webRateBurst == 60 && plain.webRateRefuseAbove == 200)
        let raised = try AgentConfiguration.parse("[web]\nrate_burst = 100000\nrate_refuse_above = 100000000")
        #expect(raised.webRateBurst == 100_000 && raised.webRateRefuseAbove == 100_000_000)
        for (text, message) in [
            ("rate_burst = 0", "web.rate_burst must be a whole number from 1 to 100000000"),
            ("rate_refuse_above = \"lots\"", "web.rate_refuse_above must be a whole number"),
            ("rate_burst = 300", "web.rate_burst (300) must not be above web.rate_refuse_above (200)"),
        ] {
            do {
                _ = try AgentConfiguration.parse("[web]\n" + text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.description.contains(message), "\(text): \(error.description)")
            }
        }
    }
}
