import Foundation
import Testing

/// `dosetap feedback`, `sounds` and `haptics`, the real binary. This machine has no vibration motor and
/// no sound card: sounds play to the ALSA null device.
@Suite("dosetap feedback, sounds, haptics (the real binary)")
struct FeedbackCLITests {
    let audio = ["DOSETAP_AUDIO_DEVICE": "null"]

    func resolve(_ cli: CLI, _ event: String) async throws -> [String: Any] {
        let r = try await cli.run(["feedback", "resolve", event, "--json"], env: audio)
        #expect(r.exitCode == 0, "\(r.err)")
        return try cli.json(r.out)
    }

    @Test("first run: haptics on at medium, no sound chosen; the plan on a machine without a motor")
    func defaults() async throws {
        let cli = try CLI()
        let show = try cli.json(try await cli.run(["feedback", "show", "--json"], env: audio).out)
        let global = try #require(show["global"] as? [String: Any])
        #expect(global["sound"] is NSNull)
        #expect(global["haptics"] as? Bool == true)
        #expect(global["intensity"] as? String == "medium")
        #expect(global["quiet"] as? Bool == false)
        #expect(global["hapticsSupported"] as? Bool == false)
        let events = try #require(show["events"] as? [String: Any])
        #expect(events.keys.sorted() == ["action-rejected", "alarm", "battery-nudge", "dose-closed", "dose-recorded",
                                         "dose-reminder", "dose-urgent", "dose-window-open", "usage-alert"])
        let text = try await cli.run(["feedback", "show"], env: audio)
        #expect(text.out.contains("Not supported on this device"))

        let plan = try await resolve(cli, "dose-reminder")
        #expect(plan.keys.sorted() == ["chime", "event", "haptics", "muted", "sound", "warnings"])
        #expect(plan["event"] as? String == "dose-reminder")
        #expect(plan["chime"] as? Bool == true)
        #expect(plan["sound"] as? String == "builtin-beep")
        #expect(plan["haptics"] is NSNull) // no motor here
        #expect(plan["muted"] as? Bool == false)
        #expect((plan["warnings"] as? [String])?.isEmpty == true)
    }

    @Test("chime off: silent whatever else is set")
    func chimeOff() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["feedback", "event", "dose-reminder", "--chime", "off", "--sound", "bell"], env: audio).exitCode == 0)
        let plan = try await resolve(cli, "dose-reminder")
        #expect(plan["chime"] as? Bool == false)
        #expect(plan["sound"] is NSNull && plan["haptics"] is NSNull)
        #expect((plan["warnings"] as? [String])?.isEmpty == true)
    }

    @Test("no sound and no motor: the plan warns that nothing will happen")
    func nothingWillHappen() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["feedback", "set", "--no-sound"], env: audio).exitCode == 0)
        let plan = try await resolve(cli, "dose-window-open")
        #expect(plan["sound"] is NSNull)
        #expect(plan["warnings"] as? [String] == ["No notification will occur: enable sound or haptics"])
        // An event's own sound still plays.
        #expect(try await cli.run(["feedback", "event", "dose-window-open", "--sound", "bell"], env: audio).exitCode == 0)
        #expect(try await resolve(cli, "dose-window-open")["sound"] as? String == "bell")
        #expect(try await cli.run(["feedback", "event", "dose-window-open", "--sound", "default"], env: audio).exitCode == 0)
        #expect(try await resolve(cli, "dose-window-open")["sound"] is NSNull)
    }

    @Test("quiet mode mutes the reminder, never the urgent alert or the alarm; shared with setup")
    func quiet() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["feedback", "set", "--quiet", "on", "--sound", "bell"], env: audio).exitCode == 0)
        let reminder = try await resolve(cli, "dose-reminder")
        #expect(reminder["muted"] as? Bool == true)
        #expect(reminder["sound"] is NSNull)
        for event in ["dose-urgent", "alarm"] {
            let plan = try await resolve(cli, event)
            #expect(plan["muted"] as? Bool == false)
            #expect(plan["sound"] as? String == "bell")
        }
        #expect(try cli.json(try await cli.run(["setup", "--show", "--json"]).out)["quietMode"] as? Bool == true)
    }

    @Test("validation: unknown sound, intensity and event names are one-line errors; nothing is saved; a malformed value is a usage error (64), a sound this machine lacks an error (1)", arguments: [
        (["feedback", "set", "--sound", "no-such-sound"], 1), (["feedback", "set", "--intensity", "max"], 64), (["feedback", "set"], 64),
        (["feedback", "set", "--sound", "bell", "--no-sound"], 64), (["feedback", "event", "dose-remindr", "--chime", "off"], 64),
        (["feedback", "event", "dose-reminder", "--intensity", "loud"], 64), (["feedback", "event", "alarm", "--sound", "nope"], 1),
        (["feedback", "event", "alarm", "--haptics", "maybe"], 64), (["feedback", "resolve", "bedtime"], 64), (["haptics", "test", "--intensity", "max"], 64),
        (["sounds", "preview", "no-such-sound"], 1),
    ] as [([String], Int32)])
    func validation(args: [String], code: Int32) async throws {
        let cli = try CLI()
        let r = try await cli.run(args, env: audio)
        #expect(r.exitCode == code, "\(args): \(r.err)")
        #expect(r.err.hasPrefix("dosetap: ") && r.err.split(separator: "\n").count == 1, "\(r.err)")
        let plan = try await resolve(cli, "dose-reminder")
        #expect(plan["sound"] as? String == "builtin-beep")
    }

    @Test("editing a reminder event while tonight's timer runs: it says the change applies next time")
    func timerRunning() async throws {
        let cli = try CLI()
        let quietNight = try await cli.run(["feedback", "event", "dose-reminder", "--intensity", "strong"], fakeTime: "2026-01-15 21:00:00",
                                           tz: "America/New_York", env: audio)
        #expect(!quietNight.out.contains("Timer is running"))
        _ = try await cli.dose(["dose", "take"], at: "2026-01-15 22:30:00")
        let running = try await cli.run(["feedback", "event", "dose-reminder", "--intensity", "light"], fakeTime: "2026-01-15 23:00:00",
                                        tz: "America/New_York", env: audio)
        #expect(running.out.contains("Timer is running, changes will apply next time"))
        // An event with no timer of its own (dose-recorded) does not say so.
        let other = try await cli.run(["feedback", "event", "dose-recorded", "--intensity", "light"], fakeTime: "2026-01-15 23:00:00",
                                      tz: "America/New_York", env: audio)
        #expect(!other.out.contains("Timer is running"))
    }

    @Test("sounds list: the freedesktop theme's event sounds and the built-in beep")
    func soundsList() async throws {
        let cli = try CLI()
        let r = try await cli.run(["sounds", "list", "--json"], env: audio)
        #expect(r.exitCode == 0, "\(r.err)")
        let sounds = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: String]])
        let bell = try #require(sounds.first { $0["name"] == "bell" })
        #expect(bell["theme"] == "freedesktop")
        #expect(FileManager.default.fileExists(atPath: bell["path"] ?? ""))
        #expect(sounds.contains { $0["name"] == "alarm-clock-elapsed" })
        #expect(sounds.contains { $0["name"] == "builtin-beep" })
    }

    @Test("sounds preview plays to the end; haptics test without a motor says so and exits 0")
    func previewAndHaptics() async throws {
        let cli = try CLI()
        for name in ["builtin-beep", "bell"] {
            let r = try await cli.run(["sounds", "preview", name], env: audio)
            #expect(r.exitCode == 0, "\(name): \(r.err)")
        }
        let h = try await cli.run(["haptics", "test", "--intensity", "strong"], env: audio)
        #expect(h.exitCode == 0)
        #expect(h.out == "Not supported on this device\n")
    }
}
