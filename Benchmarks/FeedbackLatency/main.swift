// Feedback latency: from a reminder falling due to the desktop notification accepted by the notification
// daemon, and to the vibration's first play event written to the motor; then from an alarm falling due to
// its sound player started and to its first vibration.
//
//   swift run -c release feedback-latency [RUNS]        (default 30)
//
// Alarms: the agent's AlarmService and AlarmBell on the real clock (TimerFDScheduler), the SQLite store,
// the real SubprocessSoundPlayer starting aplay on ALSA's null device through a wrapper that stamps the
// instant it is executed, and the same motor stand-in. Alarm times are minutes: each run uses a fixed zone
// whose offset has seconds, chosen so that its next minute starts 1–2 s later.
//
// Real parts: the agent's DoseScheduler on the real clock and its real timer, the SQLite store, the
// FeedbackNotifier, the D-Bus layer, a private dbus-daemon with python-dbusmock's notification daemon, and
// ForceFeedbackHaptics. The only fake is the motor itself: an EvdevIO that records when the first EV_FF
// play event is written (this machine has no force-feedback device).
import CLinuxInput
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization

// As in `dosetap agent`: Swift concurrency on the agent's one epoll thread (DOSETAP_DISPATCH_EXECUTOR=1: on
// libdispatch's pool, for a before/after comparison).
let onLoop = ProcessInfo.processInfo.environment["DOSETAP_DISPATCH_EXECUTOR"] == "1" ? false : EpollLoop.installAsGlobalExecutor()
print("executor: \(onLoop ? "the agent's epoll loop" : "libdispatch's worker pool")")

final class Stamps: Sendable {
    let notified = Mutex<[Double]>([])
    let vibrated = Mutex<[Double]>([])
    let due = Mutex<Date?>(nil)
    /// The due instant whose vibration start was already recorded (later pulses are not a start).
    let recordedDue = Mutex<Date?>(nil)
}

/// The motor: records the first play write after the due instant.
struct TimingEvdevIO: EvdevIO {
    let stamps: Stamps
    func open(_ path: String) throws(EvdevError) -> Int32 { 42 }
    func close(_ fd: Int32) {}
    func forceFeedbackCapabilities(_ fd: Int32) throws(EvdevError) -> ForceFeedbackCapabilities {
        ForceFeedbackCapabilities(codes: [Int(FF_RUMBLE), Int(FF_GAIN)])
    }
    func effectCount(_ fd: Int32) throws(EvdevError) -> Int { 16 }
    func upload(_ fd: Int32, _ effect: inout KernelForceFeedbackEffect) throws(EvdevError) { effect.id = 0 }
    func remove(_ fd: Int32, effectID: Int16) throws(EvdevError) {}
    func write(_ fd: Int32, type: UInt16, code: UInt16, value: Int32) throws(EvdevError) {
        guard type == UInt16(EV_FF), code != UInt16(FF_GAIN), value == 1, let due = stamps.due.withLock({ $0 }) else { return }
        let ms = Date().timeIntervalSince(due) * 1000
        let first = stamps.recordedDue.withLock { recorded -> Bool in
            guard recorded != due else { return false }
            recorded = due
            return true
        }
        if first { stamps.vibrated.withLock { $0.append(ms) } }
    }
}

/// Measures when the notification was accepted by the daemon (FeedbackNotifier.deliver returns then).
struct TimingNotifier: Notifier {
    let feedback: FeedbackNotifier
    let stamps: Stamps
    func post(_ n: DoseNotification) {
        Task {
            await feedback.deliver(n)
            let ms = Date().timeIntervalSince(n.reminder.dueAt) * 1000
            stamps.notified.withLock { $0.append(ms) }
        }
    }
}

/// The real clock and timer in a given zone.
struct ZoneClock: Scheduling {
    let zone: TimeZone
    func now() -> Date { Date() }
    var timeZone: TimeZone { zone }
    func sleep(until deadline: Date) async -> WakeReason { await TimerFDScheduler.shared.sleep(until: deadline) }
}

struct SystemClockNY: Scheduling {
    func now() -> Date { Date() }
    var timeZone: TimeZone { TimeZone(identifier: "America/New_York")! }
    func sleep(until deadline: Date) async -> WakeReason { await TimerFDScheduler.shared.sleep(until: deadline) }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

let runs = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 30
let stamps = Stamps()
let logger: Logger = {
    var l = Logger(label: "bench")
    l.logLevel = .error
    return l
}()

try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
    let desktop = DesktopNotifications(connection: try DBusConnection(bus: .address(bus.address)))
    let motor = ForceFeedbackCandidate(sysname: "event5", devnode: "/dev/input/event5", name: "gpio-vibrator",
                                       capabilities: ForceFeedbackCapabilities(codes: [Int(FF_RUMBLE), Int(FF_GAIN)]), tagged: true)
    let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: TimingEvdevIO(stamps: stamps),
                                       sleep: { try await Task.sleep(for: $0) }, logger: logger)
    for i in 0..<runs {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-latency-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try DoseTapDatabase(directory: dir)
        let repo = DoseRepository(database: db)
        let devices = FeedbackDevices(haptics: haptics, catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                      beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/dev/null"),
                                      desktop: desktop)
        let feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: db), clock: SystemClockNY(), logger: logger)
        // The window opens 400 ms from now.
        let due = Date().addingTimeInterval(0.4)
        stamps.due.withLock { $0 = due }
        try repo.append([DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 225), at: due.addingTimeInterval(-DoseRules.windowOpens),
                                   timeZone: "America/New_York", source: .cli)])
        let scheduler = DoseScheduler(repository: repo, clock: SystemClockNY(), notifier: TimingNotifier(feedback: feedback, stamps: stamps),
                                      logger: logger, databaseChanges: nil)
        let task = Task { try await scheduler.run() }
        while stamps.notified.withLock({ $0.count }) <= i || stamps.vibrated.withLock({ $0.count }) <= i {
            try await Task.sleep(for: .milliseconds(5))
            if Date().timeIntervalSince(due) > 5 { throw FixtureError("reminder \(i) never arrived") }
        }
        task.cancel()
        try await Task.sleep(for: .milliseconds(1200)) // let the vibration pattern finish before the next run
    }
}

let n = stamps.notified.withLock { $0 }
let v = stamps.vibrated.withLock { $0 }
print("Feedback latency over \(runs) reminders (ms from due)")
print("| measure | p50 | p95 | max |")
print("|---|---|---|---|")
for (name, values) in [("notification accepted by the daemon", n), ("vibration started (first EV_FF play write)", v)] {
    print(String(format: "| %@ | %.1f | %.1f | %.1f |", name, percentile(values, 0.5), percentile(values, 0.95), values.max() ?? .nan))
}

// Alarms.
let work = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alarm-latency-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }
let stampFile = work.appendingPathComponent("player-started")
let wrapper = work.appendingPathComponent("aplay")
try """
    #!/bin/sh
    date +%s.%N >> '\(stampFile.path)'
    exec /usr/bin/aplay "$@"
    """.write(to: wrapper, atomically: true, encoding: .utf8)
try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper.path)
let beep = try BuiltinBeep.sound(cacheDirectory: work.path)
let player = SubprocessSoundPlayer(player: AudioPlayerCommand(program: .aplay, executable: wrapper.path, device: "null"), logger: logger)
let alarmStamps = Stamps()
let motor = ForceFeedbackCandidate(sysname: "event5", devnode: "/dev/input/event5", name: "gpio-vibrator",
                                   capabilities: ForceFeedbackCapabilities(codes: [Int(FF_RUMBLE), Int(FF_GAIN)]), tagged: true)
let alarmHaptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: TimingEvdevIO(stamps: alarmStamps),
                                        sleep: { try await Task.sleep(for: $0) }, logger: logger)
var soundMs: [Double] = []
for i in 0..<runs {
    let dir = work.appendingPathComponent("run-\(i)")
    let db = try DoseTapDatabase(directory: dir)
    // A zone whose next minute starts 1–2 s from now.
    let t = Date().timeIntervalSince1970
    let offset = Int((59 - t.truncatingRemainder(dividingBy: 60)).rounded(.down)) % 60
    let zone = TimeZone(secondsFromGMT: offset)!
    let clock = ZoneClock(zone: zone)
    let due = Date(timeIntervalSince1970: ((t + Double(offset)) / 60).rounded(.up) * 60 - Double(offset))
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let time = try TimeOfDay(hour: calendar.component(.hour, from: due), minute: calendar.component(.minute, from: due))
    _ = try AlarmRepository(database: db).add(try Alarm(id: 0, time: time, label: "bench", haptics: .strong), now: Date())
    alarmStamps.due.withLock { $0 = due }
    let devices = FeedbackDevices(haptics: alarmHaptics, catalog: FixedSoundCatalog([]), player: player, beep: beep, desktop: nil)
    let store = DataStore(database: db)
    let ringer = AlarmBell(devices: devices, settings: SettingsRepository(database: db), clock: clock, logger: logger)
    let alarms = AlarmUseCases(store: store, clock: clock, battery: { nil })
    let service = AlarmService(store: store, alarms: alarms, ringer: ringer, clock: clock, logger: logger, events: nil, databaseChanges: nil)
    let task = Task { try await service.run() }
    while alarmStamps.vibrated.withLock({ $0.count }) <= i || (try? String(contentsOf: stampFile, encoding: .utf8))?.split(separator: "\n").count ?? 0 <= i {
        try await Task.sleep(for: .milliseconds(5))
        if Date().timeIntervalSince(due) > 5 { throw FixtureError("alarm \(i) never rang") }
    }
    let started = (try String(contentsOf: stampFile, encoding: .utf8)).split(separator: "\n").last.flatMap { Double($0) } ?? .nan
    soundMs.append((started - due.timeIntervalSince1970) * 1000)
    RingAnswers(alarms: alarms, holders: [service], logger: logger).stop(by: .cli)
    task.cancel()
    _ = await task.result
    await player.stopAndWait()
    try await Task.sleep(for: .milliseconds(1500)) // let the vibration pattern finish before the next run
}
let alarmVibration = alarmStamps.vibrated.withLock { $0 }
print("")
print("Alarm latency over \(runs) alarms (ms from due)")
print("| measure | p50 | p99 | max |")
print("|---|---|---|---|")
for (name, values) in [("sound: player process started (aplay on ALSA null, via a stamping wrapper)", soundMs),
                       ("vibration started (first EV_FF play write)", alarmVibration)] {
    print(String(format: "| %@ | %.1f | %.1f | %.1f |", name, percentile(values, 0.5), percentile(values, 0.99), values.max() ?? .nan))
}
