import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// Alarms ringing through the real agent on the real clock (faketime breaks a running agent's timers, see
/// design.md): python-dbusmock's notification daemon on a private session bus, its BlueZ on a private
/// system bus, the sound through ALSA from the agent itself into ALSA's file sink. Alarm times are minutes, so the time zone is a
/// fixed offset with seconds (`XXX-0:00:SS`, which the C library and DoseTap read), chosen so that the
/// next local minute starts a few seconds after the test does: the alarm rings on time without waiting
/// for a real minute boundary.
@Suite("dosetap agent: alarms ring for real", .serialized)
struct AlarmAgentTests {
    static let shelly = "A4:C1:38:8D:18:B2"

    /// A zone whose next minute begins `lead` (± 1) seconds from now, and that minute as an instant.
    static func zone(lead: Int) -> (tz: String, zone: TimeZone, minute: Date) {
        let now = Date()
        let utcSecond = Int(now.timeIntervalSince1970.rounded(.down)) % 60
        // Local second now = (utcSecond + offset) mod 60; it should read 60 - lead.
        let offset = ((60 - lead - utcSecond) % 60 + 60) % 60
        let zone = TimeZone(secondsFromGMT: offset)!
        let local = now.timeIntervalSince1970 + Double(offset)
        let minute = Date(timeIntervalSince1970: (local / 60).rounded(.up) * 60 - Double(offset))
        return (String(format: "XXX-0:00:%02d", offset), zone, minute)
    }

    static func hourMinute(_ date: Date, _ zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", c.hour!, c.minute!)
    }

    func mockCalls(_ mock: DBusConnection, _ destination: String, _ path: String, _ member: String) async throws -> [[DBusValue]] {
        let reply = try await mock.call(destination: destination, path: path, interface: "org.freedesktop.DBus.Mock",
                                        member: "GetMethodCalls", arguments: [.string(member)])
        return (reply.first?.array ?? []).compactMap { call in
            guard case .structure(let fields) = call, fields.count == 2 else { return nil }
            return fields[1].array
        }
    }

    func waitFor(_ condition: () async throws -> Bool, timeout: Double = 10) async throws -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test("on time: the notification has Stop and Snooze; Stop from the CLI, from the notification and from a button on the mock BlueZ; no dose logged")
    func ringsAndStops() async throws {
        let cli = try CLI()
        // The agent starts first, in a zone whose next minute is 20 s away; the alarm is set for that minute
        // once the agent listens (on a machine so loaded that too little is left by then, for the next one).
        let (tz, zone, firstMinute) = Self.zone(lead: 20)
        let before = Date()
        #expect(try await cli.run(["button", "add", Self.shelly, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)
        // How long a command takes on this machine now: the alarm is set far enough ahead for three of them.
        let margin = min(50, max(15, 3 * Date().timeIntervalSince(before)))
        let database = try DoseTapDatabase(directory: cli.dataDirectory)
        let log = LineBuffer()
        let sink = cli.home.appendingPathComponent("ring.wav").path
        // The dashboard on its socket only: its event stream says each ring's start and end (#26: a ring
        // stopped from the command line once ended without a word to the dashboard and Home Assistant).
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try cli.writeConfig("[web]\nlisten = []\n")
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { system in
            let bluez = try DBusConnection(bus: .address(system.address))
            try await bluez.addMockBlueZDevice(Self.shelly, alias: "SBBT-002C")
            try await PrivateBus.run(mockTemplate: "notification_daemon") { session in
                let desktop = try DBusConnection(bus: .address(session.address))
                let notifications = (destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications")
                let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
                let result = try await Subprocess.run(
                    exe, arguments: Arguments(argv),
                    // No player program on PATH: the alarm rings through ALSA from the agent itself (#32), into
                    // ALSA's file sink.
                    environment: cli.environment(tz: tz, extra: ["DBUS_SYSTEM_BUS_ADDRESS": system.address,
                                                                 "DBUS_SESSION_BUS_ADDRESS": session.address,
                                                                 "XDG_RUNTIME_DIR": runtime.path,
                                                                 "PATH": "/nonexistent", "DOSETAP_AUDIO_DEVICE": "file:FILE=\(sink),FORMAT=wav"]),
                    input: .none, output: .discarded, error: .sequence
                ) { execution in
                    let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                    #expect(await log.wait(for: "listening to BlueZ", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
                    #expect(await log.wait(for: "web dashboard listening", timeout: 15) != nil, "\(log.all.joined(separator: "\n"))")
                    let stream = try UnixStreamReader(path: runtime.appendingPathComponent("dosetap/web.sock").path,
                                                      request: "GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    #expect(stream.wait(for: "event: ready", timeout: 10) != nil, "\(stream.received)")
                    // At least `margin` ahead: beside two CPU hogs and a build, `alarm add` took more than 12 s and more
                    // than 28 s in two runs; a fixed 5 s margin failed both.
                    var next = firstMinute
                    while next.timeIntervalSinceNow < margin { next = next.addingTimeInterval(60) }
                    let minute = next
                    let hhmm = Self.hourMinute(minute, zone)
                    let added = try await cli.run(["alarm", "add", hhmm, "--label", "Wake"], tz: tz)
                    #expect(added.exitCode == 0, "\(added.err)")
                    try #require(Date() < minute.addingTimeInterval(-1), "the machine was too slow to set the alarm before it rings: the test proves nothing")

                    // 1. On time, at the minute; Stop from the command line.
                    #expect(await log.wait(for: "Alarm \(hhmm): ringing", timeout: minute.timeIntervalSinceNow + 10) != nil,
                            "\(log.all.joined(separator: "\n"))")
                    let late = Date().timeIntervalSince(minute)
                    #expect(late < 2, "rang \(late) s after its minute")
                    // Its sound: the beep (no sound set), softly at first (the volume rises over 30 s), in the sink.
                    #expect(try await waitFor { ((try? WAVAudio(contentsOf: sink))?.frames ?? 0) == 14_400 }, "\(log.all.joined(separator: "\n"))")
                    let heard = try WAVAudio(contentsOf: sink)
                    #expect(heard.sampleRate == 48_000 && heard.samples.contains { $0 != 0 })
                    #expect(log.all.contains { $0.contains("the alarm can be heard on this machine") })
                    #expect(!log.all.contains { $0.contains("alarm sound failed") }, "\(log.all.joined(separator: "\n"))")
                    let shown = try await mockCalls(desktop, notifications.destination, notifications.path, "Notify")
                    let first = try #require(shown.first)
                    #expect(first[3].string == "Alarm \(hhmm)")
                    #expect((first[5].array ?? []).compactMap(\.string) == ["alarm-stop", "Stop", "alarm-snooze", "Snooze 9 min"])
                    #expect(first[6].stringKeyed?["urgency"] == .byte(2))
                    let stop = try await cli.run(["alarm", "stop"], tz: tz)
                    #expect(stop.exitCode == 0 && stop.out == "Stopped alarm 1 (\(hhmm), \"Wake\").\n", "\(stop.out) \(stop.err)")
                    #expect(await log.wait(for: "alarm ring ended", timeout: 5) != nil, "\(log.all.joined(separator: "\n"))")
                    #expect(stream.wait(for: "event: alarmEnded", timeout: 10) != nil, "\(stream.received)")
                    #expect(try await waitFor { try await mockCalls(desktop, notifications.destination, notifications.path, "CloseNotification").count == 1 })

                    // 2. An alarm of this minute armed before it (the agent finds it at most 10 minutes late: it rings at once);
                    // Stop from the notification.
                    let alarms = AlarmRepository(database: database)
                    let rings = AlarmRingRepository(database: database)
                    let second = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: hhmm), label: "Second"), now: minute.addingTimeInterval(-60))
                    #expect(await log.wait(for: "Alarm \(hhmm): ringing", count: 2, timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
                    let id = UInt32(try await mockCalls(desktop, notifications.destination, notifications.path, "Notify").count)
                    _ = try await desktop.call(destination: notifications.destination, path: notifications.path, interface: "org.freedesktop.DBus.Mock",
                                               member: "EmitSignal", arguments: [.string("org.freedesktop.Notifications"), .string("ActionInvoked"),
                                                                                 .string("us"), .array(elementSignature: "v", [.variant(.uint32(id)), .variant(.string("alarm-stop"))])])
                    #expect(try await waitFor { try rings.history(alarmID: second.id).last?.outcome == .stopped })

                    // 3. Another; a single press of the BLE button stops it (and is no dose).
                    let third = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: hhmm), label: "Third"), now: minute.addingTimeInterval(-60))
                    #expect(await log.wait(for: "Alarm \(hhmm): ringing", count: 3, timeout: 10) != nil, "\(log.all.joined(separator: "\n"))")
                    try await bluez.sendBTHome(Self.shelly, [0x40, 0x00, 0x07, 0x3A, 0x01])
                    #expect(try await waitFor { try rings.history(alarmID: third.id).last?.outcome == .stopped }, "\(log.all.joined(separator: "\n"))")
                    #expect(await log.wait(for: "button answered the alarm", timeout: 5) != nil)
                    // Three rings, three ends on the stream: each said once, whoever answered.
                    _ = stream.wait(for: "\u{0}", timeout: 3)  // reads 3 s more: a second end of any ring would be here by then
                    #expect(stream.received.components(separatedBy: "event: alarmRinging").count - 1 == 3, "\(stream.received)")
                    #expect(stream.received.components(separatedBy: "event: alarmEnded").count - 1 == 3, "\(stream.received)")

                    try execution.send(signal: .terminate)
                    _ = try? await reader.value
                }
                #expect(result.terminationStatus == .exited(0))
            }
        }
        let rings = AlarmRingRepository(database: database)
        #expect(try (1...3).map { try rings.history(alarmID: $0).map { $0.endedBy } } == [[.cli], [.notification], [.button]])
        #expect(try DoseRepository(database: database).count() == 0, "a press during ringing never logs a dose")
        #expect(try AlarmRepository(database: database).all().allSatisfy { !$0.enabled }, "once alarms turn off after ringing")
    }
}
