// Household latency (#12): from a backup slot falling due (T+2 min of an occurrence whose owner is gone)
// to the backup alarm ringing on the target device.
//
//   swift run -c release household-latency [RUNS]        (default 50)
//
// Real parts: a mosquitto on a free loopback port, libmosquitto, the target's HouseholdService on the real
// clock (TimerFDScheduler: the slot is a timerfd deadline), its SQLite store, the cascade, the AlarmBell
// (sound and vibration stand-ins that only record). Each run, a plan is published retained for a new alarm of
// an owner that is offline, with an occurrence 118.5–119.5 s in the past, so its first backup slot — this
// device — falls due about a second later; the figure is ring start − slot instant.
import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Synchronization

let runs = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 50) : 50
let household = HouseholdIdentity(name: "Bench", device: "bedroom-pi")
let latencies = Mutex<[Double]>([])
let rang = AsyncStream<Void>.makeStream()

try await PrivateBroker.run { broker in
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-household-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = try DoseTapDatabase(directory: directory)
    var logger = Logger(label: "bench")
    logger.logLevel = .error
    let client = try MQTTClient(clientID: "dosetap-bedroom-pi", will: .init(
        topic: HouseholdTopic.peer(device: "bedroom-pi").topic(household: household.topic), payload: HouseholdMessage.encode(PeerMessage.offline)))
    let devices = FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                  beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/dev/null"), desktop: nil)
    let ringer = AlarmBell(devices: devices, settings: SettingsRepository(database: database), clock: TimerFDScheduler.shared, logger: logger)
    let events = EventBus()
    let service = HouseholdService(
        identity: household, database: database, link: HouseholdLink(client: client, host: "127.0.0.1", port: broker.port, url: "mqtt://127.0.0.1"),
        delivery: BackupDelivery(http: NoHTTP(), clock: TimerFDScheduler.shared, wording: .init(household: "Bench"), pushTokenFile: nil, phone: nil,
                                 logger: logger),
        ringer: ringer, clock: TimerFDScheduler.shared, logger: logger, events: events, databaseChanges: nil,
        ownAlarms: nil, statusFile: nil)
    // A backup ringing here is news on the event bus, as the dashboard and Home Assistant hear it.
    let heard = events.subscribe()
    let listener = Task {
        for await event in heard {
            guard case .backupAlarmRinging(let ring, _, _) = event, let started = ring.startedAt else { continue }
            latencies.withLock { $0.append(started.timeIntervalSince(ring.dueAt) * 1000) }
            rang.continuation.yield()
        }
    }
    defer { listener.cancel() }
    let task = Task { try await service.run() }
    let ringing = RingAnswers(alarms: AlarmUseCases(store: DataStore(database: database), clock: SystemClock(), battery: { nil }),
                                holders: [service], logger: logger)
    // The owner: a publisher of its own that says it is gone.
    let owner = try MQTTClient(clientID: "dosetap-bench-owner")
    try await owner.connect(host: "127.0.0.1", port: broker.port)
    try owner.publish(HouseholdTopic.peer(device: "jen-laptop").topic(household: household.topic), HouseholdMessage.encode(PeerMessage.offline),
                      retain: true)
    var iterator = rang.stream.makeAsyncIterator()
    for run in 1...runs {
        let now = Date().timeIntervalSince1970
        let occurrence = Int64(now.rounded(.up)) + 1 - 120
        let plan = PlanMessage(label: "Bench \(run)", time: "05:00", occurrences: [occurrence], targets: [.device("bedroom-pi")])
        try owner.publish(HouseholdTopic.plan(owner: "jen-laptop", alarmID: run).topic(household: household.topic), HouseholdMessage.encode(plan),
                          retain: true)
        _ = await iterator.next()
        _ = ringing.stop(by: .cli)
    }
    task.cancel()
    owner.disconnect()
}

struct NoHTTP: OutboundHTTP {
    func post(_ request: OutboundRequest) async -> OutboundRetryPolicy.Attempt { .noAnswer }
}

let sorted = latencies.withLock { $0 }.sorted()
func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))] }
print(String(format: "household-latency: %d runs, slot due → backup ringing on the target: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
             sorted.count, percentile(0.5), percentile(0.99), sorted.last ?? 0))
