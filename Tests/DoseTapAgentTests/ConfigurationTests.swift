import DoseTapAgent
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
            """)
        #expect(c.alarm == (try TimeOfDay(hour: 5, minute: 30)))
        #expect(c.pollSeconds == 120)
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
        ("[alarm]\ntime = [\"06:30\"]", "line 2: expected a [table]"),
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
}
