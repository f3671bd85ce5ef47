// Button latency and cost: a BTHome press on a (mock) BlueZ → the dose decided and committed and the
// feedback event played; and the agent's CPU time for adverts of a busy neighbourhood of unknown devices.
//
//   swift run -c release button-latency [PRESSES] [UNKNOWN_ADVERTS]      (default 1000 1000)
//
// Real parts: a private dbus-daemon with python-dbusmock's bluez5 template (the adverts are
// `Properties.Set` on Device1.ServiceData, which the mock turns into PropertiesChanged signals, as
// bluetoothd does), our D-Bus layer and BlueZ client, the agent's ButtonService, the BTHome parser, the
// dose policy and the SQLite store (synchronous=FULL, on /var/tmp), and FeedbackNotifier (with a
// recording motor and player: this machine has neither). Twenty buttons, mapped single → take,
// double → undo, each pressing take then undo in turn, so every press commits an event and no button
// goes over the flood guard's 60 actions a minute.
import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Glibc
import Logging
import Synchronization

let arguments = CommandLine.arguments.dropFirst().compactMap(Int.init)
let presses = arguments.first ?? 1000
let unknown = arguments.dropFirst().first ?? 1000
/// Twenty buttons share the presses, so none exceeds the flood guard's 60 actions a minute.
let buttons = (0..<20).map { String(format: "A4:C1:38:8D:18:%02X", $0) }
let neighbour = "11:22:33:44:55:66"

struct NY: WallClock {
    func now() -> Date { Date() }
    var timeZone: TimeZone { TimeZone(identifier: "America/New_York")! }
}

final class Probe: Sendable {
    let handled = Mutex<[(BLEAdvert, Date, Int)]>([])
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func percentile(_ v: [Double], _ p: Double) -> Double {
    let s = v.sorted()
    return s.isEmpty ? .nan : s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
}

let logger: Logger = {
    var l = Logger(label: "bench")
    l.logLevel = .error
    return l
}()

try await PrivateBus.run(mockTemplate: "bluez5", system: true) { bus in
    let mock = try DBusConnection(bus: .address(bus.address))
    _ = try await mock.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddAdapter",
                            arguments: [.string("hci0"), .string("bench")])
    for a in buttons + [neighbour] {
        _ = try await mock.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddDevice",
                                arguments: [.string("hci0"), .string(a), .string("b")])
    }
    let dir = URL(fileURLWithPath: "/var/tmp").appendingPathComponent("dosetap-button-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    let db = try DoseTapDatabase(directory: dir)
    var mapping = ButtonMapping()
    mapping.double = .undo
    mapping.noDouble = false
    for (n, a) in buttons.enumerated() {
        try ButtonRepository(database: db).save(try ButtonConfig(address: a, kind: .bthome, name: "bench-\(n)", mapping: mapping))
    }
    let devices = FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                  beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/dev/null"), desktop: nil)
    let feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: db), clock: NY(), logger: logger)
    let probe = Probe()
    let service = ButtonService(
        bluez: BlueZClient(connection: try DBusConnection(bus: .address(bus.address)), logger: logger),
        buttons: ButtonRepository(database: db), repository: DoseRepository(database: db), samples: BatterySampleRepository(database: db),
        feedback: feedback, clock: NY(), logger: logger, databaseChanges: nil,
        onHandled: { advert, outcomes in
            let recorded = outcomes.filter { if case .recorded = $0 { true } else { false } }.count
            probe.handled.withLock { $0.append((advert, Date(), recorded)) }
        })
    let task = Task { try await service.run() }
    try await Task.sleep(for: .seconds(1)) // subscribed

    func advertise(_ a: String, _ payload: [UInt8]) async throws {
        _ = try await mock.call(destination: "org.bluez", path: "/org/bluez/hci0/dev_" + a.replacingOccurrences(of: ":", with: "_"),
                                interface: "org.freedesktop.DBus.Properties", member: "Set",
                                arguments: [.string("org.bluez.Device1"), .string("ServiceData"),
                                            .variant(.vardict([BLEAdvert.bthomeUUID: .bytes(payload)]))])
    }

    func waitHandled(_ count: Int) async throws {
        let start = Date()
        while probe.handled.withLock({ $0.count }) < count {
            if Date().timeIntervalSince(start) > 10 { throw FixtureError("advert \(count) was never handled") }
            try await Task.sleep(for: .microseconds(200))
        }
    }

    // Presses: the latency is from the moment the mock has emitted PropertiesChanged (its Set returned)
    // to the dose decided, committed and its feedback played.
    var latencies: [Double] = []
    var committed = 0
    for i in 0..<presses {
        // Take, then undo it, on the same button; then the next button.
        let event: UInt8 = i % 2 == 0 ? 0x01 : 0x02
        let button = buttons[(i / 2) % buttons.count]
        try await advertise(button, [0x40, 0x00, UInt8(truncatingIfNeeded: i / (2 * buttons.count) * 2 + i % 2 + 1), 0x3A, event])
        let sent = Date()
        try await waitHandled(i + 1)
        let (_, at, recorded) = probe.handled.withLock { $0[i] }
        committed += recorded
        latencies.append(at.timeIntervalSince(sent) * 1000)
    }

    // A busy neighbourhood: adverts of a device nobody added.
    let before = cpuSeconds()
    let base = probe.handled.withLock { $0.count }
    for i in 0..<unknown {
        try await advertise(neighbour, [0x40, 0x00, UInt8(truncatingIfNeeded: i), 0x01, 0x50, 0x3A, 0x01])
    }
    try await waitHandled(base + unknown)
    let cpu = cpuSeconds() - before
    task.cancel()

    print("Button latency over \(presses) BTHome presses (\(committed) committed events)")
    print("| measure | p50 | p99 | max |")
    print("|---|---|---|---|")
    print(String(format: "| PropertiesChanged → dose decided, committed, feedback played | %.2f ms | %.2f ms | %.2f ms |",
                 percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.max() ?? .nan))
    print(String(format: "CPU time of this process for %d adverts of an unknown device: %.3f s (%.3f s per 1,000; includes the D-Bus calls that inject them)",
                 unknown, cpu, cpu / Double(unknown) * 1000))
}
