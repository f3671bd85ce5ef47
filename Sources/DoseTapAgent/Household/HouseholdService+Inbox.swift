import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// What arrives from the broker: parsed, judged by `HouseholdInbox`'s rules, kept or dropped with one log line per cause.
extension HouseholdService {
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
            if presence.isOnline, let sent = presence.at, device != identity.device, let since = forgottenSince(device),
               TimeInterval(sent) > since.timeIntervalSince1970 {
                // Forgotten, and now heard online after that: a member again (its account was not removed after all).
                do {
                    if try repository.remember(device) {
                        logger.notice("a forgotten device is heard online again: its plans count again", metadata: ["device": "\(device)"])
                    }
                } catch {
                    health.failed(error, doing: "remembering a household device", at: now)
                }
            }
            let changed = state.withLock { s -> Bool in
                // Our own last will from an earlier run (or a broker that lost us): say we are here.
                if device == identity.device, !presence.isOnline, s.connected { s.nextHeartbeat = nil }
                return s.peers.heard(device, presence, at: now)
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
            if forgottenSince(owner) != nil {
                // `household forget`: its plans are ignored. A retained one is cleared where the broker lets this device
                // (it does not under the documented ACL: docs/household.md says how to clear it there).
                if plan != nil { publish(.plan(owner: owner, alarmID: alarmID), [], retain: true) }
                logOnce("forgotten|\(owner)", "ignored the plan of a forgotten device (dosetap household forget)", metadata: ["owner": "\(owner)"])
                return
            }
            var plan = plan
            if let heard = plan {
                // An owner plans eight days ahead: an occurrence further out is not kept (#51 finding 7).
                let (kept, dropped) = heard.withinHorizon(of: now)
                if dropped > 0 {
                    logOnce("horizon|\(owner)", "dropped occurrences of a household plan dated more than 8 days ahead",
                            metadata: ["owner": "\(owner)", "alarm": "\(alarmID)", "dropped": "\(dropped)"])
                }
                plan = kept
            }
            let said: [String: Logger.MetadataValue] = [
                "owner": "\(owner)", "alarm": "\(alarmID)", "occurrences": "\(plan?.occurrences.count ?? 0)",
                "targets": "\(plan?.targets.map(\.description).joined(separator: ",") ?? "withdrawn")",
            ]
            do {
                if try writeOrKeep(plan, owner: owner, alarmID: alarmID, at: now, doing: "keeping a household plan (followed now, written later)") {
                    logger.info("household plan", metadata: said)
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
            // A verdict once given stands: the same answer heard again (re-delivered) is not judged anew.
            if state.withLock({ $0.refusedAnswers.contains(answer) }) || (try? repository.wasRefused(answer)) == true {
                logOnce("again|\(answer.by)", "dropped a household answer judged forged before: its verdict stands",
                        metadata: ["from": "\(answer.by)", "occurrence": "\(answer.key)"])
                return
            }
            // Only the owner or a device target answers, and only once its alarm rang: an answer heard (or dated)
            // before that ring, or dated ahead of when it was heard, is forged.
            let offsets = state.withLock { $0.peers.clockOffsets }
            let verdict = HouseholdInbox.judge(answer, of: occurrence, receivedAt: receivedAt, clockOffsets: offsets)
            if verdict != .accepted {
                state.withLock { _ = $0.refusedAnswers.insert(answer) }
                // Kept in the store too: a restart of this agent does not make it new (#51 finding 5).
                do { try repository.refuse(answer, at: now, patience: .brief) } catch { health.failed(error, doing: "remembering a household answer judged forged", at: now) }
            }
            switch verdict {
            case .accepted:
                break
            case .notAnAnswerer:
                logOnce("answerer|\(answer.by)", "dropped a household answer from a device that does not ring this alarm",
                        metadata: ["from": "\(answer.by)", "owner": "\(answer.key.owner)"])
                return
            case .beforeTheRing:
                logOnce("early|\(answer.by)", "dropped a household answer that came before the ring it answers",
                        metadata: ["from": "\(answer.by)", "occurrence": "\(answer.key)"])
                return
            case .unknownTarget:
                logOnce("target|\(answer.by)", "dropped a snooze naming a backup the plan does not have", metadata: ["from": "\(answer.by)"])
                return
            }
            if let offset = offsets[answer.by] {
                logOnce("clock|\(answer.by)", "a household answer from a device whose clock is off: read on this clock",
                        metadata: ["from": "\(answer.by)", "offset": "\(Int(offset.rounded())) s"])
            }
            // Kept on this clock: a Stop from a device whose clock is ahead counts now (#51 finding 8).
            let answer = HouseholdInbox.onThisClock(answer, clockOffsets: offsets)
            do {
                if try recordOrKeep(answer, at: now) {
                    logger.notice("household \(answer.kind.rawValue)", metadata: [
                        "occurrence": "\(answer.key)", "by": "\(answer.by)", "target": "\(answer.target.map(String.init) ?? "primary")",
                    ])
                    if answer.kind == .stop, answer.key.owner == identity.device,
                       ownAlarms?.stop(ownAlarm: answer.key.alarmID, by: .household) == true {
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

    /// Records an answer heard from the household, or — when the store cannot take it (#51) — keeps it in memory,
    /// acted on now (the owner's alarm stops, the cascade reads it) and written later. Returns whether it is new.
    private func recordOrKeep(_ answer: CascadeAnswer, at now: Date) throws -> Bool {
        do {
            return try repository.record(answer, patience: .brief)
        } catch let error as StoreError where error.cause != nil {
            health.failed(error, doing: "keeping a household answer (acted on now, written later)", at: now)
            if try repository.answers().contains(answer) { return false }
            return state.withLock { s in
                guard !s.keptAnswers.contains(answer) else { return false }
                s.keptAnswers.append(answer)
                return true
            }
        }
    }

    /// When `device` was forgotten (`household forget`), or nil.
    private func forgottenSince(_ device: String) -> Date? {
        (try? repository.forgotten())?[device]
    }

    private func known(_ key: OccurrenceKey) -> KnownOccurrence? {
        (try? occurrences())?.first { $0.key == key }
    }

    private func member(_ device: String, of occurrence: KnownOccurrence) -> Bool {
        state.withLock { HouseholdInbox.isMember(device, of: occurrence, peers: $0.peers) }
    }

    private func keep(_ message: HouseholdMessage, receivedAt: Date, reason: String) {
        state.withLock { $0.pending.keep(message, receivedAt: receivedAt, reason: reason) }
    }

    /// Handles again what waited for a plan or a peer.
    func retryPending() {
        let now = clock.now()
        let (waiting, expired) = state.withLock { $0.pending.takeAll(at: now) }
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
}
