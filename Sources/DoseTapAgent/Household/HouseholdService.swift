import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The backup cascade (#12) on this agent. As an owner it publishes the plan of each alarm with backups
/// ahead of time (retained), tells the household when its alarm was stopped or snoozed, and sends the push
/// and call targets. As a peer it keeps every plan it hears, rings its own `device:` slots unless a Stop was
/// heard, and takes over a dead owner's push and call slots through a claim. Every agent with a plan shows
/// "All backups tried …" when the list is exhausted. Without a broker it still sends this machine's push
/// and call targets. Everything from the broker is untrusted: it can ring a backup alarm here, never record
/// a dose or change an alarm.
public final class HouseholdService: Service, RingHolder, Sendable, CustomStringConvertible {
    public var description: String { "HouseholdService" }

    /// How often an online agent says so (the broker's last will says when it is gone).
    public static let heartbeat: TimeInterval = 60
    /// Devices remembered at once (`HouseholdPeers`).
    public static let peersKept = HouseholdPeers.kept

    struct BackupRinging {
        var ring: HouseholdRepository.BackupRing
        var ringing: AlarmBell.Ringing
        /// As the events and the ringer know it.
        var alarmRing: AlarmRing
    }

    struct State {
        var connected = false
        var connectedSince: Date?
        var peers = HouseholdPeers()
        var claims: [SlotKey: SlotClaim] = [:]
        var pending = HouseholdPending<HouseholdMessage>()
        /// The plans this agent published (or found retained in its name), by alarm.
        var published: [Int: PlanMessage?] = [:]
        var republish = false
        var nextHeartbeat: Date?
        var ringing: BackupRinging?
        var endedAt: Date?
        /// Causes already logged: the most recent ones (a stranger on the broker can name new causes for ever).
        var logged = RecentKeys<String>(capacity: 4096)
        var status: [UInt8] = []
        var deliveries: [SlotKey: Task<Void, Never>] = [:]
        var lastPrune: Date?
        /// Answers judged forged, by their whole content (#51 finding 5): the same Stop delivered again — retained,
        /// after a broker restart or a reconnection — keeps its verdict, however late it now arrives.
        var refusedAnswers = RecentKeys<CascadeAnswer>(capacity: 4096)
        /// Backup rings the store could not take yet (#51: the alarm sounds first): one rung but not written (`id` 0),
        /// or one ended here (its outcome set) whose end is not written; written on the store's back-off, in order.
        var keptRings: [HouseholdRepository.BackupRing] = []
        /// Answers not yet written: this device's, told to the household, and others' heard and acted on (#51).
        var keptAnswers: [CascadeAnswer] = []
        /// Slots marked (a push or call sent or claimed, a slot missed, "All backups tried") that the store could not
        /// take yet, in order; the cascade reads them over the store's (#51: a push slot is sent on time too).
        var keptMarks: [KeptMark] = []
        /// Plans heard (or published) that the store could not take yet, in the order taken (#51: a backup slot rings
        /// on time from a plan heard while the store was locked or full); applied to what is read, written in order.
        var keptPlans: [KeptPlan] = []
        /// When the kept rings, answers and plans are tried again (the store's back-off); nil: at the next pass.
        var keptRetryAt: Date?
    }

    /// What the household keeps in memory while the store refuses it, as copied for the next start (#51).
    public struct Kept: Sendable, Equatable, Codable {
        var rings: [HouseholdRepository.BackupRing]
        var answers: [CascadeAnswer]
        var plans: [KeptPlan]
        var marks: [KeptMark]
        var isEmpty: Bool { rings.isEmpty && answers.isEmpty && plans.isEmpty && marks.isEmpty }
    }

    /// A plan the store could not take: applied in memory as `HouseholdRepository.applyPlan` would (`KnownOccurrence.applying`).
    struct KeptPlan: Sendable, Equatable, Codable {
        var owner: String
        var alarmID: Int
        var plan: KnownPlan?
        var at: Date
    }

    /// A slot's mark the store could not take: written later in order (`HouseholdRepository.mark`).
    struct KeptMark: Sendable, Equatable, Codable {
        var slot: SlotKey
        var outcome: SlotOutcome
        var expecting: SlotOutcome?
        var detail: String?
        var at: Date
    }

    /// At most this many plans are kept in memory (a member sends one per alarm and change); the oldest go first.
    static let keptPlansLimit = 256

    let identity: HouseholdIdentity
    let database: DoseTapDatabase
    let health: StoreHealth
    let link: (any HouseholdBroker)?
    let refused: HouseholdLink.Refused?
    let delivery: BackupDelivery
    let ringer: AlarmBell
    let clock: any Scheduling
    let logger: Logger
    let events: EventBus?
    let databaseChanges: AsyncStream<Void>?
    let ownAlarms: (any OwnAlarmAnswering)?
    let statusFile: AgentStatusFile.Holder?
    private let loop: PlanningLoop
    let state = Mutex(State())
    /// What is kept in memory, copied where a restart finds it (#51); nil: not copied.
    let kept: KeptFile<Kept>?

    /// - Parameters:
    ///   - ownAlarms: this machine's own alarms, stopped here when the household stopped one elsewhere.
    public convenience init(identity: HouseholdIdentity, database: DoseTapDatabase, link: (any HouseholdBroker)?, delivery: BackupDelivery,
                            ringer: AlarmBell, clock: any Scheduling, logger: Logger, events: EventBus?, databaseChanges: AsyncStream<Void>?,
                            ownAlarms: (any OwnAlarmAnswering)?, statusFile: AgentStatusFile.Holder?) {
        self.init(identity: identity, database: database, broker: link.map { .success($0) }, delivery: delivery, ringer: ringer, clock: clock,
                  logger: logger, events: events, databaseChanges: databaseChanges, ownAlarms: ownAlarms, statusFile: statusFile)
    }

    /// - Parameters:
    ///   - broker: the household broker, a configured one refused (shown by `household status`), or nil.
    public init(identity: HouseholdIdentity, database: DoseTapDatabase, broker: Result<any HouseholdBroker, HouseholdLink.Refused>?, delivery: BackupDelivery,
                ringer: AlarmBell, clock: any Scheduling, logger: Logger, events: EventBus?, databaseChanges: AsyncStream<Void>?,
                ownAlarms: (any OwnAlarmAnswering)?, statusFile: AgentStatusFile.Holder?, health: StoreHealth? = nil,
                kept: KeptFile<Kept>? = nil) {
        self.kept = kept
        self.health = health ?? StoreHealth(folder: database.folder, logger: logger)
        self.identity = identity
        self.database = database
        switch broker {
        case .success(let link): self.link = link; refused = nil
        case .failure(let problem): link = nil; refused = problem
        case nil: link = nil; refused = nil
        }
        self.delivery = delivery
        self.ringer = ringer
        self.clock = clock
        self.logger = logger
        self.events = events
        self.databaseChanges = databaseChanges
        self.ownAlarms = ownAlarms
        self.statusFile = statusFile
        loop = PlanningLoop(clock: clock)
        // What was kept in memory is written as soon as the store can take it again.
        let loop = self.loop
        self.health.whenRecovered { loop.poke() }
    }

    var repository: HouseholdRepository { HouseholdRepository(database: database) }

    /// Copies what is kept in memory where the next start finds it (removed once all is written).
    func keepCopy() {
        let now = state.withLock { Kept(rings: $0.keptRings, answers: $0.keptAnswers, plans: $0.keptPlans, marks: $0.keptMarks) }
        if let problem = kept?.save(now.isEmpty ? nil : now) { logger.warning("\(problem)") }
    }

    /// Look again now.
    public func poke() { loop.poke() }

    /// The peers heard on the broker: online or not.
    public var peers: [String: Bool] { state.withLock { $0.peers.byDevice.mapValues(\.online) } }
    /// The latest claim heard on each push or call slot of a dead owner.
    public var claims: [SlotKey: SlotClaim] { state.withLock { $0.claims } }
    /// The peers whose clock is off from this one's, by how much (theirs minus this one's).
    public var clockOffsets: [String: TimeInterval] { state.withLock { $0.peers.clockOffsets } }

    // MARK: Running

    public func run() async throws {
        // What an earlier run kept in memory and could not write (#51): kept again, followed, written when it can be.
        let (earlier, problem) = kept?.load() ?? (nil, nil)
        if let problem { logger.warning("what the household kept before a restart is lost: \(problem)") }
        if let earlier, !earlier.isEmpty {
            state.withLock { s in
                s.keptRings = earlier.rings + s.keptRings
                s.keptAnswers = earlier.answers + s.keptAnswers.filter { !earlier.answers.contains($0) }
                s.keptPlans = earlier.plans + s.keptPlans
                s.keptMarks = earlier.marks + s.keptMarks
            }
            logger.notice("what the household kept in memory before the agent restarted is kept again", metadata: [
                "rings": "\(earlier.rings.count)", "answers": "\(earlier.answers.count)", "plans": "\(earlier.plans.count)",
                "slots": "\(earlier.marks.count)",
            ])
        }
        var tasks: [Task<Void, Never>] = []
        if let link {
            tasks.append(Task { [weak self] in
                for await message in link.messages { self?.receive(message) }
            })
            tasks.append(Task { [weak self] in
                for await up in link.links { self?.linkChanged(up) }
            })
            tasks.append(Task { [logger, clock] in
                do {
                    try await link.connect(clock: clock)
                } catch {
                    logger.error("cannot reach the household broker yet; still trying", metadata: ["broker": "\(link.url)", "error": "\(error)"])
                }
            })
            do {
                for pattern in HouseholdTopic.subscriptions(household: identity.topic) { try link.subscribe(pattern) }
            } catch {
                logger.error("cannot follow the household", metadata: ["error": "\(error)"])
            }
        }
        if let events {
            let stream = events.subscribe()
            tasks.append(Task { [weak self] in
                for await event in stream {
                    if case .alarmEnded(let ring) = event { self?.primaryEnded(ring) }
                }
            })
        }
        await loop.run(databaseChanges: databaseChanges, events: events, replanOn: { event in
            switch event {
            case .settingsChanged, .alarmEnded, .alarmRinging: true
            default: false
            }
        }, plan: { await tick() })
        for task in tasks { task.cancel() }
        keepCopy()
        let (ringing, deliveries) = state.withLock { s in (s.ringing, Array(s.deliveries.values)) }
        for task in deliveries { task.cancel() }
        if let ringing { await ringer.finish(ringing.ringing) }
        if let link {
            // A clean goodbye: the broker does not send the last will after a clean disconnect.
            publish(.peer(device: identity.device), HouseholdMessage.encode(PeerMessage.offline), retain: true)
            link.disconnect()
        }
    }

    private func linkChanged(_ up: Bool) {
        let now = clock.now()
        state.withLock { s in
            s.connected = up
            s.connectedSince = now
            if up { s.republish = true }
        }
        logger.notice(up ? "household broker connected" : "household broker lost; reconnecting",
                      metadata: ["broker": "\(link?.url ?? "-")"])
        poke()
    }

    func publish(_ topic: HouseholdTopic, _ payload: [UInt8], retain: Bool) {
        guard let link else { return }
        do {
            try link.publish(topic.topic(household: identity.topic), payload, retain: retain)
        } catch {
            logger.error("cannot publish to the household", metadata: ["error": "\(error)"])
        }
    }

    func logOnce(_ key: String, _ message: @autoclosure () -> Logger.Message, metadata: Logger.Metadata = [:]) {
        let first = state.withLock { s -> Bool in
            return s.logged.insert(key)
        }
        if first { logger.warning(message(), metadata: metadata) }
    }

    // MARK: One pass

    /// One pass: publish our plans, follow the backup ringing here, act on what is due. Returns when to look
    /// again.
    @discardableResult
    public func tick() async -> Date? {
        let now = clock.now()
        var wake: [Date] = []
        retryPending()
        if let next = state.withLock({ $0.pending.nextExpiry }) { wake.append(next) }
        if let retry = writeKept(now: now) { wake.append(retry) }
        publishPlans(now: now)
        heartbeat(now: now, wake: &wake)
        do {
            let repository = self.repository
            if let givesUp = try await followRing(now: now) { wake.append(givesUp) }
            for ring in try repository.untold() {
                guard let ended = ring.endedAt else { continue }
                let answer = CascadeAnswer(key: ring.slot.occurrence, kind: ring.outcome == .stopped ? .stop : .snooze,
                                           target: ring.outcome == .stopped ? nil : ring.slot.target,
                                           at: Int64(ended.timeIntervalSince1970.rounded(.down)), by: identity.device)
                tell(answer)
            }
            // With what is kept in memory: a slot rung but not written is done; an answer told but not written counts.
            let (keptRings, keptAnswers) = state.withLock { ($0.keptRings, $0.keptAnswers) }
            var done = try slots()
            for ring in keptRings where ring.id == 0 { done[ring.slot] = .rang }
            var answers = try repository.answers()
            answers += keptAnswers.filter { !answers.contains($0) }
            let view = HouseholdCascade.View(
                me: identity.device, occurrences: try occurrences(), answers: answers,
                done: done, claims: state.withLock { $0.claims },
                online: state.withLock { $0.peers.online }, departed: state.withLock { $0.peers.departed },
                callable: delivery.householdNumbers, clockOffsets: state.withLock { $0.peers.clockOffsets })
            let (decisions, next) = HouseholdCascade.decide(view, now: now)
            if let next { wake.append(next) }
            for decision in decisions {
                await act(decision, now: now)
            }
            if state.withLock({ $0.lastPrune.map { now.timeIntervalSince($0) > 3600 } ?? true }) {
                // Tried once an hour whether it worked or not: a store that cannot be written does not stop the cascade.
                state.withLock { $0.lastPrune = now }
                do {
                    try repository.prune(before: now.addingTimeInterval(-HouseholdCascade.retention), patience: .brief)
                } catch {
                    health.failed(error, doing: "pruning the household's old slots", at: now)
                }
            }
            writeStatus(view: view, now: now)
        } catch {
            // Told as the store's state (#51): one line when it begins, not one per pass; tried again on its back-off.
            wake.append(health.failed(error, doing: "running the household cascade", at: now))
        }
        keepCopy()
        // A decision acted on may have made the next one due at once (a missed slot, a claim): look again soon.
        return wake.min().map { max($0, now) }
    }
}
