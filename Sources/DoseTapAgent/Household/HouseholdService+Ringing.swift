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

    /// Ends the sound and says so, once: the one place a backup ring held here ends, whoever answered.
    private func end(_ ringing: BackupRinging) async {
        let now = clock.now()
        state.withLock {
            $0.ringing = nil
            $0.endedAt = now
        }
        await ringer.finish(ringing.ringing)
        let ended = (try? repository.ring(id: ringing.ring.id)) ?? nil
        var ring = ringing.alarmRing
        ring.endedAt = ended?.endedAt ?? now
        ring.outcome = ended?.outcome ?? .stopped
        ring.endedBy = ended?.endedBy
        events?.publish(.backupAlarmEnded(ring, owner: ringing.ring.slot.occurrence.owner))
    }
}
