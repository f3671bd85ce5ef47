import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The household broker, as the cascade uses it (`MQTTClient` on the machine).
public struct HouseholdLink: Sendable {
    public var client: MQTTClient
    public var host: String
    public var port: Int
    /// The `[mqtt] url`, for the status.
    public var url: String
    /// No `[mqtt] username`: the broker lets anyone in (`household status` warns).
    public var anonymous: Bool

    public init(client: MQTTClient, host: String, port: Int, url: String, anonymous: Bool = true) {
        self.client = client
        self.host = host
        self.port = port
        self.url = url
        self.anonymous = anonymous
    }

    /// A broker configured but not used: a security setting could not be applied (the reason says which).
    public struct Refused: Error, Sendable, Equatable {
        public var url: String
        public var reason: String
    }
}

/// Who this agent is in the household.
public struct HouseholdIdentity: Sendable, Equatable {
    /// `[household] name` as written ("Jen's family"), for the words of a call.
    public var name: String?
    /// The topic level (`HouseholdTopic.slug`).
    public var topic: String
    /// This machine's `[household] device`.
    public var device: String

    public init(name: String?, device: String) {
        self.name = name
        topic = HouseholdTopic.slug(name)
        self.device = device
    }
}

/// The backup cascade (#12) on this agent. As an owner it publishes the plan of each alarm with backups
/// ahead of time (retained), tells the household when its alarm was stopped or snoozed, and sends the push
/// and call targets. As a peer it keeps every plan it hears, rings its own `device:` slots unless a Stop was
/// heard, and takes over a dead owner's push and call slots through a claim. Every agent with a plan shows
/// "All backups tried …" when the list is exhausted. Without a broker it still sends this machine's push
/// and call targets. Everything from the broker is untrusted: it can ring a backup alarm here, never record
/// a dose or change an alarm.
public final class HouseholdService: Service, RingingAlarmControl, Sendable, CustomStringConvertible {
    public var description: String { "HouseholdService" }

    /// How often an online agent says so (the broker's last will says when it is gone).
    public static let heartbeat: TimeInterval = 60
    /// Plans cover the occurrences of the next eight days.
    public static let planHorizon: TimeInterval = 8 * 86_400
    /// A Stop, Snooze or claim that names an occurrence or a sender not known yet is kept this long (retained
    /// messages arrive in no particular order), then dropped.
    public static let pendingGrace: TimeInterval = 60

    private struct Peer {
        var online: Bool
        var seenAt: Date
        var heartbeat: Date?
        /// Seen online in the household (this run), then gone: when. A survivor sends only for such an owner.
        var departedAt: Date?
        var seenOnline = false
    }

    /// Devices remembered at once: a household has a handful, but anyone who may publish on the broker can name
    /// new ones without end. Beyond this one goes: first an offline device that never departed (nothing rests on
    /// it), then the online one heard from longest ago (a real one is back at its next heartbeat), and a departed
    /// one last (a survivor sends for it).
    public static let peersKept = 256

    private static func forgetOldestPeer(_ peers: inout [String: Peer]) {
        func rank(_ peer: Peer) -> Int { peer.departedAt != nil ? 2 : peer.online ? 1 : 0 }
        let oldest = peers.min { a, b in
            rank(a.value) != rank(b.value) ? rank(a.value) < rank(b.value) : a.value.seenAt < b.value.seenAt
        }
        if let oldest { peers[oldest.key] = nil }
    }

    /// How far an answer may seem to come before the ring it answers (clocks a little apart).
    public static let answerSkew: TimeInterval = 10

    private struct Pending {
        var message: HouseholdMessage
        var receivedAt: Date
        var reason: String
    }

    private struct BackupRinging {
        var ring: HouseholdRepository.BackupRing
        var ringing: AlarmRinger.Ringing
    }

    private struct State {
        var connected = false
        var connectedSince: Date?
        var peers: [String: Peer] = [:]
        var claims: [SlotKey: SlotClaim] = [:]
        var pending: [Pending] = []
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
    }

    private let identity: HouseholdIdentity
    private let database: DoseTapDatabase
    private let link: HouseholdLink?
    private let refused: HouseholdLink.Refused?
    private let delivery: BackupDelivery
    private let ringer: AlarmRinger
    private let clock: any Scheduling
    private let logger: Logger
    private let events: EventBus?
    private let databaseChanges: AsyncStream<Void>?
    private let stopPrimary: @Sendable (Int) -> Bool
    private let statusFile: AgentStatusFile.Holder?
    private let onRing: (@Sendable (SlotKey, Date) -> Void)?
    private let loop: PlanningLoop
    private let state = Mutex(State())

    /// - Parameters:
    ///   - stopPrimary: stops this machine's own ringing alarm `id` when the household stopped it elsewhere.
    ///   - onRing: called when a backup alarm starts ringing here (slot, started at): the latency figures.
    public convenience init(identity: HouseholdIdentity, database: DoseTapDatabase, link: HouseholdLink?, delivery: BackupDelivery,
                            ringer: AlarmRinger, clock: any Scheduling, logger: Logger, events: EventBus?, databaseChanges: AsyncStream<Void>?,
                            stopPrimary: @escaping @Sendable (Int) -> Bool, statusFile: AgentStatusFile.Holder?,
                            onRing: (@Sendable (SlotKey, Date) -> Void)? = nil) {
        self.init(identity: identity, database: database, broker: link.map { .success($0) }, delivery: delivery, ringer: ringer, clock: clock,
                  logger: logger, events: events, databaseChanges: databaseChanges, stopPrimary: stopPrimary, statusFile: statusFile, onRing: onRing)
    }

    /// - Parameters:
    ///   - broker: the household broker, a configured one refused (shown by `household status`), or nil.
    public init(identity: HouseholdIdentity, database: DoseTapDatabase, broker: Result<HouseholdLink, HouseholdLink.Refused>?, delivery: BackupDelivery,
                ringer: AlarmRinger, clock: any Scheduling, logger: Logger, events: EventBus?, databaseChanges: AsyncStream<Void>?,
                stopPrimary: @escaping @Sendable (Int) -> Bool, statusFile: AgentStatusFile.Holder?,
                onRing: (@Sendable (SlotKey, Date) -> Void)? = nil) {
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
        self.stopPrimary = stopPrimary
        self.statusFile = statusFile
        self.onRing = onRing
        loop = PlanningLoop(clock: clock)
    }

    private var repository: HouseholdRepository { HouseholdRepository(database: database) }

    /// Look again now.
    public func poke() { loop.poke() }

    /// The peers heard on the broker: online or not.
    public var peers: [String: Bool] { state.withLock { $0.peers.mapValues(\.online) } }
    /// The latest claim heard on each push or call slot of a dead owner.
    public var claims: [SlotKey: SlotClaim] { state.withLock { $0.claims } }

    // MARK: RingingAlarmControl (a backup alarm ringing here)

    public var isRinging: Bool { state.withLock { $0.ringing != nil } }

    public func claimsButtons(at now: Date) -> Bool {
        state.withLock { AlarmRingRules.claimsButtons(ringing: $0.ringing != nil, endedAt: $0.endedAt, now: now) }
    }

    @discardableResult
    public func stop(by ender: AlarmRingEnder) -> Bool { answer(.stopped, by: ender) }

    @discardableResult
    public func snooze(by ender: AlarmRingEnder) -> Bool { answer(.snoozed, by: ender) }

    private func answer(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> Bool {
        do {
            guard let ring = try repository.ringing(), try repository.endRing(id: ring.id, outcome: outcome, by: ender, at: clock.now()) != nil else {
                return false
            }
            logger.notice(outcome == .snoozed ? "backup alarm snoozed" : "backup alarm stopped",
                          metadata: ["owner": "\(ring.slot.occurrence.owner)", "alarm": "\(ring.slot.occurrence.alarmID)", "by": "\(ender.rawValue)"])
            poke()
            return true
        } catch {
            logger.error("cannot answer the backup alarm", metadata: ["error": "\(error)"])
            return false
        }
    }

    // MARK: Running

    public func run() async throws {
        var tasks: [Task<Void, Never>] = []
        if let link {
            let client = link.client
            tasks.append(Task { [weak self] in
                for await message in client.messages { self?.receive(message) }
            })
            tasks.append(Task { [weak self] in
                for await up in client.links { self?.linkChanged(up) }
            })
            tasks.append(Task { [logger, clock] in
                do {
                    try await client.connect(host: link.host, port: link.port, clock: clock)
                } catch {
                    logger.error("cannot reach the household broker yet; still trying", metadata: ["broker": "\(link.url)", "error": "\(error)"])
                }
            })
            do {
                for pattern in HouseholdTopic.subscriptions(household: identity.topic) { try client.subscribe(pattern) }
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
        let (ringing, deliveries) = state.withLock { s in (s.ringing, Array(s.deliveries.values)) }
        for task in deliveries { task.cancel() }
        if let ringing { await ringer.finish(ringing.ringing) }
        if let link {
            // A clean goodbye: the broker does not send the last will after a clean disconnect.
            publish(.peer(device: identity.device), HouseholdMessage.encode(PeerMessage.offline), retain: true)
            link.client.disconnect()
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

    private func publish(_ topic: HouseholdTopic, _ payload: [UInt8], retain: Bool) {
        guard let link else { return }
        do {
            try link.client.publish(topic.topic(household: identity.topic), payload, retain: retain)
        } catch {
            logger.error("cannot publish to the household", metadata: ["error": "\(error)"])
        }
    }

    private func logOnce(_ key: String, _ message: @autoclosure () -> Logger.Message, metadata: Logger.Metadata = [:]) {
        let first = state.withLock { s -> Bool in
            return s.logged.insert(key)
        }
        if first { logger.warning(message(), metadata: metadata) }
    }

    // MARK: Messages from the broker

    func receive(_ message: MQTTMessage) {
        // Home Assistant's topics (this agent's are tapped before they get here; other devices' pass by).
        if message.topic.hasPrefix(HouseholdTopic.homeAssistantRoot(household: identity.topic)) { return }
        let parsed: HouseholdMessage
        do {
            parsed = try HouseholdMessage.parse(topic: message.topic, payload: message.payload, household: identity.topic)
        } catch {
            let kind = message.topic.split(separator: "/").dropFirst(2).first.map(String.init) ?? "?"
            logOnce("bad|\(error.description)|\(kind)", "dropped a household message: \(error.description)",
                    metadata: ["topic": "\(DisplayText.escaped(message.topic, maxLength: 120))"])
            return
        }
        handle(parsed, receivedAt: clock.now())
    }

    private func handle(_ message: HouseholdMessage, receivedAt: Date) {
        let now = clock.now()
        switch message {
        case .peer(let device, let presence):
            let changed = state.withLock { s -> Bool in
                let before = s.peers[device]
                let was = before?.online
                var peer = Peer(online: presence.isOnline, seenAt: now,
                                heartbeat: presence.at.map { Date(timeIntervalSince1970: TimeInterval($0)) } ?? before?.heartbeat)
                peer.seenOnline = presence.isOnline || before?.seenOnline == true
                // Gone: seen online, now offline (the last will, or a clean stop). Back online: not gone.
                peer.departedAt = presence.isOnline ? nil : (before?.online == true ? now : before?.departedAt)
                if before == nil, s.peers.count >= Self.peersKept { Self.forgetOldestPeer(&s.peers) }
                s.peers[device] = peer
                // Our own last will from an earlier run (or a broker that lost us): say we are here.
                if device == identity.device, !presence.isOnline, s.connected { s.nextHeartbeat = nil }
                return was != presence.isOnline
            }
            if changed { poke() }
        case .plan(let owner, let alarmID, let plan):
            if owner == identity.device {
                // What the broker holds in our name: the tick corrects it when it is not what we plan now.
                state.withLock { s in
                    if s.published[alarmID] == nil { s.republish = true }
                }
                poke()
                return
            }
            do {
                if try repository.applyPlan(owner: owner, alarmID: alarmID, plan, now: now) {
                    logger.info("household plan", metadata: [
                        "owner": "\(owner)", "alarm": "\(alarmID)", "occurrences": "\(plan?.occurrences.count ?? 0)",
                        "targets": "\(plan?.targets.map(\.description).joined(separator: ",") ?? "withdrawn")",
                    ])
                }
            } catch {
                logger.error("cannot keep a household plan", metadata: ["error": "\(error)"])
            }
            retryPending()
            poke()
        case .answer(let answer):
            guard let occurrence = known(answer.key) else {
                keep(message, receivedAt: receivedAt, reason: "an unknown occurrence")
                return
            }
            // Only the owner or a device target answers, and only once its alarm rang: an answer heard (or dated)
            // before that ring, or dated ahead of when it was heard, is forged.
            guard let earliest = occurrence.earliestAnswer(by: answer.by) else {
                logOnce("answerer|\(answer.by)", "dropped a household answer from a device that does not ring this alarm",
                        metadata: ["from": "\(answer.by)", "owner": "\(answer.key.owner)"])
                return
            }
            let bound = earliest.addingTimeInterval(-Self.answerSkew)
            let dated = Date(timeIntervalSince1970: TimeInterval(answer.at))
            guard receivedAt >= bound, dated >= bound, dated <= receivedAt.addingTimeInterval(Self.answerSkew) else {
                logOnce("early|\(answer.by)", "dropped a household answer that came before the ring it answers",
                        metadata: ["from": "\(answer.by)", "occurrence": "\(answer.key)"])
                return
            }
            if answer.kind == .snooze, let target = answer.target, !occurrence.targets.indices.contains(target) {
                logOnce("target|\(answer.by)", "dropped a snooze naming a backup the plan does not have", metadata: ["from": "\(answer.by)"])
                return
            }
            do {
                if try repository.record(answer) {
                    logger.notice("household \(answer.kind.rawValue)", metadata: [
                        "occurrence": "\(answer.key)", "by": "\(answer.by)", "target": "\(answer.target.map(String.init) ?? "primary")",
                    ])
                    if answer.kind == .stop, answer.key.owner == identity.device, stopPrimary(answer.key.alarmID) {
                        logger.notice("alarm stopped by the household", metadata: ["alarm": "\(answer.key.alarmID)", "by": "\(answer.by)"])
                    }
                    poke()
                }
            } catch {
                logger.error("cannot keep a household answer", metadata: ["error": "\(error)"])
            }
        case .claim(let slot, let claim):
            guard let occurrence = known(slot.occurrence), member(claim.by, of: occurrence) else {
                keep(message, receivedAt: receivedAt, reason: known(slot.occurrence) == nil ? "an unknown occurrence" : "a device not in the household")
                return
            }
            state.withLock { $0.claims[slot] = claim }
            poke()
        }
    }

    private func known(_ key: OccurrenceKey) -> KnownOccurrence? {
        (try? repository.occurrences())?.first { $0.key == key }
    }

    /// A sender is of the household when it owns the occurrence, is one of its device targets, or has said
    /// it is online on the household's topics.
    private func member(_ device: String, of occurrence: KnownOccurrence) -> Bool {
        if device == occurrence.key.owner || occurrence.targets.contains(.device(device)) { return true }
        return state.withLock { $0.peers[device] != nil }
    }

    private func keep(_ message: HouseholdMessage, receivedAt: Date, reason: String) {
        state.withLock { s in
            if s.pending.count >= 1024 { s.pending.removeFirst() }
            s.pending.append(Pending(message: message, receivedAt: receivedAt, reason: reason))
        }
    }

    /// Handles again what waited for a plan or a peer.
    private func retryPending() {
        let now = clock.now()
        let (waiting, expired) = state.withLock { s -> ([Pending], [Pending]) in
            let all = s.pending
            s.pending = []
            return (all.filter { now.timeIntervalSince($0.receivedAt) < Self.pendingGrace },
                    all.filter { now.timeIntervalSince($0.receivedAt) >= Self.pendingGrace })
        }
        for item in expired {
            logOnce("pending|\(item.reason)|\(sender(item.message))", "dropped a household message naming \(item.reason)",
                    metadata: ["from": "\(sender(item.message))"])
        }
        for item in waiting { handle(item.message, receivedAt: item.receivedAt) }
    }

    private func sender(_ message: HouseholdMessage) -> String {
        switch message {
        case .answer(let answer): answer.by
        case .claim(_, let claim): claim.by
        case .peer(let device, _): device
        case .plan(let owner, _, _): owner
        }
    }

    // MARK: This machine's own alarm

    /// Our alarm was stopped or snoozed here: the household hears it (a Stop resolves the cascade; a Snooze
    /// of the primary pauses it nine minutes).
    private func primaryEnded(_ ring: AlarmRing) {
        guard ring.outcome == .stopped || ring.outcome == .snoozed, ring.endedBy != .household else { return }
        guard let occurrences = try? repository.occurrences() else { return }
        let due = Int64(ring.dueAt.timeIntervalSince1970.rounded(.down))
        guard let occurrence = occurrences.filter({
            $0.key.owner == identity.device && $0.key.alarmID == ring.alarmID && $0.key.at <= due && due - $0.key.at < 86_400
        }).max(by: { $0.key.at < $1.key.at }) else { return }
        let at = Int64((ring.endedAt ?? clock.now()).timeIntervalSince1970.rounded(.down))
        let answer = CascadeAnswer(key: occurrence.key, kind: ring.outcome == .stopped ? .stop : .snooze, target: nil,
                                   at: max(at, occurrence.key.at), by: identity.device)
        tell(answer)
        poke()
    }

    private func tell(_ answer: CascadeAnswer) {
        do { try repository.record(answer) } catch {
            logger.error("cannot keep a household answer", metadata: ["error": "\(error)"])
        }
        publish(.answer(answer.key, kind: answer.kind, by: answer.by),
                HouseholdMessage.encode(AnswerMessage(by: answer.by, at: answer.at, target: answer.target)), retain: true)
    }

    // MARK: The plan

    /// One pass: publish our plans, follow the backup ringing here, act on what is due. Returns when to look
    /// again.
    @discardableResult
    public func tick() async -> Date? {
        let now = clock.now()
        var wake: [Date] = []
        retryPending()
        if let next = state.withLock({ $0.pending.map { $0.receivedAt.addingTimeInterval(Self.pendingGrace) }.min() }) { wake.append(next) }
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
            let view = HouseholdCascade.View(
                me: identity.device, occurrences: try repository.occurrences(), answers: try repository.answers(),
                done: try repository.slots(), claims: state.withLock { $0.claims },
                online: state.withLock { s in Set(s.peers.filter { $0.value.online }.map(\.key)) },
                departed: state.withLock { s in s.peers.compactMapValues { $0.seenOnline ? $0.departedAt : nil } },
                callable: delivery.householdNumbers)
            let (decisions, next) = HouseholdCascade.decide(view, now: now)
            if let next { wake.append(next) }
            for decision in decisions {
                await act(decision, now: now)
            }
            if state.withLock({ $0.lastPrune.map { now.timeIntervalSince($0) > 3600 } ?? true }) {
                try repository.prune(before: now.addingTimeInterval(-HouseholdCascade.retention))
                state.withLock { $0.lastPrune = now }
            }
            writeStatus(view: view, now: now)
        } catch {
            logger.error("cannot run the household cascade", metadata: ["error": "\(error)"])
            wake.append(now.addingTimeInterval(60))
        }
        // A decision acted on may have made the next one due at once (a missed slot, a claim): look again soon.
        return wake.min().map { max($0, now) }
    }

    /// The plan of each of our alarms with backups: published when it changed, after a reconnection, and as
    /// the days roll; withdrawn (an empty retained message) when the alarm or its backups went off.
    private func publishPlans(now: Date) {
        let alarms: [Alarm]
        do { alarms = try AlarmRepository(database: database).all() } catch {
            logger.error("cannot read the alarms for the household plan", metadata: ["error": "\(error)"])
            return
        }
        let backups = AlarmBackupRepository(database: database)
        let latestRings = (try? AlarmRingRepository(database: database).latestByAlarm()) ?? [:]
        var plans: [Int: PlanMessage] = [:]
        var targets: [Int: [BackupTarget]] = [:]
        for alarm in alarms where alarm.enabled {
            guard let stored = try? backups.backups(alarmID: alarm.id), stored.enabled, !stored.targets.isEmpty else { continue }
            var occurrences: [Int64] = []
            var cursor = now
            // A once alarm has one occurrence: the next one, or none while it rings or is snoozed (the household
            // holds the one under way; it turns itself off when it ends).
            let limit = alarm.repetition == .once ? 1 : HouseholdLimits.maximumOccurrences
            let underWay = alarm.repetition == .once && latestRings[alarm.id].map { $0.outcome == .ringing || $0.outcome == .snoozed } == true
            while !underWay, occurrences.count < limit, let next = alarm.nextOccurrence(after: cursor, in: clock.timeZone),
                  next.timeIntervalSince(now) <= Self.planHorizon {
                occurrences.append(Int64(next.timeIntervalSince1970.rounded(.down)))
                cursor = next
            }
            guard !occurrences.isEmpty else { continue }
            // Published without the secrets of a push URL (`BackupTarget.published`); kept here with them.
            plans[alarm.id] = PlanMessage(label: alarm.label, time: "\(alarm.time)", occurrences: occurrences, targets: stored.targets)
            targets[alarm.id] = stored.targets
        }
        let (published, republish) = state.withLock { s in (s.published, s.republish) }
        let ids = Set(plans.keys).union(published.keys)
        for id in ids.sorted() {
            let plan = plans[id]
            let before = published[id] ?? nil
            guard republish || plan != before || published[id] == nil else { continue }
            do {
                let known = plan.map { KnownPlan(label: $0.label, time: $0.time, occurrences: $0.occurrences, targets: targets[id] ?? []) }
                try repository.applyPlan(owner: identity.device, alarmID: id, known, now: now)
            } catch {
                logger.error("cannot keep our household plan", metadata: ["error": "\(error)"])
            }
            publish(.plan(owner: identity.device, alarmID: id), plan.map { HouseholdMessage.encode($0) } ?? [], retain: true)
            if plan != before { logger.info(plan == nil ? "household plan withdrawn" : "household plan published", metadata: ["alarm": "\(id)"]) }
            state.withLock { $0.published[id] = .some(plan) }
        }
        let connected = state.withLock { $0.connected }
        if republish, connected {
            // After a (re)connection: what we said before may be lost with a broker that restarted empty.
            republishOwn(now: now)
            state.withLock {
                $0.republish = false
                $0.nextHeartbeat = nil
            }
        }
    }

    /// Our answers and claims of occurrences still under way, again (retained: the broker may have lost them).
    private func republishOwn(now: Date) {
        guard let answers = try? repository.answers() else { return }
        for answer in answers where answer.by == identity.device && now.timeIntervalSince(answer.key.date) < 86_400 {
            publish(.answer(answer.key, kind: answer.kind, by: answer.by),
                    HouseholdMessage.encode(AnswerMessage(by: answer.by, at: answer.at, target: answer.target)), retain: true)
        }
        for (slot, claim) in state.withLock({ $0.claims }) where claim.by == identity.device {
            publish(.claim(slot), HouseholdMessage.encode(ClaimMessage(by: claim.by, at: claim.at, state: claim.state)), retain: true)
        }
    }

    private func heartbeat(now: Date, wake: inout [Date]) {
        guard link != nil else { return }
        let due = state.withLock { s -> Bool in
            guard s.connected else { return false }
            if let next = s.nextHeartbeat, now < next { return false }
            s.nextHeartbeat = now.addingTimeInterval(Self.heartbeat)
            return true
        }
        if due {
            publish(.peer(device: identity.device), HouseholdMessage.encode(PeerMessage(online: Int64(now.timeIntervalSince1970))), retain: true)
        }
        if let next = state.withLock({ $0.connected ? $0.nextHeartbeat : nil }) { wake.append(next) }
    }

    // MARK: Acting

    private func act(_ decision: HouseholdCascade.Decision, now: Date) async {
        let repository = self.repository
        do {
            switch decision {
            case .ring(let slot, let occurrence, let round):
                guard state.withLock({ $0.ringing == nil }) else { return }
                guard let ring = try repository.startRing(slot, label: occurrence.label, time: occurrence.time, at: now) else { return }
                await begin(ring, round: round)
            case .send(let slot, let occurrence, let target):
                if occurrence.key.owner != identity.device, case .phone(let number) = target, !delivery.householdNumbers.contains(number) {
                    logOnce("call|\(number)", "not calling \(target.displayName) for \(occurrence.key.owner): not in phone.household_numbers")
                    return
                }
                let before = try repository.slots()[slot]
                guard try repository.mark(slot, .sent, expecting: before == .claimed ? .claimed : nil, at: now) else { return }
                let claim = ClaimMessage(by: identity.device, at: Int64(now.timeIntervalSince1970.rounded(.down)), state: .claimed)
                publish(.claim(slot), HouseholdMessage.encode(claim), retain: true)
                send(slot, occurrence: occurrence, target: target)
            case .claim(let slot):
                guard state.withLock({ $0.connected }) else { return }
                guard try repository.mark(slot, .claimed, expecting: nil, at: now) else { return }
                let claim = ClaimMessage(by: identity.device, at: Int64(now.timeIntervalSince1970.rounded(.down)), state: .claimed)
                logger.notice("claiming a backup of an owner that is gone", metadata: ["slot": "\(slot)"])
                publish(.claim(slot), HouseholdMessage.encode(claim), retain: true)
            case .missed(let slot):
                let before = try repository.slots()[slot]
                guard try repository.mark(slot, .missed, expecting: before == .claimed ? .claimed : nil, at: now) else { return }
                logger.warning("a backup slot passed while this agent could not act: not fired late", metadata: ["slot": "\(slot)"])
            case .allTried(let slot, let occurrence):
                guard try repository.mark(slot, .announced, expecting: nil, at: now) else { return }
                let time = occurrence.time
                let title = "All backups tried for \(DisplayText.escaped(occurrence.label, maxLength: 80)) at \(time)"
                let body = "Nobody pressed Stop on \(occurrence.key.owner)'s alarm: every backup (\(occurrence.targets.count)) was tried."
                logger.warning("\(title)", metadata: ["owner": "\(occurrence.key.owner)", "alarm": "\(occurrence.key.alarmID)",
                                                      "occurrence": "\(occurrence.key.at)"])
                await ringer.announce(title: title, body: body)
            }
        } catch {
            logger.error("cannot record a household slot", metadata: ["error": "\(error)"])
        }
    }

    private func send(_ slot: SlotKey, occurrence: KnownOccurrence, target: BackupTarget) {
        let what = target.kind == "phone" ? "call to \(target.displayName)" : "push to \(target.displayName)"
        let request = delivery.request(for: target, occurrence: occurrence)
        let task = Task { [weak self, delivery, logger, ringer, clock] in
            let outcome: BackupDelivery.Outcome
            switch request {
            case .failure(let error): outcome = .failed(reason: error.description, credentialsRefused: false)
            case .success(let request): outcome = await delivery.deliver(request, what: what)
            }
            guard let self else { return }
            let now = clock.now()
            switch outcome {
            case .sent(let attempts):
                logger.notice("backup \(what) sent", metadata: ["slot": "\(slot)", "attempts": "\(attempts)"])
                self.publish(.claim(slot), HouseholdMessage.encode(ClaimMessage(by: self.identity.device, at: Int64(now.timeIntervalSince1970), state: .sent)),
                             retain: true)
            case .failed(let reason, let refused):
                _ = try? self.repository.mark(slot, .failed, expecting: .sent, detail: reason, at: now)
                logger.error("backup \(what) failed: \(reason)", metadata: ["slot": "\(slot)"])
                self.publish(.claim(slot), HouseholdMessage.encode(ClaimMessage(by: self.identity.device, at: Int64(now.timeIntervalSince1970), state: .failed)),
                             retain: true)
                if refused {
                    await ringer.announce(title: "Backup \(target.kind) refused",
                                          body: "The \(what) for \(DisplayText.escaped(occurrence.label, maxLength: 80)) was refused: \(reason). Check the account and token in config.toml.")
                }
            }
            _ = self.state.withLock { $0.deliveries.removeValue(forKey: slot) }
        }
        state.withLock { $0.deliveries[slot] = task }
    }

    // MARK: A backup alarm ringing here

    private func begin(_ ring: HouseholdRepository.BackupRing, round: Int) async {
        let occurrence = ring.slot.occurrence
        guard let time = (try? TimeOfDay(parsing: ring.time)) ?? (try? TimeOfDay(hour: 0, minute: 0)) else { return }
        let label = (try? Alarm.validLabel(ring.label)) ?? "Alarm"
        guard let alarm = try? Alarm(id: occurrence.alarmID, time: time, label: label) else { return }
        // Ring ids of backup alarms are negative: a notification's buttons never mix them with our own alarms.
        let alarmRing = AlarmRing(id: -ring.id, alarmID: occurrence.alarmID, kind: round == 0 ? .scheduled : .snooze, dueAt: ring.slot.date,
                                  startedAt: ring.startedAt, endedAt: nil, outcome: .ringing, endedBy: nil, snoozeUntil: nil)
        let ringing = await ringer.start(alarm, ring: alarmRing, timeZone: clock.timeZone,
                                         heading: "Backup alarm \(ring.time) — \(occurrence.owner)",
                                         body: "\(DisplayText.escaped(ring.label)) on \(occurrence.owner) was not stopped — press Stop, or Snooze for 9 minutes.")
        state.withLock {
            $0.ringing = BackupRinging(ring: ring, ringing: ringing)
            $0.endedAt = nil
        }
        onRing?(ring.slot, ring.startedAt)
        logger.warning("backup alarm ringing", metadata: [
            "owner": "\(occurrence.owner)", "alarm": "\(occurrence.alarmID)", "occurrence": "\(occurrence.at)", "round": "\(round)",
            "lateMs": "\(Int((ring.startedAt.timeIntervalSince(ring.slot.date) * 1000).rounded()))",
        ])
    }

    /// Follows the backup alarm ringing here: ends it when it was answered (here or by the household) or its
    /// ten minutes are up; resumes it after a restart. Returns when it gives up.
    private func followRing(now: Date) async throws -> Date? {
        let repository = self.repository
        let current = state.withLock { $0.ringing }
        guard let row = try current.map({ try repository.ring(id: $0.ring.id) }) ?? repository.ringing() else {
            if let current { await end(current) }
            return nil
        }
        guard row.outcome == .ringing else {
            if let current { await end(current) }
            return nil
        }
        if try repository.answers().contains(where: { $0.key == row.slot.occurrence && $0.kind == .stop }) {
            _ = try repository.endRing(id: row.id, outcome: .stopped, by: .household, at: now)
            logger.notice("backup alarm stopped by the household", metadata: ["owner": "\(row.slot.occurrence.owner)"])
            if let current { await end(current) }
            return nil
        }
        guard now < row.givesUpAt else {
            _ = try repository.endRing(id: row.id, outcome: .missed, by: .timeout, at: now)
            logger.warning("backup alarm unanswered for 10 minutes", metadata: ["owner": "\(row.slot.occurrence.owner)"])
            if let current { await end(current) }
            return nil
        }
        if current == nil {
            logger.notice("the agent restarted while a backup alarm rang: ringing again")
            await begin(row, round: 0)
        }
        return row.givesUpAt
    }

    private func end(_ ringing: BackupRinging) async {
        let now = clock.now()
        state.withLock {
            $0.ringing = nil
            $0.endedAt = now
        }
        await ringer.finish(ringing.ringing)
    }

    // MARK: Status for the command line

    private func writeStatus(view: HouseholdCascade.View, now: Date) {
        guard let statusFile else { return }
        let utc = TimeZone(identifier: "UTC")!
        let s = state.withLock { $0 }
        var broker = HouseholdStatus.Broker(configured: link != nil || refused != nil)
        if let refused {
            broker.url = refused.url
            broker.connected = false
            broker.off = refused.reason
        }
        if let link {
            broker.url = link.url
            broker.anonymous = link.anonymous
            broker.connected = s.connected
            broker.since = s.connectedSince?.rfc3339(in: utc)
        }
        let peers = s.peers.sorted { $0.key < $1.key }.map { name, peer in
            HouseholdStatus.Peer(device: name, online: peer.online, lastHeartbeat: peer.heartbeat?.rfc3339(in: utc))
        }
        var cascades: [HouseholdStatus.Cascade] = []
        for occurrence in view.occurrences where occurrence.key.date <= now {
            let progress = HouseholdCascade.progress(of: occurrence, answers: view.answers, now: now)
            guard !progress.finished else { continue }
            let fired = progress.slots.filter { $0.key.target >= 0 }.map { slot in
                HouseholdStatus.Slot(target: occurrence.targets[slot.key.target].description, at: slot.key.date.rfc3339(in: utc),
                                     done: view.done[slot.key]?.rawValue)
            }
            cascades.append(HouseholdStatus.Cascade(
                owner: occurrence.key.owner, alarm: occurrence.key.alarmID, label: occurrence.label, time: occurrence.time,
                occurrence: occurrence.key.date.rfc3339(in: utc), next: progress.nextAt?.rfc3339(in: utc), fired: fired))
        }
        let json = HouseholdStatus(pid: Int(getpid()), device: identity.device, household: identity.name, topic: "dosetap/\(identity.topic)",
                                   broker: broker, peers: peers, cascades: cascades).json
        let bytes = Array((json.text + "\n").utf8)
        let changed = state.withLock { st -> Bool in
            guard st.status != bytes else { return false }
            st.status = bytes
            return true
        }
        if changed { statusFile.write(bytes) }
    }
}

/// Every alarm that can ring here — this machine's own (`AlarmService`) and the household's backup alarms
/// (`HouseholdService`) — answered as one by the buttons and the notifications.
public struct RingingAlarms: RingingAlarmControl {
    private let controls: [any RingingAlarmControl]

    public init(_ controls: [any RingingAlarmControl]) {
        self.controls = controls
    }

    public func claimsButtons(at now: Date) -> Bool { controls.contains { $0.claimsButtons(at: now) } }
    public var isRinging: Bool { controls.contains { $0.isRinging } }

    @discardableResult
    public func stop(by ender: AlarmRingEnder) -> Bool {
        controls.filter(\.isRinging).map { $0.stop(by: ender) }.contains(true)
    }

    @discardableResult
    public func snooze(by ender: AlarmRingEnder) -> Bool {
        controls.filter(\.isRinging).map { $0.snooze(by: ender) }.contains(true)
    }
}
