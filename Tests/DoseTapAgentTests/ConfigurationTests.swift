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

    @Test("the edges of poll_seconds are accepted")
    func pollEdges() throws {
        #expect(try AgentConfiguration.parse("[battery]\npoll_seconds = 60").pollSeconds == 60)
        #expect(try AgentConfiguration.parse("[battery]\npoll_seconds = 3600").pollSeconds == 3600)
    }
}
