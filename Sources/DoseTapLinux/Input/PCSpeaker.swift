internal import CLinuxInput
import DoseTapCore
import Foundation
import Glibc

/// The kernel's tone generator, the alarm's last channel on a machine that cannot play a sound file (#32):
/// an input device that takes `EV_SND`/`SND_TONE` — the `pcspkr` driver's "PC Speaker" on a PC, a board's
/// `gpio-beeper` or `pwm-beeper`. Writing `SND_TONE <Hz>` to its event node starts a tone; `SND_TONE 0`
/// ends it. udev-rules/71-dosetap-beeper.rules gives the seat's user access to it (`uaccess`).
public struct PCSpeaker: Sendable, Equatable, CustomStringConvertible {
    /// "/dev/input/event5".
    public var devnode: String
    /// The input device's name ("PC Speaker").
    public var name: String?

    public init(devnode: String, name: String? = nil) {
        self.devnode = devnode
        self.name = name
    }

    /// EV_SND and SND_TONE (linux/input-event-codes.h).
    static let eventType: UInt16 = 0x12
    static let toneCode: UInt16 = 0x02

    public var description: String { devnode + (name.map { " (\"\(DisplayText.escaped($0, maxLength: 80))\")" } ?? "") }

    /// The sound the alarm rings with when it plays here ("pc-speaker", theme "kernel").
    public var sound: SoundInfo { SoundInfo(name: SoundInfo.pcSpeakerName, theme: "kernel", path: devnode) }

    /// Whether `capabilities/snd` (sysfs: hexadecimal words, the highest first) has SND_TONE.
    public static func hasTone(sysfs text: String) -> Bool {
        guard let last = text.split(separator: " ").last, let word = UInt64(last.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16) else {
            return false
        }
        return word & (1 << UInt64(toneCode)) != 0
    }

    /// The first input event device that can play a tone, as udev lists it; nil when there is none.
    public static func find(udev: UdevClient) -> PCSpeaker? {
        let result = udev.queue.sync { () -> PCSpeaker? in
            var found: PCSpeaker?
            try? udev.enumerate(subsystem: "input", sysname: "event*") { device in
                guard found == nil, let devnode = device.devnode, let input = device.parent(subsystem: "input"),
                      let snd = input.attribute("capabilities/snd"), hasTone(sysfs: snd) else { return }
                found = PCSpeaker(devnode: devnode, name: input.attribute("name"))
            }
            return found
        }
        return result
    }

    /// Whether this process may write to it (the `uaccess` rule, or the input group).
    public var isWritable: Bool { access(devnode, W_OK) == 0 }

    /// One tone of `frequency` Hz for `milliseconds` (the built-in beep's 880 Hz and 300 ms by default), on a
    /// thread of its own; cancelling the task ends the tone at once. The tone is always ended, even after an
    /// error half-way. Throws a one-line `SoundPlayerError`.
    public func beep(frequency: Int = Int(BuiltinBeep.frequency), milliseconds: Int = BuiltinBeep.milliseconds) async throws {
        let stop = AlsaPlayback.StopFlag()
        let devnode = self.devnode
        let outcome = await withTaskCancellationHandler {
            await awaitOnOwnThread { () -> SoundPlayerError? in
                let fd = open(devnode, O_WRONLY | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else {
                    let reason = errno == EACCES || errno == EPERM ? "no permission to write \(devnode) (udev-rules/71-dosetap-beeper.rules)"
                        : "cannot open \(devnode): \(String(cString: strerror(errno)))"
                    return SoundPlayerError(player: "pc-speaker", reason: reason, isOutputProblem: true)
                }
                defer {
                    _ = dosetap_evdev_write_event(fd, Self.eventType, Self.toneCode, 0)
                    close(fd)
                }
                guard dosetap_evdev_write_event(fd, Self.eventType, Self.toneCode, Int32(clamping: frequency)) > 0 else {
                    return SoundPlayerError(player: "pc-speaker", reason: "cannot write \(devnode): \(String(cString: strerror(errno)))",
                                            isOutputProblem: true)
                }
                // The tone's length, in steps of 20 ms so a stop ends it at once.
                var left = max(0, milliseconds)
                while left > 0 && !stop.isSet {
                    let step = min(20, left)
                    usleep(UInt32(step * 1000))
                    left -= step
                }
                return nil
            }
        } onCancel: {
            stop.set()
        }
        if let outcome { throw outcome }
    }
}

extension SoundInfo {
    /// The PC speaker's tone (`PCSpeaker.sound`), named like a sound so a ring can say what it played.
    public static let pcSpeakerName = "pc-speaker"
}
