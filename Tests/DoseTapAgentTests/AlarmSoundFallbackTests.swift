import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

/// #32: what an alarm rings with when its sound cannot play here — the built-in beep, then the PC speaker.
@Suite("The alarm's sound falls back: its own sound → the built-in beep → the PC speaker")
struct AlarmSoundFallbackTests {
    /// Plays what it is told, except the names it refuses (as a player with no Ogg reader, or no output at all).
    final class RefusingPlayer: SoundPlayer {
        let refused: Set<String>
        let played = Mutex<[String]>([])
        init(refusing refused: Set<String>) { self.refused = refused }
        func play(_ sound: SoundInfo) async throws { try await play(sound, volume: 1) }
        func play(_ sound: SoundInfo, volume: Double) async throws {
            if refused.contains(sound.name) { throw SoundPlayerError("alsa: no sound card found") }
            played.withLock { $0.append(sound.name) }
        }
        func stop() {}
    }

    static let beep = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav")
    static let bell = SoundInfo(name: "alarm-clock-elapsed", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/alarm-clock-elapsed.oga")

    static func devices(_ player: any SoundPlayer, speaker: PCSpeaker?) -> FeedbackDevices {
        FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([bell]), player: player, beep: beep, desktop: nil, speaker: speaker)
    }

    @Test("its own sound when it plays; the beep when it cannot; the beep alone never falls further without a speaker")
    func toBeep() async throws {
        let logger = Logger(label: "test")
        let fine = RefusingPlayer(refusing: [])
        #expect(try await Self.devices(fine, speaker: nil).playAlarmSound(Self.bell, volume: 1, logger: logger).name == Self.bell.name)
        let noOgg = RefusingPlayer(refusing: [Self.bell.name])
        #expect(try await Self.devices(noOgg, speaker: nil).playAlarmSound(Self.bell, volume: 1, logger: logger).name == SoundInfo.builtinBeepName)
        #expect(noOgg.played.withLock { $0 } == [SoundInfo.builtinBeepName])
        let silent = RefusingPlayer(refusing: [Self.bell.name, SoundInfo.builtinBeepName])
        await #expect(throws: SoundPlayerError.self) {
            _ = try await Self.devices(silent, speaker: nil).playAlarmSound(Self.bell, volume: 1, logger: logger)
        }
    }

    @Test("no output at all but a PC speaker: it beeps (SND_TONE 880, then 0), and the ring keeps beeping it")
    func toSpeaker() async throws {
        let node = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-spkr-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: node, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: node) }
        let speaker = PCSpeaker(devnode: node, name: "PC Speaker")
        let silent = RefusingPlayer(refusing: [Self.bell.name, SoundInfo.builtinBeepName])
        let devices = Self.devices(silent, speaker: speaker)
        let played = try await devices.playAlarmSound(Self.bell, volume: 0.3, logger: Logger(label: "test"))
        #expect(played == speaker.sound)
        #expect(try Data(contentsOf: URL(fileURLWithPath: node)).count == 2 * 24, "the tone started and ended")
        // The next loop of the ring goes straight to the speaker (each tone opens the node anew: from offset 0).
        #expect(truncate(node, 0) == 0)
        #expect(try await devices.playAlarmSound(played, volume: 1, logger: Logger(label: "test")) == speaker.sound)
        #expect(try Data(contentsOf: URL(fileURLWithPath: node)).count == 2 * 24)
        #expect(silent.played.withLock { $0 }.isEmpty)
        // A speaker that cannot be opened either: both reasons, in one line.
        let gone = Self.devices(silent, speaker: PCSpeaker(devnode: node + ".gone"))
        await #expect {
            _ = try await gone.playAlarmSound(Self.bell, volume: 1, logger: Logger(label: "test"))
        } throws: { error in
            "\(error)".hasPrefix("alsa: no sound card found; pc-speaker: cannot open") && !"\(error)".contains("\n")
        }
    }
}
