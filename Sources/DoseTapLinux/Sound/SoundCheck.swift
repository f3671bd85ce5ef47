import DoseTapCore
import Foundation

/// Whether this machine has a way to make the alarm's sound, checked without playing anything: the
/// sound cards udev lists, whether a sound server (PipeWire, PulseAudio) is running for this user, which
/// players are installed, and whether ALSA opens the output (`AlsaPlayback.probe`, without blocking).
///
/// It warns only when nothing can play: a sound server with no card may still have a Bluetooth speaker,
/// and a device name for PipeWire (DOSETAP_AUDIO_DEVICE) is not ALSA's to judge while an external player
/// can take it.
public enum SoundCheck {
    /// What the check looks at, gathered from the machine (`observe`) or given by a test.
    public struct Machine: Sendable, Equatable {
        /// udev's sound cards ("card0", …); nil when udev could not be asked.
        public var cards: [String]?
        /// A PipeWire or PulseAudio socket of this user.
        public var soundServer: Bool
        /// pw-play, paplay, play, aplay found on PATH.
        public var externalPlayers: [String]
        /// DOSETAP_AUDIO_DEVICE, when set.
        public var device: String?
        /// Why ALSA cannot open the output (`device`, else "default"), or nil when it opens.
        public var alsaProblem: String?
        /// The PC speaker or a board's beeper, and whether this process may write to it.
        public var speaker: (devnode: String, writable: Bool)?

        public init(cards: [String]?, soundServer: Bool, externalPlayers: [String], device: String?, alsaProblem: String?,
                    speaker: (devnode: String, writable: Bool)? = nil) {
            self.cards = cards
            self.soundServer = soundServer
            self.externalPlayers = externalPlayers
            self.device = device
            self.alsaProblem = alsaProblem
            self.speaker = speaker
        }

        public static func == (a: Machine, b: Machine) -> Bool {
            a.cards == b.cards && a.soundServer == b.soundServer && a.externalPlayers == b.externalPlayers && a.device == b.device
                && a.alsaProblem == b.alsaProblem && a.speaker?.devnode == b.speaker?.devnode && a.speaker?.writable == b.speaker?.writable
        }
    }

    /// The fix for a machine with no output at all.
    static let connectSpeaker = "connect a speaker (the audio jack, HDMI or a USB sound card) or turn on the onboard audio "
        + "(Raspberry Pi: dtparam=audio=on in /boot/firmware/config.txt); until then the alarm rings only with what else this "
        + "machine has: its vibration motor, its notification, and the household's devices when they are set up"

    /// nil when the alarm can be heard (as far as can be told without playing), else why not. A PC speaker
    /// this process may write to is a way to be heard (the alarm beeps it when nothing else plays); one it
    /// may not write to is named in the fix.
    public static func problem(_ machine: Machine) -> SoundUnavailable? {
        guard var problem = fileProblem(machine) else { return nil }
        if let speaker = machine.speaker {
            if speaker.writable { return nil }
            problem.fix += "; or let this user beep the PC speaker (\(speaker.devnode)): install udev-rules/71-dosetap-beeper.rules"
        }
        return problem
    }

    /// Why no sound file can play (the rules without the PC speaker).
    static func fileProblem(_ machine: Machine) -> SoundUnavailable? {
        guard let alsa = machine.alsaProblem else { return nil }
        if let device = machine.device {
            // Named by the user: ALSA's verdict counts only when no external player could take the name.
            guard machine.externalPlayers.isEmpty else { return nil }
            return SoundUnavailable(
                reason: "the audio device '\(DisplayText.escaped(device, maxLength: 80))' (DOSETAP_AUDIO_DEVICE) cannot be opened: \(alsa)",
                fix: "set DOSETAP_AUDIO_DEVICE to a device `aplay -L` lists, or unset it to use the default output")
        }
        if machine.soundServer && !machine.externalPlayers.isEmpty { return nil }
        if machine.cards?.isEmpty == true {
            return SoundUnavailable(
                reason: "it has no sound card (udev lists none) and no sound server (PipeWire or PulseAudio) is running",
                fix: connectSpeaker)
        }
        if machine.soundServer {
            return SoundUnavailable(
                reason: "a sound server is running but no player for it is installed, and ALSA's default output cannot be opened: \(alsa)",
                fix: "install pipewire-alsa (PipeWire) or libasound2-plugins (PulseAudio) so that ALSA reaches the server, or pipewire-bin or pulseaudio-utils")
        }
        guard machine.externalPlayers.isEmpty else { return nil }
        return SoundUnavailable(reason: "ALSA's default output cannot be opened: \(alsa)",
                                fix: alsa.contains("permission") ? "add this user to the audio group (sudo adduser $USER audio) or log in at the machine's seat"
                                    : "check the sound card with `aplay -l`, or name a working device in DOSETAP_AUDIO_DEVICE")
    }

    /// This machine as it is now. `udev` is asked for the sound cards (a client of its own when nil).
    public static func observe(environment: [String: String] = ProcessInfo.processInfo.environment,
                               udev: UdevClient? = nil) -> Machine {
        let device = environment["DOSETAP_AUDIO_DEVICE"].flatMap { $0.isEmpty ? nil : $0 }
        let searchPath = environment["PATH"] ?? "/usr/bin:/bin"
        let players = AudioPlayerCommand.detect(device: device, searchPath: searchPath).filter(\.isExternal).map(\.program.rawValue)
        var server = environment["PULSE_SERVER"].map { !$0.isEmpty } ?? false
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            server = server || isSocket(runtime + "/pipewire-0") || isSocket(runtime + "/pulse/native")
        }
        let client = udev ?? (try? UdevClient())
        let cards = client.flatMap { try? $0.sysnames(subsystem: "sound", matching: "card*") }
        let alsa = AlsaPlayback.probe(device: device).map { $0.reason ?? $0.description }
        let speaker = client.flatMap { PCSpeaker.find(udev: $0) }.map { (devnode: $0.devnode, writable: $0.isWritable) }
        return Machine(cards: cards, soundServer: server, externalPlayers: players, device: device, alsaProblem: alsa, speaker: speaker)
    }

    /// `problem(observe())`.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment,
                               udev: UdevClient? = nil) -> SoundUnavailable? {
        problem(observe(environment: environment, udev: udev))
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }
}

/// Sound cards coming and going (a USB sound card, HDMI audio at boot), from udev's monitor.
public enum SoundHardware {
    /// Calls `changed` on udev's queue whenever a sound device is added or removed, until the returned
    /// token goes away.
    public static func watch(udev: UdevClient, _ changed: @escaping @Sendable () -> Void) throws(UdevError) -> AnyObject {
        let result = udev.queue.sync { () -> Result<UdevSubscription, UdevError> in
            do {
                return .success(try udev.subscribe(subsystem: "sound") { devices in
                    if devices.contains(where: { $0.sysname?.hasPrefix("card") == true }) { changed() }
                })
            } catch let error as UdevError {
                return .failure(error)
            } catch {
                return .failure(.fromErrno(.monitor))
            }
        }
        return try result.get()
    }
}
