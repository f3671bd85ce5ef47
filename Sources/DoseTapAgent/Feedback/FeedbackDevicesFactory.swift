import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging

/// The real devices of this machine: the vibration motor (if any), the sound themes, the audio players,
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
    // pw-play, paplay, play or aplay where installed; the built-in ALSA path (libasound2) always.
    let device = ProcessInfo.processInfo.environment["DOSETAP_AUDIO_DEVICE"].flatMap { $0.isEmpty ? nil : $0 }
    let player = SubprocessSoundPlayer(device: device, logger: logger)
    let beep: SoundInfo
    do {
        beep = try BuiltinBeep.sound()
    } catch {
        throw SoundPlayerError("cannot write the built-in beep: \(error)")
    }
    // The PC speaker or a board's beeper, for an alarm on a machine that cannot play a sound file.
    let speaker = (udev ?? (try? UdevClient(logger: logger))).flatMap { PCSpeaker.find(udev: $0) }
    return FeedbackDevices(haptics: haptics, catalog: ThemeSoundCatalog(), player: player, beep: beep,
                           desktop: desktop ? DesktopNotifications.sessionIfAvailable(logger: logger) : nil, speaker: speaker)
}
