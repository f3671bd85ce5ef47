import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// Rings an alarm on this machine: its sound looped with the volume rising over the first 30 s (where the
/// player can set a volume), its vibration repeated at its intensity, and a critical desktop notification
/// with Stop and Snooze — until `finish`. Every pause between loops waits on the scheduling port.
public final class AlarmBell: Sendable {
    /// The notification buttons of a ringing alarm.
    public enum Action: String, Sendable, CaseIterable {
        case stop = "alarm-stop"
        case snooze = "alarm-snooze"

        public var label: String {
            switch self {
            case .stop: "Stop"
            case .snooze: "Snooze 9 min"
            }
        }
    }

    /// A ring in progress: its loops and its notification.
    public struct Ringing: Sendable {
        public var ring: AlarmRing
        fileprivate var loops: Task<Void, Never>
        public var notification: UInt32?
    }

    /// Pause between two plays of the alarm sound, and between two vibrations.
    public static let soundGap: TimeInterval = 0.4
    public static let vibrationGap: TimeInterval = 1.0
    /// After a player failure, wait this long before trying again (a missing sound server must not spin).
    public static let retryGap: TimeInterval = 5

    private let devices: FeedbackDevices
    private let settings: SettingsRepository
    private let clock: any Scheduling
    private let logger: Logger
    /// Notification id → the ring it belongs to (its Stop and Snooze buttons).
    private let shown = Mutex<[UInt32: Int64]>([:])
    /// Called once per ring with (first sound started, first vibration started): for the latency figures.
    private let onFirstOutput: (@Sendable (_ ring: AlarmRing, _ kind: String, _ at: Date) -> Void)?

    public init(devices: FeedbackDevices, settings: SettingsRepository, clock: any Scheduling, logger: Logger,
                onFirstOutput: (@Sendable (_ ring: AlarmRing, _ kind: String, _ at: Date) -> Void)? = nil) {
        self.devices = devices
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.onFirstOutput = onFirstOutput
    }

    /// The ring a notification's buttons act on, or nil when the notification is not a ringing alarm's.
    public func ring(forNotification id: UInt32) -> Int64? { shown.withLock { $0[id] } }

    /// What the alarm plays: its own sound and intensity when set, else the `alarm` event's.
    func plan(for alarm: Alarm) -> (sound: SoundInfo?, haptics: HapticPattern?) {
        let stored = (try? settings.loadFeedback()) ?? FeedbackSettings()
        let capabilities = devices.channels.capabilities(logger: logger)
        // The alarm is never muted by quiet mode (`FeedbackEvent.alarm.bypassesQuiet`).
        let plan = FeedbackResolver.resolve(.alarm, settings: stored, quiet: false, capabilities: capabilities)
        var sound = plan.chime ? plan.sound : nil
        if let name = alarm.sound {
            if let own = capabilities.sounds[name] {
                sound = own
            } else {
                logger.warning("the alarm's sound is not on this machine: ringing with the alarm event's sound",
                               metadata: ["alarm": "\(alarm.id)", "sound": "\(DisplayText.escaped(name))"])
            }
        }
        var haptics = plan.chime ? plan.haptics : nil
        if let intensity = alarm.haptics, devices.haptics.isSupported { haptics = intensity.pattern }
        if sound == nil {
            // An alarm that is on is heard: with the alarm event's chime or sound turned off, the built-in beep.
            logger.warning("the alarm event has no sound (dosetap feedback): ringing with the built-in beep; turn the alarm off to silence it",
                           metadata: ["alarm": "\(alarm.id)"])
            sound = capabilities.beep
        }
        return (sound, haptics)
    }

    /// Starts ringing. Returns once the loops have started and the notification is shown.
    /// A backup alarm of the household (#12) says whose alarm it is in `heading` and `body`.
    public func start(_ alarm: Alarm, ring: AlarmRing, timeZone: TimeZone, heading: String? = nil, body text: String? = nil) async -> Ringing {
        let (sound, pattern) = plan(for: alarm)
        let clock = self.clock
        let logger = self.logger
        let devices = self.devices
        let haptics = devices.haptics
        let started = ring.startedAt ?? clock.now()
        let report = onFirstOutput
        let loops = Task {
            await withTaskGroup(of: Void.self) { group in
                if let sound {
                    group.addTask {
                        var first = true
                        var failed = false
                        // Becomes the built-in beep when the alarm's own sound cannot play here.
                        var sound = sound
                        while !Task.isCancelled {
                            let volume = AlarmVolume.at(elapsed: clock.now().timeIntervalSince(started))
                            if first { report?(ring, "sound", Date()); first = false }
                            do {
                                sound = try await devices.playAlarmSound(sound, volume: volume, logger: logger)
                                failed = false
                            } catch {
                                if !failed { logger.error("alarm sound failed; retrying", metadata: ["sound": "\(sound.name)", "error": "\(error)"]) }
                                failed = true
                                if await clock.sleep(for: Self.retryGap) == .cancelled { return }
                                continue
                            }
                            if await clock.sleep(for: Self.soundGap) == .cancelled { return }
                        }
                    }
                }
                if let pattern, haptics.isSupported {
                    group.addTask {
                        var first = true
                        while !Task.isCancelled {
                            if first { report?(ring, "vibration", Date()); first = false }
                            do {
                                try await haptics.play(pattern)
                            } catch {
                                logger.error("alarm vibration failed", metadata: ["error": "\(error)"])
                                if await clock.sleep(for: Self.retryGap) == .cancelled { return }
                                continue
                            }
                            if await clock.sleep(for: Self.vibrationGap) == .cancelled { return }
                        }
                    }
                }
            }
        }
        var notification: UInt32?
        let title = heading ?? "Alarm \(alarm.time)"
        let body = text ?? DisplayText.escaped(alarm.label) + " — press Stop, or Snooze for 9 minutes."
        if let desktop = devices.desktop, ((try? settings.load()) ?? .defaults).notificationsEnabled {
            do {
                let id = try await desktop.notify(
                    title: title, body: body, urgency: .critical,
                    soundName: sound.map { $0.name == SoundInfo.builtinBeepName ? "alarm-clock-elapsed" : $0.name },
                    suppressSound: true, actions: Action.allCases.map { ($0.rawValue, $0.label) }, category: "x-dosetap.alarm")
                shown.withLock { $0[id] = ring.id }
                notification = id
            } catch {
                logger.warning("desktop notification failed; the log has it", metadata: ["error": "\(error)"])
            }
        }
        logger.warning("\(title): ringing", metadata: [
            "alarm": "\(alarm.id)", "label": "\(DisplayText.escaped(alarm.label))", "kind": "\(ring.kind.rawValue)",
            "sound": "\(sound?.name ?? "none")", "haptics": "\(pattern?.intensity.rawValue ?? "none")",
            "lateMs": "\(Int((started.timeIntervalSince(ring.dueAt) * 1000).rounded()))",
        ])
        return Ringing(ring: ring, loops: loops, notification: notification)
    }

    /// Ends the ring: the loops stop, the sound stops at once, the notification closes.
    public func finish(_ ringing: Ringing) async {
        ringing.loops.cancel()
        devices.player.stop()
        _ = await ringing.loops.value
        if let id = ringing.notification {
            shown.withLock { _ = $0.removeValue(forKey: id) }
            do { try await devices.desktop?.close(id: id) } catch {
                logger.debug("cannot close the alarm notification", metadata: ["error": "\(error)"])
            }
        }
    }

    /// "Missed alarm 06:30": a notification that stays (and the log), after ten minutes without an answer or
    /// for an occurrence the machine slept or was off through.
    public func announceMissed(_ alarm: Alarm?, ring: AlarmRing, timeZone: TimeZone) async {
        let time = alarm.map { "\($0.time)" } ?? Self.hourMinute(ring.dueAt, in: timeZone)
        let title = "Missed alarm \(time)"
        var body = alarm.map { DisplayText.escaped($0.label) } ?? "Alarm \(ring.alarmID)"
        if ring.kind == .snooze { body += " (snoozed)" }
        body += ring.startedAt == nil ? " — this machine was off or asleep at \(Self.hourMinute(ring.dueAt, in: timeZone))."
            : " — nobody answered for 10 minutes."
        logger.warning("\(title)", metadata: ["alarm": "\(ring.alarmID)", "due": "\(ring.dueAt)", "why": "\(ring.endedBy?.rawValue ?? "?")"])
        await announce(title: title, body: body)
    }

    /// A critical notification that stays (and the log): "All backups tried for …".
    public func announce(title: String, body: String) async {
        guard let desktop = devices.desktop, ((try? settings.load()) ?? .defaults).notificationsEnabled else { return }
        do {
            _ = try await desktop.notify(title: title, body: body, urgency: .critical, soundName: nil, suppressSound: true,
                                         actions: [], category: "x-dosetap.alarm")
        } catch {
            logger.warning("desktop notification failed; the log has it", metadata: ["error": "\(error)"])
        }
    }

    static func hourMinute(_ date: Date, in timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }
}

extension FeedbackDevices {
    /// Plays an alarm's sound once, at `volume`. A sound that cannot play here — an Ogg theme sound on a
    /// machine with no player for Ogg (the built-in ALSA path reads WAV), a file gone since — hands over to
    /// the built-in beep at once: an alarm is heard wherever there is an output. Where there is none at all,
    /// the PC speaker (or a board's beeper) beeps instead. Returns the sound that played (the fallback from
    /// then on). Throws when nothing could make a sound.
    public func playAlarmSound(_ sound: SoundInfo, volume: Double, logger: Logger) async throws -> SoundInfo {
        if sound.name == SoundInfo.pcSpeakerName, let speaker {
            try await speaker.beep()
            return sound
        }
        do {
            try await player.play(sound, volume: volume)
            return sound
        } catch {
            guard !Task.isCancelled else { throw error }
            if sound.name != SoundInfo.builtinBeepName {
                logger.warning("the alarm's sound cannot play here: ringing with the built-in beep",
                               metadata: ["sound": "\(DisplayText.escaped(sound.name))", "error": "\(error)"])
                return try await playAlarmSound(beep, volume: volume, logger: logger)
            }
            guard let speaker else { throw error }
            do {
                try await speaker.beep()
            } catch let beeper {
                throw SoundPlayerError("\(error); \(beeper)")
            }
            logger.warning("no sound output: the alarm beeps the PC speaker", metadata: ["speaker": "\(speaker)", "error": "\(error)"])
            return speaker.sound
        }
    }
}
