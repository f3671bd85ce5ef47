import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Logging
import Testing

/// The household link as a port (#26): the service talks to `HouseholdBroker` only, so its protocol with the
/// broker is tested here in memory; the three-agent scenarios run it on a real mosquitto.
@Suite("HouseholdService through the HouseholdBroker port", .timeLimit(.minutes(3)))
struct HouseholdBrokerPortTests {
    static let t = Date(timeIntervalSince1970: 1_772_427_600) // 2026-03-02 05:00 UTC

    static func eventually(tries: Int = 500, _ condition: () -> Bool) async -> Bool {
        for _ in 0..<tries {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// bedroom-pi of "Jen's family" on a fake broker and a fake clock.
    struct Member {
        let clock = FakeClock(HouseholdBrokerPortTests.t, timeZone: TimeZone(identifier: "UTC")!)
        let broker = FakeHouseholdBroker()
        let database: DoseTapDatabase
        let service: HouseholdService

        init(events: EventBus? = nil) throws {
            database = try DoseTapDatabase(directory: freshDataFolder("dosetap-household-port"))
            let logger = Logger(label: "household.port")
            let devices = FeedbackDevices(haptics: RecordingHaptics(), catalog: FixedSoundCatalog([]), player: RecordingSoundPlayer(),
                                          beep: SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav"), desktop: nil)
            let ringer = AlarmBell(devices: devices, settings: SettingsRepository(database: database), clock: clock, logger: logger)
            service = HouseholdService(
                identity: HouseholdIdentity(name: "Jen's family", device: "bedroom-pi"), database: database, link: broker,
                delivery: BackupDelivery(http: RecordingHTTP(), clock: clock, wording: .init(household: "Jen's family"), pushTokenFile: nil,
                                         pushServer: "http://127.0.0.1:9", phone: nil, logger: logger),
                ringer: ringer, clock: clock, logger: logger, events: events, databaseChanges: nil,
                ownAlarms: nil, statusFile: nil)
        }
    }

    @Test("follows the household's topics, says it is online when the link is up, hears a peer, and says goodbye at stop")
    func protocolWithTheBroker() async throws {
        let member = try Member()
        let (broker, service) = (member.broker, member.service)
        let running = Task { try await service.run() }

        #expect(await Self.eventually { broker.connects == 1 })
        #expect(broker.subscriptions == HouseholdTopic.subscriptions(household: "jen-s-family"))

        // Link up: the service says it is online, retained, on its own peer topic.
        broker.link(true)
        let peerTopic = HouseholdTopic.peer(device: "bedroom-pi").topic(household: "jen-s-family")
        #expect(await Self.eventually { broker.published.contains { $0.topic == peerTopic && $0.retain && $0.text.contains("online") } })

        // A peer's heartbeat: heard. A message of another household: not.
        broker.deliver(topic: HouseholdTopic.peer(device: "kitchen").topic(household: "jen-s-family"),
                       String(decoding: HouseholdMessage.encode(PeerMessage(online: Int64(Self.t.timeIntervalSince1970))), as: UTF8.self),
                       retained: true)
        broker.deliver(topic: HouseholdTopic.peer(device: "attic").topic(household: "neighbours"),
                       String(decoding: HouseholdMessage.encode(PeerMessage(online: Int64(Self.t.timeIntervalSince1970))), as: UTF8.self))
        #expect(await Self.eventually { service.peers["kitchen"] == true })
        #expect(service.peers["attic"] == nil)

        // Stop: a clean goodbye (offline, retained), then the link is closed.
        running.cancel()
        _ = try? await running.value
        let last = try #require(broker.published.last)
        #expect(last.topic == peerTopic && last.retain && last.text.contains("offline"))
        #expect(broker.disconnects == 1)
    }

    @Test("a backup ringing here is news on the event bus — its start, and its end once — as the dashboard and Home Assistant hear it")
    func backupRingIsNews() async throws {
        let events = EventBus()
        let news = Locked<[String]>([])
        let heard = events.subscribe()
        let listener = Task {
            for await event in heard {
                switch event {
                case .backupAlarmRinging(let ring, let alarm, let owner):
                    news.withLock { $0.append("ringing \(alarm.time) \(alarm.label) of \(owner) due \(Int(ring.dueAt.timeIntervalSince(Self.t)))") }
                case .backupAlarmEnded(let ring, let owner):
                    news.withLock { $0.append("ended \(ring.outcome.rawValue) \(ring.endedBy?.rawValue ?? "-") of \(owner)") }
                default: break
                }
            }
        }
        defer { listener.cancel() }
        let member = try Member(events: events)
        let (broker, service, clock, database) = (member.broker, member.service, member.clock, member.database)
        let ringing = RingAnswers(alarms: AlarmUseCases(store: DataStore(database: database), clock: clock, battery: { nil }),
                                    holders: [service], logger: Logger(label: "household.news"))
        let running = Task { try await service.run() }
        defer { running.cancel() }
        #expect(await Self.eventually { broker.connects == 1 })
        broker.link(true)

        // jen-laptop plans its 05:00 alarm with this machine as its first backup, then dies.
        let root = "jen-s-family"
        let at = Int64(Self.t.timeIntervalSince1970)
        broker.deliver(topic: HouseholdTopic.peer(device: "jen-laptop").topic(household: root),
                       String(decoding: HouseholdMessage.encode(PeerMessage(online: at)), as: UTF8.self), retained: true)
        let plan = PlanMessage(label: "Wake", time: "05:00", occurrences: [at], targets: [.device("bedroom-pi")])
        broker.deliver(topic: HouseholdTopic.plan(owner: "jen-laptop", alarmID: 1).topic(household: root),
                       String(decoding: HouseholdMessage.encode(plan), as: UTF8.self), retained: true)
        #expect(await Self.eventually { service.peers["jen-laptop"] == true })
        broker.deliver(topic: HouseholdTopic.peer(device: "jen-laptop").topic(household: root),
                       String(decoding: HouseholdMessage.encode(PeerMessage.offline), as: UTF8.self), retained: true)
        #expect(await Self.eventually { service.peers["jen-laptop"] == false })

        // Its first backup slot comes (T+2 min): once the service waits for it (or for an earlier instant), the clock
        // moves there, and the backup rings here, and says so. (Steps of 30 s with a fixed wait after each let the
        // fake clock outrun a service slowed by a loaded machine: a fresh-clone run saw it ring 4 minutes late.)
        let slot = Self.t.addingTimeInterval(120)
        #expect(await Self.eventually { clock.deadlines.first.map { $0 <= slot } == true }, "\(clock.deadlines)")
        clock.set(slot)
        #expect(await Self.eventually { service.isRinging })
        #expect(await Self.eventually { news.value.count == 1 })
        #expect(news.value.first?.hasPrefix("ringing 05:00 Wake of jen-laptop due ") == true, "\(news.value)")

        // Stopped here: its end is said once.
        #expect(ringing.stop(by: .cli))
        #expect(await Self.eventually { news.value.count == 2 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(news.value.count == 2 && news.value.last == "ended stopped cli of jen-laptop", "\(news.value)")
    }
}
