import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Synchronization

/// The machine's ways of telling a person something, as the agent and the CLI build them: the channels the
/// use cases see (motor, sounds, player, beep) and the agent's own (the desktop, the PC speaker).
public struct FeedbackDevices: Sendable {
    public var channels: FeedbackChannels
    public var desktop: DesktopNotifications?
    /// The kernel's tone generator, if the machine has one: the alarm's last channel (#32).
    public var speaker: PCSpeaker?

    public var haptics: any Haptics { channels.haptics }
    public var catalog: any SoundCatalog { channels.catalog }
    public var player: any SoundPlayer { channels.player }
    public var beep: SoundInfo { channels.beep }

    public init(haptics: any Haptics, catalog: any SoundCatalog, player: any SoundPlayer, beep: SoundInfo,
                desktop: DesktopNotifications?, speaker: PCSpeaker? = nil) {
        self.channels = FeedbackChannels(haptics: haptics, catalog: catalog, player: player, beep: beep)
        self.desktop = desktop
        self.speaker = speaker
    }
}

/// Plays feedback: resolves the plan for an event, then shows the desktop notification, plays the sound
/// and starts the vibration together. Notification buttons are remembered so the press can be decided by
/// the dose policy.
public final class FeedbackNotifier: Notifier, Sendable {
    private let devices: FeedbackDevices
    private let settings: SettingsRepository
    private let logger: Logger
    private let clock: any WallClock
    /// Notification id → the night it is about, for the action buttons.
    private let shown = Mutex<[UInt32: UUID]>([:])
    /// Notification id → what it is about (a usage alert), for its buttons.
    private let tagged = Mutex<[UInt32: String]>([:])
    /// The feedback settings each night's reminders use, fixed when the night was scheduled.
    private let snapshots = Mutex<[UUID: FeedbackSettings]>([:])

    public init(devices: FeedbackDevices, settings: SettingsRepository, clock: any WallClock, logger: Logger) {
        self.devices = devices
        self.settings = settings
        self.clock = clock
        self.logger = logger
    }

    public func post(_ notification: DoseNotification) {
        let task = Task { await deliver(notification) }
        _ = task
    }

    /// Fixes the feedback settings for a night's reminders: an edit made while its timers run applies next time.
    public func nightScheduled(session: UUID) {
        let current = (try? settings.loadFeedback()) ?? FeedbackSettings()
        snapshots.withLock { $0[session] = current }
    }

    /// What a notification shown with a tag is about (nil: not one of those).
    public func tag(forNotification id: UInt32) -> String? { tagged.withLock { $0[id] } }

    /// The night a notification's buttons act on.
    public func session(forNotification id: UInt32) -> UUID? { shown.withLock { $0[id] } }

    /// Resolves and plays the feedback for a reminder; returns when the notification is shown and the
    /// sound and vibration have started (they finish in the background).
    public func deliver(_ n: DoseNotification) async {
        let event = FeedbackEvent(reminder: n.reminder.kind)
        await play(event, title: n.title, body: n.body, actions: n.actions, session: n.reminder.sessionID, dueAt: n.reminder.dueAt)
    }

    /// Plays the feedback of any event (dose recorded, action rejected, …).
    public func play(_ event: FeedbackEvent, title: String, body: String, actions: [DoseNotification.Action] = [],
                     session: UUID? = nil, dueAt: Date? = nil) async {
        await play(event, title: title, body: body, buttons: actions.map { ($0.rawValue, $0.label) }, session: session, dueAt: dueAt)
    }

    /// Plays any event with its own notification buttons (key, label); `critical` shows the notification as
    /// critical whatever the event. The notification's id is remembered with `tag`, for its buttons.
    public func play(_ event: FeedbackEvent, title: String, body: String, buttons: [(key: String, label: String)],
                     session: UUID? = nil, dueAt: Date? = nil, critical: Bool = false, tag: String? = nil) async {
        let began = clock.now()
        let stored = session.flatMap { id in snapshots.withLock { $0[id] } } ?? (try? settings.loadFeedback()) ?? FeedbackSettings()
        let user = (try? settings.load()) ?? .defaults
        let plan = FeedbackResolver.resolve(event, settings: stored, quiet: user.quietMode,
                                            capabilities: devices.channels.capabilities(logger: logger))
        var metadata: Logger.Metadata = [
            "event": "\(event.rawValue)", "sound": "\(plan.sound?.name ?? "none")",
            "haptics": "\(plan.haptics?.intensity.rawValue ?? "none")", "muted": "\(plan.muted)",
        ]
        if !plan.warnings.isEmpty { metadata["warnings"] = "\(plan.warnings.joined(separator: "; "))" }
        let resolved = clock.now()
        logger.log(level: event.bypassesQuiet ? .warning : .notice, "\(title)", metadata: metadata)
        guard plan.chime else { return }

        // The notification's task is started before the sound's and the vibration's (the executor does not promise
        // the order, but starts them so in practice): with one CPU (the VM tier's guest with one vCPU) starting the
        // sound first (loading ALSA, opening the device) kept the request waiting — Notify 390 ms, 270 ms after (#28).
        let notifying = clock.now()
        let notification: Task<Void, Never>? = (user.notificationsEnabled ? devices.desktop : nil).map { desktop in
            let logger = self.logger
            return Task { [self] in
                do {
                    let id = try await desktop.notify(
                        title: title, body: body, urgency: event.bypassesQuiet || critical ? .critical : .normal,
                        soundName: plan.sound.map { $0.name == SoundInfo.builtinBeepName ? "bell" : $0.name },
                        suppressSound: true, actions: buttons)
                    if let session { shown.withLock { $0[id] = session } }
                    if let tag { tagged.withLock { $0[id] = tag } }
                } catch {
                    logger.warning("desktop notification failed; the log has it", metadata: ["error": "\(error)"])
                }
            }
        }
        if let pattern = plan.haptics {
            let haptics = devices.haptics
            let logger = self.logger
            Task {
                do { try await haptics.play(pattern) } catch {
                    logger.error("vibration failed", metadata: ["error": "\(error)"])
                }
            }
        }
        if let sound = plan.sound {
            let player = devices.player
            let logger = self.logger
            Task {
                do { try await player.play(sound) } catch {
                    logger.error("sound failed", metadata: ["sound": "\(sound.name)", "error": "\(error)"])
                }
            }
        }
        await notification?.value
        if let dueAt {
            let latency = clock.now().timeIntervalSince(dueAt)
            func ms(_ seconds: TimeInterval) -> String { "\(Int((seconds * 1000).rounded()))" }
            logger.debug("feedback delivered", metadata: [
                "event": "\(event.rawValue)", "latencyMs": "\(ms(latency))", "startMs": "\(ms(began.timeIntervalSince(dueAt)))",
                "resolveMs": "\(ms(resolved.timeIntervalSince(began)))", "notifyMs": "\(ms(clock.now().timeIntervalSince(notifying)))",
            ])
        }
    }
}
