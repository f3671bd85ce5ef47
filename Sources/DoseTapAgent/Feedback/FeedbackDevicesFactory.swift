import DoseTapCore
import DoseTapLinux
import Foundation
import Logging

/// A player for machines with no audio player installed: says so when asked to play.
struct MissingSoundPlayer: SoundPlayer {
    func play(_ sound: SoundInfo) async throws {
        throw SoundPlayerError("no audio player found (install pipewire-bin, pulseaudio-utils, sox or alsa-utils)")
    }
    func stop() {}
}

/// The real devices of this machine: the vibration motor (if any), the sound themes, an audio player,
/// the built-in beep, and (when asked and a session bus exists) desktop notifications. The motor is
/// followed through `udev` (the agent's shared client) or, without one, a udev client of its own.
public func makeFeedbackDevices(logger: Logger, desktop: Bool, udev: UdevClient? = nil) throws -> FeedbackDevices {
    let haptics: ForceFeedbackHaptics
    do {
        haptics = try udev.map { ForceFeedbackHaptics(udev: $0, logger: logger) } ?? ForceFeedbackHaptics(logger: logger)
    } catch {
        logger.info("no vibration motor: haptics not supported on this device", metadata: ["error": "\(error)"])
        haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(nil), logger: logger)
    }
    let player: any SoundPlayer
    do {
        player = try SubprocessSoundPlayer(device: ProcessInfo.processInfo.environment["DOSETAP_AUDIO_DEVICE"], logger: logger)
    } catch {
        logger.warning("no audio player: sounds cannot play", metadata: ["error": "\(error)"])
        player = MissingSoundPlayer()
    }
    let beep: SoundInfo
    do {
        beep = try BuiltinBeep.sound()
    } catch {
        throw SoundPlayerError("cannot write the built-in beep: \(error)")
    }
    return FeedbackDevices(haptics: haptics, catalog: ThemeSoundCatalog(), player: player, beep: beep,
                           desktop: desktop ? DesktopNotifications.sessionIfAvailable(logger: logger) : nil)
}
