import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The cascade's decisions carried out: a backup ring started, a push or call sent (or claimed), a slot missed, "All backups tried".
extension HouseholdService {
    // MARK: Acting

    func act(_ decision: HouseholdCascade.Decision, now: Date) async {
        let repository = self.repository
        do {
            switch decision {
            case .ring(let slot, let occurrence, let round):
                guard state.withLock({ $0.ringing == nil }) else { return }
                let ring: HouseholdRepository.BackupRing
                do {
                    guard let saved = try repository.startRing(slot, label: occurrence.label, time: occurrence.time, at: now, patience: .brief)
                    else { return }
                    ring = saved
                } catch {
                    // The alarm sounds first (#51): the store cannot take the ring now (locked, full, read-only); it rings
                    // from memory and is written when the store can take it.
                    health.failed(error, doing: "recording a backup alarm ringing (it rings; written later)", at: now)
                    ring = HouseholdRepository.BackupRing(slot: slot, label: occurrence.label, time: occurrence.time, startedAt: now)
                    state.withLock { $0.keptRings.append(ring) }
                }
                await begin(ring, round: round)
            case .send(let slot, let occurrence, let target):
                if occurrence.key.owner != identity.device, case .phone(let number) = target, !delivery.householdNumbers.contains(number) {
                    logOnce("call|\(number)", "not calling \(target.displayName) for \(occurrence.key.owner): not in phone.household_numbers")
                    return
                }
                let before = try slots()[slot]
                guard try markOrKeep(slot, .sent, expecting: before == .claimed ? .claimed : nil, at: now) else { return }
                let claim = ClaimMessage(by: identity.device, at: Int64(now.timeIntervalSince1970.rounded(.down)), state: .claimed)
                publish(.claim(slot), HouseholdMessage.encode(claim), retain: true)
                send(slot, occurrence: occurrence, target: target)
            case .claim(let slot):
                guard state.withLock({ $0.connected }) else { return }
                guard try markOrKeep(slot, .claimed, expecting: nil, at: now) else { return }
                let claim = ClaimMessage(by: identity.device, at: Int64(now.timeIntervalSince1970.rounded(.down)), state: .claimed)
                logger.notice("claiming a backup of an owner that is gone", metadata: ["slot": "\(slot)"])
                publish(.claim(slot), HouseholdMessage.encode(claim), retain: true)
            case .missed(let slot):
                let before = try slots()[slot]
                guard try markOrKeep(slot, .missed, expecting: before == .claimed ? .claimed : nil, at: now) else { return }
                logger.warning("a backup slot passed while this agent could not act: not fired late", metadata: ["slot": "\(slot)"])
            case .capped(let slot, let occurrence, let target):
                guard try markOrKeep(slot, .capped, expecting: nil, at: now) else { return }
                logOnce("capped|\(occurrence.key.owner)",
                        "not sending a \(target.kind) for \(occurrence.key.owner)'s alarm: at most \(HouseholdCascade.sendsPerOccurrence) pushes and calls per occurrence and \(HouseholdCascade.sendsPerOwnerHour) within an hour for one owner",
                        metadata: ["slot": "\(slot)"])
            case .allTried(let slot, let occurrence):
                guard try markOrKeep(slot, .announced, expecting: nil, at: now) else { return }
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

    /// The slots' outcomes: the store's, with the marks it could not take yet over them.
    func slots() throws -> [SlotKey: SlotOutcome] {
        var slots = try repository.slots()
        for mark in state.withLock({ $0.keptMarks }) { slots[mark.slot] = mark.outcome }
        return slots
    }

    /// Marks `slot` as `HouseholdRepository.mark` does (only when its outcome is `expecting` now; nil: the slot is new),
    /// in the store, or — when the store cannot take it (#51) — in memory, written later in order. Returns whether it
    /// was marked.
    func markOrKeep(_ slot: SlotKey, _ outcome: SlotOutcome, expecting: SlotOutcome?, detail: String? = nil, at now: Date) throws -> Bool {
        if state.withLock({ $0.keptMarks.isEmpty }) {
            do {
                return try repository.mark(slot, outcome, expecting: expecting, detail: detail, at: now, patience: .brief)
            } catch let error as StoreError where error.cause != nil {
                health.failed(error, doing: "marking a household slot (acted on now, written later)", at: now)
            }
        }
        guard try slots()[slot] == expecting else { return false }
        state.withLock { $0.keptMarks.append(KeptMark(slot: slot, outcome: outcome, expecting: expecting, detail: detail, at: now)) }
        return true
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
                _ = try? self.markOrKeep(slot, .failed, expecting: .sent, detail: reason, at: now)
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
}
