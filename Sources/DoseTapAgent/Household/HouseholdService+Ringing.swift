import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A backup alarm ringing here: started, followed, answered (Stop, Snooze) and ended.
extension HouseholdService {
    // MARK: RingHolder (a backup alarm ringing here; `RingAnswers` answers it)

    public var isRinging: Bool { state.withLock { $0.ringing != nil } }

    public func claimsButtons(at now: Date) -> Bool {
        state.withLock { AlarmRingRules.claimsButtons(ringing: $0.ringing != nil, endedAt: $0.endedAt, now: now) }
    }

    /// Ends the backup ringing here when the store could not take the answer (#51): the household hears it now, the
    /// sound ends at the next pass (at once: `RingAnswers` pokes), the ring's end is written when the store can take it.
    public func answerHere(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> AlarmRing? {
        let now = clock.now()
        guard outcome == .stopped || outcome == .snoozed, let current = state.withLock({ $0.ringing }) else { return nil }
        _ = keep(current, outcome, by: ender, at: now)
        let slot = current.ring.slot
        tell(CascadeAnswer(key: slot.occurrence, kind: outcome == .stopped ? .stop : .snooze, target: outcome == .stopped ? nil : slot.target,
                           at: Int64(now.timeIntervalSince1970.rounded(.down)), by: identity.device))
        var ring = current.alarmRing
        ring.endedAt = now
        ring.outcome = outcome
        ring.endedBy = ender
        return ring
    }

    /// Writes what the store could not take (#51): rings rung first, ends answered here, answers told. Returns when to
    /// try again (the store's back-off) while something is still kept; nil when all is written.
    func writeKept(now: Date) -> Date? {
        let repository = self.repository
        var wrote = false
        // On the store's back-off, not at every pass (a pass comes with every message from the broker); at once when
        // the store is known to be well again.
        if let retry = state.withLock({ $0.keptRetryAt }), retry > now, health.problem != nil { return retry }
        func failed(_ error: any Error, doing: String) -> Date {
            let retry = health.failed(error, doing: doing, at: now)
            state.withLock { $0.keptRetryAt = retry }
            return retry
        }
        while let kept = state.withLock({ $0.keptPlans.first }) {
            do {
                try repository.applyPlan(owner: kept.owner, alarmID: kept.alarmID, kept.plan, now: kept.at, patience: .brief)
                state.withLock { if $0.keptPlans.first == kept { $0.keptPlans.removeFirst() } }
                wrote = true
            } catch {
                return failed(error, doing: "writing a household plan kept in memory")
            }
        }
        while let kept = state.withLock({ $0.keptMarks.first }) {
            do {
                _ = try repository.mark(kept.slot, kept.outcome, expecting: kept.expecting, detail: kept.detail, at: kept.at, patience: .brief)
                state.withLock { if $0.keptMarks.first == kept { $0.keptMarks.removeFirst() } }
                wrote = true
            } catch {
                return failed(error, doing: "writing a household slot kept in memory")
            }
        }
        while let ring = state.withLock({ $0.keptRings.first }) {
            do {
                var id = ring.id
                if id == 0 {
                    // INSERT OR IGNORE: nil when the slot was written meanwhile (nothing more to do for it).
                    guard let saved = try repository.startRing(ring.slot, label: ring.label, time: ring.time, at: ring.startedAt, patience: .brief)
                    else {
                        state.withLock { _ = $0.keptRings.removeFirst() }
                        continue
                    }
                    id = saved.id
                    state.withLock { s in
                        s.keptRings[0].id = id
                        if s.ringing?.ring.slot == ring.slot, s.ringing?.ring.id == 0 { s.ringing?.ring.id = id }
                    }
                }
                if ring.outcome != .ringing, let endedAt = ring.endedAt, let endedBy = ring.endedBy {
                    _ = try repository.endRing(id: id, outcome: ring.outcome, by: endedBy, at: endedAt, patience: .brief)
                }
                state.withLock { _ = $0.keptRings.removeFirst() }
                wrote = true
            } catch {
                return failed(error, doing: "writing a backup ring kept in memory")
            }
        }
        while let answer = state.withLock({ $0.keptAnswers.first }) {
            do {
                try repository.record(answer, patience: .brief)
                state.withLock { _ = $0.keptAnswers.removeFirst() }
                wrote = true
            } catch {
                return failed(error, doing: "writing a household answer kept in memory")
            }
        }
        state.withLock { $0.keptRetryAt = nil }
        if wrote {
            health.succeeded()
            logger.notice("the household's plans, backup rings and answers kept in memory are saved")
        }
        return nil
    }

    // MARK: A backup alarm ringing here

    func begin(_ ring: HouseholdRepository.BackupRing, round: Int) async {
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
            $0.ringing = BackupRinging(ring: ring, ringing: ringing, alarmRing: alarmRing)
            $0.endedAt = nil
        }
        events?.publish(.backupAlarmRinging(alarmRing, alarm, owner: occurrence.owner))
        logger.warning("backup alarm ringing", metadata: [
            "owner": "\(occurrence.owner)", "alarm": "\(occurrence.alarmID)", "occurrence": "\(occurrence.at)", "round": "\(round)",
            // On the owner's clock, as the slot is.
            "lateMs": "\(Int(((ring.startedAt.timeIntervalSince(ring.slot.date) + (state.withLock { $0.peers.clockOffsets[occurrence.owner] } ?? 0)) * 1000).rounded()))",
        ])
    }

    /// Follows the backup alarm ringing here: ends it when it was answered (here or by the household) or its
    /// ten minutes are up; resumes it after a restart. Returns when it gives up.
    func followRing(now: Date) async throws -> Date? {
        let repository = self.repository
        let current = state.withLock { $0.ringing }
        // A ring the store has not taken (or whose end it has not): followed from memory (#51).
        if let current, let kept = state.withLock({ s in s.keptRings.last { $0.slot == current.ring.slot && $0.startedAt == current.ring.startedAt } }) {
            if kept.outcome != .ringing {
                await end(current, kept: kept)
                return nil
            }
            let answers = ((try? repository.answers()) ?? []) + state.withLock { $0.keptAnswers }
            if answers.contains(where: { $0.key == kept.slot.occurrence && $0.kind == .stop }) {
                await end(current, kept: keep(current, .stopped, by: .household, at: now))
                logger.notice("backup alarm stopped by the household", metadata: ["owner": "\(kept.slot.occurrence.owner)"])
                return nil
            }
            guard now < kept.givesUpAt else {
                await end(current, kept: keep(current, .missed, by: .timeout, at: now))
                logger.warning("backup alarm unanswered for 10 minutes", metadata: ["owner": "\(kept.slot.occurrence.owner)"])
                return nil
            }
            return kept.givesUpAt
        }
        // Nothing rings here, but an earlier run kept a ring in memory that was still ringing when it stopped (#51): it
        // rings again within its ten minutes, as a stored one does; after them it is kept as unanswered.
        if current == nil, let kept = state.withLock({ s in s.keptRings.last { $0.id == 0 && $0.outcome == .ringing } }) {
            guard now < kept.givesUpAt else {
                state.withLock { s in
                    if let i = s.keptRings.lastIndex(where: { $0.slot == kept.slot && $0.startedAt == kept.startedAt }) {
                        (s.keptRings[i].outcome, s.keptRings[i].endedBy, s.keptRings[i].endedAt) = (.missed, .timeout, now)
                    }
                }
                logger.warning("backup alarm unanswered for 10 minutes", metadata: ["owner": "\(kept.slot.occurrence.owner)"])
                return nil
            }
            logger.notice("the agent restarted while a backup alarm rang: ringing again")
            await begin(kept, round: 0)
            return kept.givesUpAt
        }
        guard let row = try current.map({ try repository.ring(id: $0.ring.id) }) ?? repository.ringing() else {
            if let current { await end(current) }
            return nil
        }
        guard row.outcome == .ringing else {
            if let current { await end(current) }
            return nil
        }
        // Ended here, its end not yet written (#51): not a ring to resume.
        if state.withLock({ $0.keptRings.contains { $0.id == row.id && $0.outcome != .ringing } }) { return nil }
        // A Stop heard while the store could not take it counts too (#51).
        let answers = try repository.answers() + state.withLock { $0.keptAnswers }
        if answers.contains(where: { $0.key == row.slot.occurrence && $0.kind == .stop }) {
            try await endWritten(row, current, .stopped, by: .household, at: now)
            logger.notice("backup alarm stopped by the household", metadata: ["owner": "\(row.slot.occurrence.owner)"])
            return nil
        }
        guard now < row.givesUpAt else {
            try await endWritten(row, current, .missed, by: .timeout, at: now)
            logger.warning("backup alarm unanswered for 10 minutes", metadata: ["owner": "\(row.slot.occurrence.owner)"])
            return nil
        }
        if current == nil {
            logger.notice("the agent restarted while a backup alarm rang: ringing again")
            await begin(row, round: 0)
        }
        return row.givesUpAt
    }

    /// Ends a ring the store holds as ringing: written, or — the store cannot take it now (#51) — the sound ends all
    /// the same and its end is kept in memory, written later.
    private func endWritten(_ row: HouseholdRepository.BackupRing, _ current: BackupRinging?, _ outcome: AlarmRingOutcome,
                            by ender: AlarmRingEnder, at now: Date) async throws {
        do {
            _ = try repository.endRing(id: row.id, outcome: outcome, by: ender, at: now, patience: .brief)
            if let current { await end(current) }
        } catch let error as StoreError where error.cause != nil {
            health.failed(error, doing: "recording the end of a backup alarm (it ends; written later)", at: now)
            if let current {
                await end(current, kept: keep(current, outcome, by: ender, at: now))
            } else {
                var ended = row
                (ended.outcome, ended.endedBy, ended.endedAt) = (outcome, ender, now)
                state.withLock { $0.keptRings.append(ended) }
            }
        }
    }

    /// The ring held here ended in memory (the store takes its end later); the kept ring.
    func keep(_ current: BackupRinging, _ outcome: AlarmRingOutcome, by ender: AlarmRingEnder, at now: Date) -> HouseholdRepository.BackupRing {
        state.withLock { s in
            guard let index = s.keptRings.lastIndex(where: { $0.slot == current.ring.slot && $0.startedAt == current.ring.startedAt }) else {
                var ended = current.ring
                (ended.outcome, ended.endedBy, ended.endedAt) = (outcome, ender, now)
                s.keptRings.append(ended)
                return ended
            }
            (s.keptRings[index].outcome, s.keptRings[index].endedBy, s.keptRings[index].endedAt) = (outcome, ender, now)
            return s.keptRings[index]
        }
    }

    /// Ends the sound and says so, once: the one place a backup ring held here ends, whoever answered. `kept`: its end
    /// as kept in memory (the store has not taken it).
    private func end(_ ringing: BackupRinging, kept: HouseholdRepository.BackupRing? = nil) async {
        let now = clock.now()
        state.withLock {
            $0.ringing = nil
            $0.endedAt = now
        }
        await ringer.finish(ringing.ringing)
        let ended = kept ?? (ringing.ring.id == 0 ? nil : (try? repository.ring(id: ringing.ring.id)) ?? nil)
        var ring = ringing.alarmRing
        ring.endedAt = ended?.endedAt ?? now
        ring.outcome = ended?.outcome ?? .stopped
        ring.endedBy = ended?.endedBy
        events?.publish(.backupAlarmEnded(ring, owner: ringing.ring.slot.occurrence.owner))
    }
}
