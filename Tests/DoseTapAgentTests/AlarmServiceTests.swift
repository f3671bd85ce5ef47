import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Testing

/// Alarms ringing in the agent, on the scheduling port's fake clock: the real store, the real ringer with a
/// recording player and motor, and python-dbusmock's notification daemon on a private session bus. The
/// ten-minute give-up and the nine-minute snooze are moved through with the fake clock; nothing sleeps for
/// timing (polls wait for the ringer's own tasks).
@Suite("Alarms ringing: Stop, Snooze, the ten-minute miss, late occurrences", .serialized, .timeLimit(.minutes(2)))
struct AlarmServiceTests {
    static let beep = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav")
    static let bell = SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")
    static let bthome = "A4:C1:38:8D:18:B2"
    let ny = TimeZone(identifier: "America/New_York")!

    func at(_ text: String) -> Date { localDate("2026-01-15 " + text, ny) }

    struct World: Sendable {
        let directory: URL
        let database: DoseTapDatabase
        let clock: FakeClock
        let haptics: RecordingHaptics
        let player: RecordingSoundPlayer
        let desktop: DesktopNotifications
        let ringer: AlarmBell
        let alarms: AlarmUseCases
        let service: AlarmService
        let events: EventBus

        /// Another agent on the same data (a restart): a new ringer and service, same clock and devices.
        func restarted() -> World {
            World.make(directory: directory, database: database, clock: clock, haptics: haptics, player: player, desktop: desktop)
        }

        static func make(directory: URL, database: DoseTapDatabase, clock: FakeClock, haptics: RecordingHaptics,
                         player: RecordingSoundPlayer, desktop: DesktopNotifications) -> World {
            let logger = Logger(label: "test")
            let devices = FeedbackDevices(haptics: haptics, catalog: FixedSoundCatalog([AlarmServiceTests.bell]), player: player,
                                          beep: AlarmServiceTests.beep, desktop: desktop)
            let ringer = AlarmBell(devices: devices, settings: SettingsRepository(database: database), clock: clock, logger: logger)
            let store = DataStore(database: database)
            let events = EventBus()
            let alarms = AlarmUseCases(store: store, clock: clock, battery: { nil }, events: events, answerPatience: .brief)
            let service = AlarmService(store: store, alarms: alarms, ringer: ringer, clock: clock, logger: logger, events: events,
                                       databaseChanges: nil)
            return World(directory: directory, database: database, clock: clock, haptics: haptics, player: player, desktop: desktop,
                         ringer: ringer, alarms: alarms, service: service, events: events)
        }

        /// The command line: another process on the same folder.
        var cli: AlarmUseCases { AlarmUseCases(store: DataStore(directory: directory), clock: clock, battery: { nil }) }
        var rings: AlarmRingRepository { AlarmRingRepository(database: database) }
        /// What the buttons and the notifications answer (the agent's `RingAnswers`, this machine's alarms only).
        var ringing: RingAnswers { RingAnswers(alarms: alarms, holders: [service], logger: Logger(label: "test")) }
    }

    func world(bus: PrivateBus.Bus, now: String = "06:00:00") throws -> World {
        let directory = freshDataFolder("dosetap-alarm")
        return World.make(directory: directory, database: try DoseTapDatabase(directory: directory), clock: FakeClock(at(now), timeZone: ny),
                          haptics: RecordingHaptics(), player: RecordingSoundPlayer(),
                          desktop: DesktopNotifications(connection: try DBusConnection(bus: .address(bus.address))))
    }

    /// How the latest ring of alarm `id` ended: "snoozed button".
    func lastEnd(_ w: World, _ id: Int) throws -> String {
        guard let ring = try w.rings.history(alarmID: id).last else { return "none" }
        return "\(ring.outcome.rawValue) \(ring.endedBy?.rawValue ?? "-")"
    }

    /// Adds an alarm (as `dosetap alarm add` at the clock's time); returns its id.
    @discardableResult
    func add(_ w: World, _ time: String, repeat repetition: String = "once", label: String = "Work") throws -> Int {
        try w.cli.add(.init(time: time, label: label, repetition: repetition)).alarm.id
    }

    struct Notify: Sendable {
        var summary: String
        var body: String
        var actions: [String]
        var hints: [String: DBusValue]
    }

    func calls(_ w: World, _ member: String) async throws -> [[DBusValue]] {
        let reply = try await w.desktop.connection.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                        interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls",
                                                        arguments: [.string(member)])
        return (reply.first?.array ?? []).compactMap { call in
            guard case .structure(let fields) = call, fields.count == 2 else { return nil }
            return fields[1].array
        }
    }

    func notifications(_ w: World, count: Int = 1) async throws -> [Notify] {
        for _ in 0..<250 {
            let found = try await calls(w, "Notify").compactMap { args -> Notify? in
                guard args.count == 8 else { return nil }
                return Notify(summary: args[3].string ?? "", body: args[4].string ?? "", actions: (args[5].array ?? []).compactMap(\.string),
                              hints: args[6].stringKeyed ?? [:])
            }
            if found.count >= count { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        return []
    }

    /// Polls until `condition` holds (the ringer's loops run on their own tasks).
    func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try condition()
    }

    func setAndTick(_ w: World, _ time: String) async -> Date? {
        w.clock.set(at(time))
        return await w.service.tick()
    }

    @Test("at the occurrence: a critical notification with Stop and Snooze, the sound looped with rising volume, the vibration repeated")
    func rings() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try add(w, "06:30")
            #expect(await setAndTick(w, "06:29:59") == at("06:30:00"))
            #expect(!w.service.isRinging)
            #expect(w.player.sounds.isEmpty)
            let givesUp = await setAndTick(w, "06:30:00")
            #expect(givesUp == at("06:40:00"))
            #expect(w.service.isRinging)
            let shown = try await notifications(w)
            #expect(shown.first?.summary == "Alarm 06:30")
            #expect(shown.first?.body.contains("Work") == true)
            #expect(shown.first?.actions == ["alarm-stop", "Stop", "alarm-snooze", "Snooze 9 min"])
            #expect(shown.first?.hints["urgency"] == .byte(2))
            #expect(try await eventually { !w.player.volumes.isEmpty && !w.haptics.patterns.isEmpty })
            #expect(w.player.volumes.first == AlarmVolume.start)
            // The sound and the vibration loops each wait on the clock between plays.
            await w.clock.waitForSleepers(2)
            w.clock.advance(by: 15)
            #expect(try await eventually { w.player.volumes.count >= 2 && w.haptics.patterns.count >= 2 })
            #expect(abs(w.player.volumes[1] - 0.65) < 0.001, "\(w.player.volumes)")
            await w.clock.waitForSleepers(2)
            w.clock.advance(by: 20)
            #expect(try await eventually { w.player.volumes.count >= 3 })
            #expect(w.player.volumes[2] == 1)
            #expect(Set(w.haptics.patterns).count == 1, "one intensity, repeated")
            _ = try w.cli.stopRinging(by: .cli)
            _ = await w.service.tick()
        }
    }

    @Test("global sound off, or the alarm event's chime off: the alarm still rings, with the built-in beep; its own sound and intensity win")
    func alwaysHeard() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            var settings = FeedbackSettings(global: GlobalFeedback(sound: .off))
            settings.set(.alarm, EventFeedback(chime: false))
            try SettingsRepository(database: w.database).saveFeedback(settings)
            try add(w, "06:30")
            _ = await setAndTick(w, "06:30:00")
            #expect(try await eventually { !w.player.sounds.isEmpty })
            #expect(w.player.sounds.first == Self.beep)
            #expect(w.haptics.patterns.isEmpty, "the event's chime is off: no vibration unless the alarm has its own intensity")
            _ = try w.cli.stopRinging(by: .cli)
            _ = await w.service.tick()

            _ = try AlarmRepository(database: w.database).add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:45"), label: "Own",
                                                                               sound: "bell", haptics: .light), now: at("06:31:00"))
            _ = await setAndTick(w, "06:45:00")
            #expect(try await eventually { w.player.sounds.last == Self.bell && w.haptics.patterns.last == HapticIntensity.light.pattern })
            _ = try w.cli.stopRinging(by: .cli)
            _ = await w.service.tick()
        }
    }

    @Test("Stop from the command line: the sound stops, the notification closes, a once alarm turns off; stopping again is an error")
    func stopFromCLI() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30")
            _ = await setAndTick(w, "06:30:00")
            #expect(try await eventually { !w.player.sounds.isEmpty })
            w.clock.set(at("06:31:00"))
            let answer = try w.cli.stopRinging(by: .cli)
            #expect(answer.ring.outcome == .stopped && answer.ring.endedBy == .cli && answer.alarm?.id == id)
            let next = await w.service.tick()
            #expect(!w.service.isRinging)
            #expect(w.player.stopCount >= 1)
            #expect(try await calls(w, "CloseNotification").count == 1)
            #expect(try AlarmRepository(database: w.database).find(id: id)?.enabled == false, "a once alarm turns itself off")
            #expect(next == nil)
            let played = w.player.sounds.count
            w.clock.advance(by: 60)
            #expect(w.player.sounds.count == played, "nothing plays after Stop")
            #expect(throws: UseCaseError.refused("no alarm is ringing")) { try w.cli.stopRinging(by: .cli) }
            #expect(throws: UseCaseError.refused("no alarm is ringing")) { try w.cli.snoozeRinging(by: .cli) }
            #expect(try w.rings.history(alarmID: id).map(\.outcome) == [.stopped])
        }
    }

    /// #26: a ring stopped by the command line (another process) once ended its sound here but published no
    /// `.alarmEnded`, so the dashboard and Home Assistant went on showing it ringing; one stopped in the agent
    /// was published by the use case. Now the service holding the ring publishes its end, once, either way.
    @Test("a ring's end is published once, by the service holding it, whoever answered: the command line or this agent")
    func endPublishedOnce() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let seen = Locked<[String]>([])
            let stream = w.events.subscribe()
            let collector = Task {
                for await event in stream {
                    guard case .alarmEnded(let ring) = event else { continue }
                    seen.withLock { $0.append("\(ring.alarmID) \(ring.outcome.rawValue) \(ring.endedBy?.rawValue ?? "-")") }
                }
            }
            defer { collector.cancel() }
            let first = try add(w, "06:30")
            _ = await setAndTick(w, "06:30:00")
            #expect(w.service.isRinging)
            _ = try w.cli.stopRinging(by: .cli)
            #expect(seen.value.isEmpty, "the command line's use case publishes nothing of its own")
            _ = await w.service.tick()
            #expect(try await eventually { seen.value == ["\(first) stopped cli"] })
            _ = await w.service.tick()

            let second = try add(w, "06:40")
            _ = await setAndTick(w, "06:40:00")
            #expect(w.service.isRinging)
            #expect(w.ringing.stop(by: .button))
            _ = await w.service.tick()
            _ = await w.service.tick()
            #expect(try await eventually { seen.value.count == 2 })
            try await Task.sleep(for: .milliseconds(200))
            #expect(seen.value == ["\(first) stopped cli", "\(second) stopped button"])
        }
    }

    @Test("Snooze rings again 9 minutes later, as often as asked; then Stop; a daily alarm stays on for tomorrow")
    func snooze() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            _ = await setAndTick(w, "06:30:00")
            w.clock.set(at("06:31:00"))
            let snoozed = try w.cli.snoozeRinging(by: .cli)
            #expect(snoozed.ring.snoozeUntil == at("06:40:00"))
            #expect(await w.service.tick() == at("06:40:00"))
            #expect(!w.service.isRinging)
            #expect(await setAndTick(w, "06:39:59") == at("06:40:00"))
            #expect(!w.service.isRinging)
            _ = await setAndTick(w, "06:40:00")
            #expect(w.service.isRinging)
            #expect(w.service.currentRing?.kind == .snooze)
            w.clock.set(at("06:40:30"))
            #expect(try w.cli.snoozeRinging(by: .cli).ring.snoozeUntil == at("06:49:30"))
            #expect(await w.service.tick() == at("06:49:30"))
            _ = await setAndTick(w, "06:49:30")
            #expect(w.service.isRinging)
            _ = try w.cli.stopRinging(by: .cli)
            let next = await w.service.tick()
            #expect(next == localDate("2026-01-16 06:30:00", ny))
            #expect(try w.rings.history(alarmID: id).map(\.outcome) == [.snoozed, .snoozed, .stopped])
            #expect(try AlarmRepository(database: w.database).find(id: id)?.enabled == true)
        }
    }

    @Test("nobody answers: it rings 10 minutes, then stops, records a miss and leaves \"Missed alarm 06:30\"")
    func tenMinutes() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            _ = await setAndTick(w, "06:30:00")
            #expect(await setAndTick(w, "06:39:59") == at("06:40:00"))
            #expect(w.service.isRinging)
            let next = await setAndTick(w, "06:40:00")
            #expect(!w.service.isRinging)
            #expect(next == localDate("2026-01-16 06:30:00", ny))
            let shown = try await notifications(w, count: 2)
            #expect(shown.last?.summary == "Missed alarm 06:30")
            #expect(shown.last?.body.contains("nobody answered") == true)
            #expect(shown.last?.actions == [])
            #expect(try await calls(w, "CloseNotification").count == 1, "the ringing notification closes")
            let history = try w.rings.history(alarmID: id)
            #expect(history.map(\.outcome) == [.missed] && history.first?.endedBy == .timeout)
            let list = try w.cli.list().alarms
            #expect(list.first?.missedAt == at("06:30:00"))
        }
    }

    @Test("after a resume: 10 minutes late rings at once; 10 minutes and a second late is recorded as missed, never rung")
    func late() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            try add(w, "06:30", repeat: "daily")
            _ = await setAndTick(w, "06:00:00")
            _ = await setAndTick(w, "06:40:00")
            #expect(w.service.isRinging)
            #expect(w.service.currentRing?.dueAt == at("06:30:00"))
            #expect(w.service.currentRing?.startedAt == at("06:40:00"))
            _ = try w.cli.stopRinging(by: .cli)
            _ = await w.service.tick()

            let other = try world(bus: bus)
            let second = try add(other, "06:30", repeat: "daily")
            _ = await setAndTick(other, "06:40:01")
            #expect(!other.service.isRinging)
            #expect(other.player.sounds.isEmpty)
            let history = try other.rings.history(alarmID: second)
            #expect(history.map(\.outcome) == [.missed] && history.first?.endedBy == .late && history.first?.startedAt == nil)
            let shown = try await notifications(other, count: 2)
            #expect(shown.last?.summary == "Missed alarm 06:30")
            #expect(shown.last?.body.contains("off or asleep") == true)
            #expect(other.service.nextAt == localDate("2026-01-16 06:30:00", ny))
        }
    }

    @Test("the agent restarts while it rings: it rings again until ten minutes after it started; later, a miss")
    func restart() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let first = try world(bus: bus)
            let id = try add(first, "06:30")
            _ = await setAndTick(first, "06:30:00")
            let ringID = try #require(first.service.currentRing?.id)
            // A new agent (the first one's process died: its row still says ringing).
            let second = first.restarted()
            #expect(await setAndTick(second, "06:35:00") == at("06:40:00"))
            #expect(second.service.currentRing?.id == ringID)
            let third = first.restarted()
            _ = await setAndTick(third, "06:41:00")
            #expect(!third.service.isRinging)
            #expect(try first.rings.history(alarmID: id).map(\.outcome) == [.missed])
            #expect(try AlarmRepository(database: first.database).find(id: id)?.enabled == false)
            #expect(throws: UseCaseError.refused("no alarm is ringing")) { try first.cli.stopRinging(by: .cli) }
            _ = await second.service.tick()
        }
    }

    @Test("a snooze survives a restart; found more than 10 minutes late it is a miss")
    func snoozeAcrossRestart() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            _ = await setAndTick(w, "06:30:00")
            _ = try w.cli.snoozeRinging(by: .cli)
            _ = await w.service.tick()
            let again = w.restarted()
            _ = await setAndTick(again, "06:41:00")
            #expect(again.service.currentRing?.kind == .snooze)
            _ = try again.cli.snoozeRinging(by: .cli)
            _ = await again.service.tick()
            let late = w.restarted()
            _ = await setAndTick(late, "07:05:00")
            #expect(!late.service.isRinging)
            #expect(try w.rings.history(alarmID: id).map { "\($0.kind.rawValue) \($0.outcome.rawValue)" }
                    == ["scheduled snoozed", "snooze snoozed", "snooze missed"])
        }
    }

    @Test("turned off or given a new time while it rings: it stops")
    func changedWhileRinging() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            _ = await setAndTick(w, "06:30:00")
            _ = try w.cli.setEnabled(id: id, false)
            _ = await w.service.tick()
            #expect(!w.service.isRinging)
            #expect(try w.rings.history(alarmID: id).last?.endedBy == .changed)
            let other = try add(w, "06:31", repeat: "daily")
            _ = await setAndTick(w, "06:31:00")
            #expect(w.service.isRinging)
            _ = try w.cli.edit(id: other, .init(time: "07:00"))
            _ = await w.service.tick()
            #expect(!w.service.isRinging)
            #expect(w.service.nextAt == at("07:00:00"))
        }
    }

    @Test("the notification's Stop and Snooze buttons answer the ringing alarm; a forged press from another connection does nothing")
    func notificationButtons() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus)
            let id = try add(w, "06:30", repeat: "daily")
            let settings = SettingsRepository(database: w.database)
            let feedback = FeedbackNotifier(devices: FeedbackDevices(haptics: w.haptics, catalog: FixedSoundCatalog([]), player: w.player,
                                                                     beep: Self.beep, desktop: w.desktop),
                                            settings: settings, clock: w.clock, logger: Logger(label: "t"))
            let actions = NotificationActions(desktop: w.desktop, feedback: feedback,
                                              doses: DoseUseCases(repository: DoseRepository(database: w.database), clock: w.clock),
                                              logger: Logger(label: "t"), ringer: w.ringer, alarms: w.ringing)
            let service = Task { try await actions.run() }
            defer { service.cancel() }
            _ = await setAndTick(w, "06:30:00")
            // The mock numbers notifications from 1.
            #expect(try await notifications(w).count == 1)
            let notificationID: UInt32 = 1
            try await Task.sleep(for: .milliseconds(200)) // the actions service subscribes
            let forger = try DBusConnection(bus: .address(bus.address))
            try forger.send(path: "/org/freedesktop/Notifications", interface: "org.freedesktop.Notifications", member: "ActionInvoked",
                            arguments: [.uint32(notificationID), .string("alarm-stop")])
            try await emit(w, "ActionInvoked", [.uint32(notificationID), .string("alarm-snooze")])
            #expect(try await eventually { try w.rings.history(alarmID: id).last?.outcome == .snoozed })
            #expect(try w.rings.history(alarmID: id).last?.endedBy == .notification)
            _ = await w.service.tick()
            _ = await setAndTick(w, "06:40:00")
            let second = try await calls(w, "Notify").count
            #expect(second == 2)
            try await emit(w, "ActionInvoked", [.uint32(UInt32(second)), .string("alarm-stop")])
            #expect(try await eventually { try w.rings.history(alarmID: id).last?.outcome == .stopped })
            #expect(try w.rings.history(alarmID: id).map(\.endedBy) == [.notification, .notification])
            #expect(try DoseRepository(database: w.database).count() == 0)
        }
    }

    func emit(_ w: World, _ member: String, _ args: [DBusValue]) async throws {
        _ = try await w.desktop.connection.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                interface: "org.freedesktop.DBus.Mock", member: "EmitSignal",
                                                arguments: [.string("org.freedesktop.Notifications"), .string(member),
                                                            .string(args.map(\.signature).joined()), .array(elementSignature: "v", args.map { .variant($0) })])
    }

    func press(_ packet: UInt8, _ event: UInt8, at date: Date) -> ButtonSignal {
        .advert(BLEAdvert(address: Self.bthome, name: nil, rssi: -60, serviceData: [BLEAdvert.bthomeUUID: [0x40, 0x00, packet, 0x3A, event]],
                          manufacturerData: [:], uuids: [], receivedAt: date))
    }

    @Test("while it rings a button is the alarm's: single Stop, double Snooze, never a dose, even just after; later presses log doses again")
    func buttons() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let w = try world(bus: bus, now: "05:00:00")
            let id = try add(w, "06:30", repeat: "daily")
            let doses = DoseRepository(database: w.database)
            let pipeline = ButtonPipeline(buttons: [try ButtonConfig(address: Self.bthome, kind: .bthome, name: "bedside")],
                                          doses: DoseUseCases(repository: doses, clock: w.clock), samples: nil, events: nil,
                                          clock: w.clock, logger: Logger(label: "t"), alarms: w.ringing)
            _ = await setAndTick(w, "06:30:00")
            #expect(pipeline.handle(press(1, 0x02, at: w.clock.now())).isEmpty)
            #expect(try lastEnd(w, id) == "snoozed button")
            _ = await w.service.tick()
            // Just after the snooze: a press meant for the alarm is no dose.
            w.clock.advance(by: 5)
            #expect(pipeline.handle(press(2, 0x01, at: w.clock.now())).isEmpty)
            #expect(try lastEnd(w, id) == "snoozed button")
            #expect(await setAndTick(w, "06:38:59") == at("06:39:00"))
            #expect(!w.service.isRinging)
            _ = await setAndTick(w, "06:39:00")
            #expect(w.service.isRinging)
            // A triple press while it rings: nothing (neither Stop nor a dose).
            #expect(pipeline.handle(press(3, 0x03, at: w.clock.now())).isEmpty)
            #expect(w.service.isRinging)
            #expect(pipeline.handle(press(4, 0x01, at: w.clock.now())).isEmpty)
            #expect(try lastEnd(w, id) == "stopped button")
            _ = await w.service.tick()
            w.clock.advance(by: 9)
            #expect(pipeline.handle(press(5, 0x01, at: w.clock.now())).isEmpty, "9 s after Stop: still the alarm's")
            #expect(try doses.count() == 0)
            w.clock.advance(by: 2)
            #expect(pipeline.handle(press(6, 0x01, at: w.clock.now())).count == 1, "11 s after Stop the button goes to the dose rules again")
        }
    }
}
