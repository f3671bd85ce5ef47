import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// This agent as an owner: its plans published (and withdrawn), its answers told, its heartbeat.
extension HouseholdService {
    // MARK: This machine's own alarm

    /// Our alarm was stopped or snoozed here: the household hears it (a Stop resolves the cascade; a Snooze
    /// of the primary pauses it nine minutes).
    func primaryEnded(_ ring: AlarmRing) {
        guard ring.outcome == .stopped || ring.outcome == .snoozed, ring.endedBy != .household else { return }
        guard let occurrences = try? occurrences() else { return }
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

    func tell(_ answer: CascadeAnswer) {
        do { try repository.record(answer, patience: .brief) } catch {
            // Told now all the same; written when the store can take it (#51).
            health.failed(error, doing: "keeping a household answer (told now, written later)", at: clock.now())
            state.withLock { if !$0.keptAnswers.contains(answer) { $0.keptAnswers.append(answer) } }
        }
        publish(.answer(answer.key, kind: answer.kind, by: answer.by),
                HouseholdMessage.encode(AnswerMessage(by: answer.by, at: answer.at, target: answer.target)), retain: true)
    }


    /// The plan of each of our alarms with backups: published when it changed, after a reconnection, and as
    /// the days roll; withdrawn (an empty retained message) when the alarm or its backups went off.
    func publishPlans(now: Date) {
        let alarms: [Alarm]
        do { alarms = try AlarmRepository(database: database).all() } catch {
            logger.error("cannot read the alarms for the household plan", metadata: ["error": "\(error)"])
            return
        }
        let backups = AlarmBackupRepository(database: database)
        let latestRings = (try? AlarmRingRepository(database: database).latestByAlarm()) ?? [:]
        let inputs = alarms.map { alarm in
            let stored = try? backups.backups(alarmID: alarm.id)
            return HouseholdPlanner.Input(alarm: alarm, targets: stored?.enabled == true ? stored?.targets ?? [] : [],
                                          latestRing: latestRings[alarm.id]?.outcome)
        }
        // Published without the secrets of a push URL (`PlanMessage`); kept here with them.
        let plans = HouseholdPlanner.plans(inputs, now: now, timeZone: clock.timeZone)
        let (published, republish) = state.withLock { s in (s.published, s.republish) }
        let ids = Set(plans.keys).union(published.keys)
        for id in ids.sorted() {
            let plan = plans[id]?.message
            let before = published[id] ?? nil
            guard republish || plan != before || published[id] == nil else { continue }
            do {
                try writeOrKeep(plans[id]?.known, owner: identity.device, alarmID: id, at: now,
                                doing: "keeping our household plan (published now, written later)")
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

    // MARK: Plans kept in memory (#51)

    /// The occurrences this agent knows: the store's, with the plans it could not take yet applied in order.
    public func occurrences() throws -> [KnownOccurrence] {
        let stored = try repository.occurrences()
        return state.withLock { $0.keptPlans }.reduce(stored) {
            KnownOccurrence.applying($1.plan, owner: $1.owner, alarmID: $1.alarmID, at: $1.at, to: $0)
        }
    }

    /// Takes `plan` in the store, or — when the store cannot take it (locked, full, read-only) — in memory, written
    /// later in order by `writeKept`. Returns whether what this agent knows changed. Throws only what is not the
    /// store's trouble (a plan that cannot be read back).
    @discardableResult
    func writeOrKeep(_ plan: KnownPlan?, owner: String, alarmID: Int, at now: Date, doing: String) throws -> Bool {
        if state.withLock({ $0.keptPlans.isEmpty }) {
            do {
                return try repository.applyPlan(owner: owner, alarmID: alarmID, plan, now: now, patience: .brief)
            } catch let error as StoreError where error.cause != nil {
                health.failed(error, doing: doing, at: now)
            }
        }
        // Kept after those already kept (a plan written before them would be undone by them when they are written).
        let before = try occurrences()
        let dropped = state.withLock { s -> Bool in
            s.keptPlans.append(KeptPlan(owner: owner, alarmID: alarmID, plan: plan, at: now))
            guard s.keptPlans.count > Self.keptPlansLimit else { return false }
            s.keptPlans.removeFirst(s.keptPlans.count - Self.keptPlansLimit)
            return true
        }
        if dropped {
            logOnce("kept-plans", "more household plans than can be kept in memory while the data cannot be written: the oldest are forgotten")
        }
        return try occurrences() != before
    }

    func heartbeat(now: Date, wake: inout [Date]) {
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
}
