// Button latency and cost: a BTHome press on a (mock) BlueZ → the dose decided and committed and its
// event published (feedback follows the event, on DoseInputFeedback's subscription); the same for a Flic 2
// (its MACed notification on the GATT link of the mock → the Flic 2 source's session → the pipeline); and the
// agent's CPU time for adverts of a busy neighbourhood of unknown devices.
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
import DoseTapApp
import DoseTapCore
import DoseTapCrypto
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Glibc
import Logging
import Synchronization

// As in `dosetap agent`: Swift concurrency on the agent's one epoll thread (DOSETAP_DISPATCH_EXECUTOR=1: on
// libdispatch's pool, for a before/after comparison).
let onLoop = ProcessInfo.processInfo.environment["DOSETAP_DISPATCH_EXECUTOR"] == "1" ? false : EpollLoop.installAsGlobalExecutor()
print("executor: \(onLoop ? "the agent's epoll loop" : "libdispatch's worker pool")")

/// The files mapped at start (as `dosetap agent` takes them): the third run gives their clean pages back before
/// each press.
let pages = ResidentPages()
let arguments = CommandLine.arguments.dropFirst().compactMap(Int.init)
let presses = arguments.first ?? 1000
let unknown = arguments.dropFirst().first ?? 1000
/// Twenty buttons share the presses, so none exceeds the flood guard's 60 actions a minute.
let buttons = (0..<20).map { String(format: "A4:C1:38:8D:18:%02X", $0) }
/// A neighbour nobody added (a unicast address: 11:… would be a group address, refused before it is an advert).
let neighbour = "C4:7C:8D:6A:11:22"

/// The wall clock, shifted forward between presses: a day after each take/undo pair, so that each lands
/// on a night of its own (the dose log then holds what a real one does: a few events in 48 hours), or
/// 2 s after each press for the stress run (one night, the log grows by every press).
final class ShiftedClock: Scheduling {
    private let offset = Mutex<TimeInterval>(0)
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    var timeZone: TimeZone { TimeZone(identifier: "America/New_York")! }
    func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    /// Timers (none in no-double mode) wait on the real clock, shifted back.
    func sleep(until deadline: Date) async -> WakeReason {
        await TimerFDScheduler.shared.sleep(until: deadline.addingTimeInterval(-offset.withLock { $0 }))
    }
}

final class Probe: Sendable {
    /// Each advert handled: the advert, when it was done (real and shifted clock), events committed.
    let handled = Mutex<[(BLEAdvert, Date, Date, Int)]>([])
    /// Feedback cues played (by DoseInputFeedback, from the events).
    let cues = Mutex(0)
    /// Each Flic 2 gesture handled: when it was done (real and shifted clock), its arrival (shifted), events committed.
    let gestures = Mutex<[(Date, Date, Date, Int)]>([])
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
    var mapping = ButtonMapping()  // single → take, hold → undo
    mapping.noDouble = true
    for (n, a) in buttons.enumerated() {
        try ButtonRepository(database: db).save(try ButtonConfig(address: a, kind: .bthome, name: "bench-\(n)", mapping: mapping))
    }
    // A Flic 2 on the mock's GATT, answered by the simulated button, paired beforehand (the full verify in-process).
    for m in MockBlueZGATT.methods {
        _ = try await mock.call(destination: "org.bluez", path: MockBlueZGATT.path, interface: "org.freedesktop.DBus.Mock", member: "AddMethod",
                                arguments: [.string(MockBlueZGATT.interface), .string(m.name), .string(m.inSignature), .string(m.outSignature), .string(m.code)])
    }
    let flicAddress = "80:E4:DA:70:12:34"
    let flicPaths = try await mock.call(destination: "org.bluez", path: MockBlueZGATT.path, interface: MockBlueZGATT.interface, member: "AddFlic2",
                                        arguments: [.string("hci0"), .string(flicAddress), .string("F2")])
    var simulated = SimulatedFlic2Button(address: BluetoothAddress(flicAddress)!)
    var pairing: Flic2Pairing?
    do {
        var session = Flic2Session(mode: .pair, address: simulated.address, crypto: SwiftCryptoFlic2(), factoryKey: simulated.factory.publicKey)
        var pending = session.start()
        while !pending.isEmpty {
            let output = pending.removeFirst()
            if case .paired(let made, _) = output { pairing = made }
            if case .write(let frame) = output { for answer in simulated.receive(frame) { pending += session.receive(answer) } }
        }
        simulated.disconnect()
    }
    guard let pairing else { throw FixtureError("the in-process pairing with the simulated Flic 2 failed") }
    try ButtonRepository(database: db).save(try ButtonConfig(address: flicAddress, kind: .flic2, name: "bench-flic", pairing: pairing.hex,
                                                             mapping: mapping))
    let peer = MockFlic2Peer(connection: mock, device: flicPaths[0].string ?? "", write: flicPaths[1].string ?? "",
                             notify: flicPaths[2].string ?? "", button: simulated)
    try await peer.start()
    let devices = FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                  beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/dev/null"), desktop: nil)
    let clock = ShiftedClock()
    let feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: db), clock: clock, logger: logger)
    let probe = Probe()
    let events = EventBus()
    let answers = DoseInputFeedback(events: events) { cue in
        await feedback.play(cue.event, title: cue.title, body: cue.body)
        probe.cues.withLock { $0 += 1 }
    }
    let answering = Task { try await answers.run() }
    let service = ButtonService(
        sources: ButtonSources.machine(
            bluez: BlueZClient(connection: try DBusConnection(bus: .address(bus.address)), logger: logger, now: { clock.now() }),
            hid: nil, clock: clock, logger: logger),
        buttons: ButtonRepository(database: db), doses: DoseUseCases(repository: DoseRepository(database: db), clock: clock, events: events),
        samples: BatterySampleRepository(database: db), events: events, clock: clock, logger: logger, databaseChanges: nil,
        onHandled: { signal, outcomes in
            let recorded = outcomes.filter { if case .recorded = $0 { true } else { false } }.count
            if case .gesture(_, _, _, let pressedAt) = signal {
                probe.gestures.withLock { $0.append((Date(), clock.now(), pressedAt, recorded)) }
            }
            guard case .advert(let advert) = signal else { return }
            probe.handled.withLock { $0.append((advert, Date(), clock.now(), recorded)) }
        })
    let task = Task { try await service.run() }
    try await Task.sleep(for: .seconds(1)) // subscribed
    // The devices already known were reported once at subscription; presses are counted after them.
    let known = probe.handled.withLock { $0.count }

    func advertise(_ a: String, _ payload: [UInt8]) async throws {
        _ = try await mock.call(destination: "org.bluez", path: "/org/bluez/hci0/dev_" + a.replacingOccurrences(of: ":", with: "_"),
                                interface: "org.freedesktop.DBus.Properties", member: "Set",
                                arguments: [.string("org.bluez.Device1"), .string("ServiceData"),
                                            .variant(.vardict([BLEAdvert.bthomeUUID: .bytes(payload)]))])
    }

    func waitHandled(_ count: Int) async throws {
        let start = Date()
        while probe.handled.withLock({ $0.count }) < count {
            if Date().timeIntervalSince(start) > 10 { throw FixtureError("advert \(count) was never handled (\(probe.handled.withLock { $0.count }) handled, \(known) known at the start)") }
            try await Task.sleep(for: .microseconds(200))
        }
    }

    // Presses. Two clocks start per press: before the mock is asked to emit PropertiesChanged (so
    // the mock's own work is included) and when our D-Bus layer takes the signal off the bus (the advert's
    // `receivedAt`, before decoding); both stop once the
    // dose is decided, committed (synchronous=FULL) and its feedback played.
    struct Run { var fromInjection: [Double] = []; var fromReceipt: [Double] = []; var committed = 0 }
    var sequence = 0
    func press(_ count: Int, nightly: Bool, releasing pages: ResidentPages? = nil) async throws -> Run {
        var run = Run()
        for i in 0..<count {
            // The agent's quiet state (#15): its clean pages of code given back, so this press maps back what it
            // runs (minor faults from the page cache).
            if let pages { pages.release() }
            // Take, then undo it (a hold), on the same button; then the next button.
            let event: UInt8 = i % 2 == 0 ? 0x01 : 0x04
            let button = buttons[(sequence / 2) % buttons.count]
            let packet = UInt8(truncatingIfNeeded: sequence / (2 * buttons.count) * 2 + sequence % 2 + 1)
            let sent = Date()
            try await advertise(button, [0x40, 0x00, packet, 0x3A, event])
            try await waitHandled(known + sequence + 1)
            let (advert, at, shiftedAt, recorded) = probe.handled.withLock { $0[known + sequence] }
            guard advert.address == button else { throw FixtureError("press \(sequence) was answered by an advert of \(advert.address)") }
            sequence += 1
            run.committed += recorded
            run.fromInjection.append(at.timeIntervalSince(sent) * 1000)
            run.fromReceipt.append(shiftedAt.timeIntervalSince(advert.receivedAt) * 1000)
            if nightly {
                if i % 2 == 1 { clock.advance(86_400) }
            } else {
                clock.advance(2)  // a hold 4 s after the last one on a button would count as the same holding
            }
        }
        return run
    }
    // A log like a real one: each take/undo pair on a night of its own.
    let realistic = try await press(presses, nightly: true)
    // Stress: every press in one night, so the dose log read by each decision grows to `presses` events.
    let crowded = try await press(presses, nightly: false)
    // Each press right after the agent gave back its clean pages (PageReleaseService): the first press after a
    // quiet spell. The benchmark is its own executable, linked like the agent.
    let released = try await press(max(2, presses / 5) & ~1, nightly: true, releasing: pages)

    // Flic 2: take then undo (a hold), each pair on a night of its own, once the source verified the button.
    var flic = Run()
    for _ in 0..<500 where !peer.withButton({ $0.isConnected }) { try await Task.sleep(for: .milliseconds(20)) }
    guard peer.withButton({ $0.isConnected }) else { throw FixtureError("the Flic 2 never verified") }
    let flicPresses = max(2, presses / 5) & ~1
    for i in 0..<flicPresses {
        let sent = Date()
        peer.press(i % 2 == 0 ? .single : .hold)
        let start = Date()
        while probe.gestures.withLock({ $0.count }) < i + 1 {
            if Date().timeIntervalSince(start) > 10 { throw FixtureError("Flic 2 press \(i) was never handled") }
            try await Task.sleep(for: .microseconds(200))
        }
        let (at, shiftedAt, arrived, recorded) = probe.gestures.withLock { $0[i] }
        flic.committed += recorded
        flic.fromInjection.append(at.timeIntervalSince(sent) * 1000)
        flic.fromReceipt.append(shiftedAt.timeIntervalSince(arrived) * 1000)
        if i % 2 == 1 { clock.advance(86_400) }
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
    answering.cancel()

    print("Button latency over \(presses) BTHome presses per run, no-double mode")
    print("| run | measured from | p50 | p99 | max | committed |")
    print("|---|---|---|---|---|---|")
    for (name, run) in [("a log like a real one (few events in 48 h)", realistic), ("stress: all in one night (log grows to \(presses))", crowded),
                        ("each press after the clean pages were given back (#15)", released)] {
        for (from, v) in [("mock asked to emit PropertiesChanged", run.fromInjection), ("PropertiesChanged taken off the bus by our D-Bus layer", run.fromReceipt)] {
            print("| \(name) | \(from) | " + String(format: "%.2f ms | %.2f ms | %.2f ms | %d |", percentile(v, 0.5), percentile(v, 0.99), v.max() ?? .nan, run.committed))
        }
    }
    print("Flic 2: \(flicPresses) presses (take, then undo), each pair on a night of its own")
    for (from, v) in [("the notification set on the mock's characteristic", flic.fromInjection),
                      ("the notification taken off the bus (PropertiesChanged)", flic.fromReceipt)] {
        print("| Flic 2 | \(from) | " + String(format: "%.2f ms | %.2f ms | %.2f ms | %d |", percentile(v, 0.5), percentile(v, 0.99), v.max() ?? .nan, flic.committed))
    }
    print("feedback cues played from the events: \(probe.cues.withLock { $0 }) (one per committed press)")
    print(String(format: "CPU time of this process for %d adverts of an unknown device: %.3f s (%.3f s per 1,000; includes the D-Bus calls that inject them)",
                 unknown, cpu, cpu / Double(unknown) * 1000))
}
