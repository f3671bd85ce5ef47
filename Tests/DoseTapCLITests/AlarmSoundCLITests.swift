import DoseTapLinux
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// #32: the alarm is heard with nothing but the package's own dependencies — no pw-play, paplay, play or
/// aplay on PATH, the built-in beep through ALSA from the process (into ALSA's file sink here, read back) —
/// and a machine that truly cannot make a sound says so: "This machine cannot play the alarm: …".
@Suite("The alarm heard without a player program; the cannot-play warning (the real binary)")
struct AlarmSoundCLITests {
    /// No player program anywhere on PATH (the binary is run by its absolute path).
    static let noPlayers = ["PATH": "/nonexistent"]
    /// A machine with no sound card, whatever this one has: ALSA's default device on a card that does not exist
    /// (hw-fixtures/sound/README.md), no sound server, no player.
    static let noSound = ["PATH": "/nonexistent", "DOSETAP_AUDIO_DEVICE": "", "XDG_RUNTIME_DIR": "/nonexistent",
                          "ALSA_CONFIG_PATH": Fixtures.root.appendingPathComponent("sound/alsa-no-card.conf").path]

    static func sink(_ cli: CLI, _ name: String) -> (device: String, path: String) {
        let path = cli.home.appendingPathComponent(name).path
        return ("file:FILE=\(path),FORMAT=wav", path)
    }

    @Test("feedback preview alarm: the built-in beep's samples reach ALSA's file sink, no player on PATH")
    func previewAlarm() async throws {
        let cli = try CLI()
        let (device, path) = Self.sink(cli, "alarm.wav")
        let r = try await cli.run(["feedback", "preview", "alarm"], env: Self.noPlayers.merging(["DOSETAP_AUDIO_DEVICE": device]) { $1 })
        #expect(r.exitCode == 0, "\(r.err)")
        #expect(r.out == "alarm: played builtin-beep\n")
        let written = try WAVAudio(contentsOf: path)
        #expect(written == (try WAVAudio(data: BuiltinBeep.wav)), "the first sample and every one after it")
    }

    @Test("an alarm sound this path cannot play (Ogg) hands over to the beep; a chime-off event plays nothing; a bad event is a usage error")
    func fallbackAndNothing() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["feedback", "event", "alarm", "--sound", "alarm-clock-elapsed"]).exitCode == 0)
        let (device, path) = Self.sink(cli, "ogg.wav")
        let r = try await cli.run(["feedback", "preview", "alarm"], env: Self.noPlayers.merging(["DOSETAP_AUDIO_DEVICE": device]) { $1 })
        #expect(r.exitCode == 0, "\(r.err)")
        #expect(r.out == "alarm: played builtin-beep (instead of alarm-clock-elapsed, which cannot play here)\n")
        #expect(try WAVAudio(contentsOf: path).frames == 14_400)
        // The same sound with a player for Ogg (sox, a test dependency) plays as itself.
        let sox = try await cli.run(["feedback", "preview", "alarm"])
        #expect(sox.exitCode == 0 && sox.out == "alarm: played alarm-clock-elapsed\n", "\(sox.out) \(sox.err)")

        #expect(try await cli.run(["feedback", "event", "dose-reminder", "--chime", "off"]).exitCode == 0)
        let silent = try await cli.run(["feedback", "preview", "dose-reminder"])
        #expect(silent.exitCode == 0 && silent.out == "dose-reminder: nothing to play (chime off)\n", "\(silent.out)")
        let bad = try await cli.run(["feedback", "preview", "alarm\u{1b}[2J"])
        #expect(bad.exitCode == 64 && bad.err.contains("\\x1b[2J") && !bad.err.contains("\u{1b}"), "\(bad.err)")
    }

    @Test("no output at all: preview fails in one line, exit 1")
    func previewNowhere() async throws {
        let cli = try CLI()
        let r = try await cli.run(["feedback", "preview", "alarm"], scenario: "sound/no-sound-card", env: Self.noSound)
        #expect(r.exitCode == 1)
        #expect(r.err == "dosetap: cannot play the alarm feedback: alsa: no sound card found; " + SoundPlayerError.outputHint + "\n", "\(r.err)")
    }

    static let noCardLine = "This machine cannot play the alarm: it has no sound card (udev lists none) and no sound server (PipeWire or PulseAudio) is running. "
        + "Fix: connect a speaker (the audio jack, HDMI or a USB sound card) or turn on the onboard audio (Raspberry Pi: dtparam=audio=on in /boot/firmware/config.txt); "
        + "until then the alarm rings only with what else this machine has: its vibration motor, its notification, and the household's devices when they are set up"

    @Test("no sound card (a umockdev recording): alarm add, on and list say so; --json on standard error; nothing when ALSA's output opens")
    func warning() async throws {
        let cli = try CLI()
        let scenario = "sound/no-sound-card"
        let added = try await cli.run(["alarm", "add", "06:30"], scenario: scenario, env: Self.noSound)
        #expect(added.exitCode == 0, "\(added.err)")
        let lines = added.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[1] == Self.noCardLine, "\(added.out)")
        let listed = try await cli.run(["alarm", "list", "--json"], scenario: scenario, env: Self.noSound)
        #expect(listed.exitCode == 0 && listed.err == Self.noCardLine + "\n", "\(listed.err)")
        #expect(!listed.out.contains("cannot play"))
        #expect(try await cli.run(["alarm", "off", "1"], scenario: scenario, env: Self.noSound).exitCode == 0)
        let off = try await cli.run(["alarm", "list"], scenario: scenario, env: Self.noSound)
        #expect(!off.out.contains("cannot play"), "no enabled alarm, nothing to warn about: \(off.out)")
        let on = try await cli.run(["alarm", "on", "1"], scenario: scenario, env: Self.noSound)
        #expect(on.out.contains(Self.noCardLine), "\(on.out)")
        // An output ALSA opens (its null device, named): no warning.
        let named = try await cli.run(["alarm", "list"], scenario: scenario, env: Self.noSound.merging(["DOSETAP_AUDIO_DEVICE": "null"]) { $1 })
        #expect(!named.out.contains("cannot play"), "\(named.out)")
    }

    @Test("a sound card udev lists but ALSA cannot open (umockdev fakes no ioctl): ALSA's reason, not 'no sound card'")
    func cardThatDoesNotOpen() async throws {
        let cli = try CLI()
        let added = try await cli.run(["alarm", "add", "06:30"], scenario: "sound/hda-card", env: Self.noSound)
        #expect(added.exitCode == 0, "\(added.err)")
        #expect(added.out.contains("This machine cannot play the alarm: ALSA's default output cannot be opened: "), "\(added.out)")
        #expect(!added.out.contains("udev lists none"))
    }
}

extension AlarmSoundCLITests {
    @Test("the agent says it in its log at start, and its finding is the command line's while it runs", .timeLimit(.minutes(2)))
    func agentSaysIt() async throws {
        let cli = try CLI()
        #expect(try await cli.run(["alarm", "add", "06:30"]).exitCode == 0)
        let log = LineBuffer()
        let (exe, argv) = cli.command(["agent"], scenario: "sound/no-sound-card", fakeTime: nil)
        let env = Self.noSound.merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"]) { $1 }
        let result = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(extra: env),
                                              input: .none, output: .discarded, error: .sequence) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
            let said = await log.wait(for: "This machine cannot play the alarm: it has no sound card", timeout: 30)
            #expect(said != nil, "\(log.all.joined(separator: "\n"))")
            // This shell names a device that opens; the agent, which rings, cannot: the agent's finding is shown.
            let status = cli.dataDirectory.appendingPathComponent("sound-status.json").path
            #expect(FileManager.default.fileExists(atPath: status), "written before the line is logged")
            let listed = try await cli.run(["alarm", "list"])
            #expect(listed.out.contains(Self.noCardLine), "\(listed.out)")
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0))
        // The agent gone, the shell's own check: its null device opens.
        let after = try await cli.run(["alarm", "list"])
        #expect(!after.out.contains("cannot play"), "\(after.out)")
    }
}
