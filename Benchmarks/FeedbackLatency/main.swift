// Feedback latency: from a reminder falling due to the desktop notification accepted by the notification
// daemon, and to the vibration's first play event written to the motor.
//
//   swift run -c release feedback-latency [RUNS]        (default 30)
//
// Real parts: the agent's DoseScheduler on the real clock and its real timer, the SQLite store, the
// FeedbackNotifier, the D-Bus layer, a private dbus-daemon with python-dbusmock's notification daemon, and
// ForceFeedbackHaptics. The only fake is the motor itself: an EvdevIO that records when the first EV_FF
// play event is written (this machine has no force-feedback device).
import CLinuxInput
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization

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
