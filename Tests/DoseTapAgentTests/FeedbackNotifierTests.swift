import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Testing

/// Reminders through the full feedback path: a private session bus with python-dbusmock's notification
/// daemon, a recording motor and player, the real store and the real dose policy.
@Suite("Feedback: notifications, sound, vibration and notification buttons", .serialized)
struct FeedbackNotifierTests {
    static let beep = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav")
    static let bell = SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }
    func at(_ minutes: Double) -> Date { t0.addingTimeInterval(minutes * 60) }

    struct World: Sendable {
        let repo: DoseRepository
        let settings: SettingsRepository
        let clock: FakeClock
        let haptics: RecordingHaptics
        let desktop: DesktopNotifications
        let feedback: FeedbackNotifier
        let scheduler: DoseScheduler
        let actions: NotificationActions
        let player: RecordingSoundPlayer
        /// Plays the outcome of a notification action, from the events (as in the agent).
        let answers: Task<Void, any Error>
    }

    func world(bus: PrivateBus.Bus, motor: Bool = true, battery: (@Sendable () -> BatteryStatus?)? = nil) throws -> World {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-fb-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        let repo = DoseRepository(database: db)
        let settings = SettingsRepository(database: db)
        let clock = FakeClock(t0, timeZone: ny)
        let haptics = RecordingHaptics(supported: motor)
        let player = RecordingSoundPlayer()
        let desktop = DesktopNotifications(connection: try DBusConnection(bus: .address(bus.address)))
        let devices = FeedbackDevices(haptics: haptics, catalog: FixedSoundCatalog([Self.bell]), player: player, beep: Self.beep,
                                      desktop: desktop)
        let logger = Logger(label: "test")
        let feedback = FeedbackNotifier(devices: devices, settings: settings, clock: clock, logger: logger)
        let scheduler = DoseScheduler(repository: repo, clock: clock, notifier: feedback, logger: logger, databaseChanges: nil)
        let events = EventBus()
        let answers = DoseInputFeedback(events: events, feedback: feedback)
        let actions = NotificationActions(desktop: desktop, feedback: feedback,
                                          doses: DoseUseCases(repository: repo, clock: clock, battery: battery, events: events),
                                          logger: logger)
        return World(repo: repo, settings: settings, clock: clock, haptics: haptics, desktop: desktop, feedback: feedback,
                     scheduler: scheduler, actions: actions, player: player, answers: Task { try await answers.run() })
    }

    /// The Notify calls the mock daemon received: (summary, actions, hints).
    func notifyCalls(_ w: World) async throws -> [(summary: String, body: String, actions: [String], hints: [String: DBusValue])] {
        let reply = try await w.desktop.connection.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                        interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls",
                                                        arguments: [.string("Notify")])
        return (reply.first?.array ?? []).compactMap { call in
            guard case .structure(let fields) = call, fields.count == 2, let args = fields[1].array, args.count == 8 else { return nil }
            return (args[3].string ?? "", args[4].string ?? "", (args[5].array ?? []).compactMap(\.string), args[6].stringKeyed ?? [:])
        }
    }

    func waitForNotify(_ w: World, count: Int) async throws -> [(summary: String, body: String, actions: [String], hints: [String: DBusValue])] {
        for _ in 0..<250 {
            let calls = try await notifyCalls(w)
            if calls.count >= count { return calls }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await notifyCalls(w)
    }

    func submit(_ w: World, _ command: DoseCommand, at now: Date) throws {
        w.clock.set(now)
        _ = try w.repo.submit(DoseInput(command: command, source: .cli, issuedAt: now), now: now, timeZone: ny)
    }

    @Test("the reminder: a notification with Take Now / Snooze 10min / Skip, the sound and the vibration; Take Now records Dose 2")
    func reminderThenTakeNow() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(165))
            w.scheduler.tick()
            let calls = try await waitForNotify(w, count: 1)
            #expect(calls.count == 1)
            #expect(calls.first?.summary == "Time for Dose 2")
            #expect(calls.first?.actions == ["take", "Take Now", "snooze", "Snooze 10min", "skip", "Skip"])
            #expect(calls.first?.hints["urgency"] == .byte(1))
            #expect(calls.first?.hints["sound-name"] == .string("bell"))
            for _ in 0..<250 where w.haptics.patterns.isEmpty || w.player.sounds.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.haptics.patterns == [HapticIntensity.medium.pattern])
            #expect(w.player.sounds == [Self.beep])

            // The person presses Take Now: the signal goes through the real bus to the policy.
            let service = Task { try await w.actions.run() }
            defer { service.cancel() }
            try await Task.sleep(for: .milliseconds(200)) // the service subscribes
            let id = try #require(try await notifyIDs(w).first)
            try await emit(w, "ActionInvoked", [.uint32(id), .string("take")])
            for _ in 0..<250 where try w.repo.status(now: at(165), timeZone: ny).phase != .completed {
                try await Task.sleep(for: .milliseconds(20))
            }
            let status = try w.repo.status(now: at(165), timeZone: ny)
            #expect(status.phase == .completed)
            #expect(status.session?.dose2?.source == .notification)
            // "dose recorded" feedback: a second vibration.
            for _ in 0..<250 where w.haptics.patterns.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.haptics.patterns.count == 2)
        }
    }

    /// Finding: ActionInvoked was accepted from any peer on the session bus, so another process could
    /// record Dose 2 with the id of tonight's reminder.
    @Test("ActionInvoked from another connection than the notification server records nothing; a restarted server is followed")
    func forgedAction() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(165))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            let id = try #require(try await notifyIDs(w).first)
            // Another subscription on the same connection that takes every Notifications signal (as a
            // desktop helper might): the bus then delivers forgeries to this connection too, so the check
            // of the sender in the agent is what refuses them, not only the bus's match rule.
            let broad = try await w.desktop.connection.signals(DBusMatchRule(interface: "org.freedesktop.Notifications"))
            let drain = Task { for await _ in broad {} }
            defer { drain.cancel() }
            let service = Task { try await w.actions.run() }
            defer { service.cancel() }
            try await Task.sleep(for: .milliseconds(200)) // the service subscribes

            func dose2Recorded() throws -> Bool { try w.repo.status(now: at(165), timeZone: ny).phase == .completed }
            let forger = try DBusConnection(bus: .address(bus.address))
            defer { forger.close() }
            func forge() throws {
                try forger.send(path: "/org/freedesktop/Notifications", interface: "org.freedesktop.Notifications",
                                member: "ActionInvoked", arguments: [.uint32(id), .string("take")])
            }
            try forge()
            try await Task.sleep(for: .milliseconds(500))
            #expect(try !dose2Recorded())

            // The notification server restarts: the new one is followed, forgeries still count for nothing.
            let old = await w.desktop.owner()
            PrivateBus.killMock(address: bus.address)
            let restarted = PrivateBus.startMock(template: "notification_daemon", system: false, address: bus.address)
            defer {
                restarted.cancel()
                PrivateBus.killMock(address: bus.address)
            }
            var current: String?
            for _ in 0..<300 {
                current = await w.desktop.owner()
                if let current, current != old { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(current != nil && current != old)
            try forge()
            try await Task.sleep(for: .milliseconds(500))
            #expect(try !dose2Recorded())
            #expect(w.haptics.patterns.count == 1) // the reminder's vibration only: no "dose recorded" feedback

            // The server itself reports the press: Dose 2.
            try await emit(w, "ActionInvoked", [.uint32(id), .string("take")])
            for _ in 0..<250 where try !dose2Recorded() { try await Task.sleep(for: .milliseconds(20)) }
            #expect(try dose2Recorded())
            #expect(try w.repo.status(now: at(165), timeZone: ny).session?.dose2?.source == .notification)
        }
    }

    @Test("a refused button press (snooze limit) plays the action-rejected feedback and records nothing")
    func rejected() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            var s = FeedbackSettings()
            s.set(.actionRejected, EventFeedback(intensity: .strong))
            try w.settings.saveFeedback(s)
            try submit(w, .take(confirmLate: false), at: t0)
            for _ in 0..<3 { try submit(w, .snooze, at: at(160)) }
            w.clock.set(at(195))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            let id = try #require(try await notifyIDs(w).first)
            let outcome = await w.actions.handle(.init(id: id, action: "snooze"))
            guard case .refused(let refusal, _) = outcome else { Issue.record("not refused: \(String(describing: outcome))"); return }
            #expect(refusal.code == .snoozeLimit)
            for _ in 0..<250 where w.haptics.patterns.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.haptics.patterns.last == HapticIntensity.strong.pattern)
            #expect(try w.repo.status(now: at(195), timeZone: ny).snoozesUsed == 3)
        }
    }

    @Test("Take Now pressed after the window closed: refused with the reason, nothing recorded")
    func takeNowTooLate() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(165))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            let id = try #require(try await notifyIDs(w).first)
            w.clock.set(at(245))
            let outcome = await w.actions.handle(.init(id: id, action: "take"))
            guard case .refused(let refusal, _) = outcome else { Issue.record("not refused: \(String(describing: outcome))"); return }
            #expect(refusal.code == .lateNeedsConfirmation)
            #expect(refusal.message.contains("window closed at 02:30"))
            #expect(try w.repo.status(now: at(245), timeZone: ny).session?.dose2 == nil)
            // The refusal is shown: a second notification, with the reason as its title.
            let calls = try await waitForNotify(w, count: 2)
            #expect(calls.last?.summary == refusal.message)
        }
    }

    @Test("buttons of notifications that are not ours do nothing")
    func foreign() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(170))
            #expect(await w.actions.handle(.init(id: 4242, action: "take")) == nil)
            #expect(try w.repo.status(now: at(170), timeZone: ny).phase == .open)
        }
    }

    @Test("quiet mode mutes the reminder's sound but not the vibration; the urgent alert still sounds, as critical")
    func quiet() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            var user = UserSettings.defaults
            user.quietMode = true
            try w.settings.save(user)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(165))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            for _ in 0..<250 where w.haptics.patterns.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.player.sounds.isEmpty)
            #expect(w.haptics.patterns.count == 1)
            w.clock.set(at(226))
            w.scheduler.tick()
            let calls = try await waitForNotify(w, count: 2)
            #expect(calls.last?.summary == "URGENT: 14 min to take Dose 2")
            #expect(calls.last?.hints["urgency"] == .byte(2))
            #expect(calls.last?.actions == ["take", "Take Now", "skip", "Skip"])
            for _ in 0..<100 where w.player.sounds.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.player.sounds == [Self.beep])
        }
    }

    @Test("no motor: the reminder still notifies and sounds; chime off: nothing but the notification")
    func noMotorAndChimeOff() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus, motor: false)
            var s = FeedbackSettings()
            s.set(.doseWindowOpen, EventFeedback(chime: false))
            try w.settings.saveFeedback(s)
            try submit(w, .take(confirmLate: false), at: t0)
            w.clock.set(at(150))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            #expect(w.player.sounds.isEmpty && w.haptics.patterns.isEmpty)
            w.clock.set(at(165))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 2)
            for _ in 0..<100 where w.player.sounds.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.player.sounds == [Self.beep])
            #expect(w.haptics.patterns.isEmpty)
        }
    }

    @Test("an event edited while its night's timers run applies to the next night, not to this one")
    func editAppliesNextTime() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try submit(w, .take(confirmLate: false), at: t0)
            w.scheduler.tick() // the night is scheduled: its settings are fixed
            var s = FeedbackSettings()
            s.set(.doseReminder, EventFeedback(intensity: .strong))
            try w.settings.saveFeedback(s)
            w.clock.set(at(165))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            for _ in 0..<250 where w.haptics.patterns.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.haptics.patterns == [HapticIntensity.medium.pattern])
            // The next night uses the edit.
            let next = localDate("2026-01-16 22:30:00", ny)
            try submit(w, .take(confirmLate: false), at: next)
            w.scheduler.tick()
            w.clock.set(next.addingTimeInterval(165 * 60))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 2)
            for _ in 0..<250 where w.haptics.patterns.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(w.haptics.patterns.last == HapticIntensity.strong.pattern)
        }
    }

    func notifyIDs(_ w: World) async throws -> [UInt32] {
        // The mock numbers notifications from 1 in order.
        let count = try await notifyCalls(w).count
        return count == 0 ? [] : (1...UInt32(count)).map { $0 }
    }

    func emit(_ w: World, _ member: String, _ args: [DBusValue]) async throws {
        _ = try await w.desktop.connection.call(
            destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications", interface: "org.freedesktop.DBus.Mock",
            member: "EmitSignal", arguments: [.string("org.freedesktop.Notifications"), .string(member),
                                              .string(args.map(\.signature).joined()), .array(elementSignature: "v", args.map { .variant($0) })])
    }

    @Test("Take Now that records Dose 1 on a draining battery: the confirmation carries the battery-at-reminder nudge")
    func takeNowDose1Nudge() async throws {
        // 34 % at 8 %/h: 12 % left at the reminder 165 min later → "Low Battery Warning".
        let draining = BatteryStatus(state: PowerState(raw: [.battery(capacity: 34, energyNowWh: 17, energyFullWh: 50, powerW: 4),
                                                            .mains(online: false)]),
                                     drain: DrainEstimate(percentPerHour: 8, source: .hardware))
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus, battery: { draining })
            // Last night's reminder is still on screen; tonight, the person presses its Take Now: Dose 1.
            let yesterday = t0.addingTimeInterval(-24 * 3600)
            try submit(w, .take(confirmLate: false), at: yesterday)
            w.clock.set(yesterday.addingTimeInterval(165 * 60))
            w.scheduler.tick()
            _ = try await waitForNotify(w, count: 1)
            let id = try #require(try await notifyIDs(w).last)
            w.clock.set(t0)
            let outcome = await w.actions.handle(.init(id: id, action: "take"))
            guard case .recorded(let event, _, _) = outcome else { Issue.record("not recorded: \(String(describing: outcome))"); return }
            #expect(event.kind == .dose1(targetMinutes: 165))
            #expect(event.source == .notification)
            let calls = try await waitForNotify(w, count: 2)
            #expect(calls.last?.summary.hasPrefix("Dose 1 taken at 22:30.") == true)
            #expect(calls.last?.body == "Estimated battery at reminder: 12% — Consider plugging in.")
        }
    }
}
