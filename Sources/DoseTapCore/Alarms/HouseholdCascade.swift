import Foundation

/// One occurrence of an alarm of the household: its owner (the device that rings it), the alarm, and when
/// (whole seconds since 1970).
public struct OccurrenceKey: Sendable, Equatable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var owner: String
    public var alarmID: Int
    public var at: Int64

    public init(owner: String, alarmID: Int, at: Int64) {
        self.owner = owner
        self.alarmID = alarmID
        self.at = at
    }

    public var date: Date { Date(timeIntervalSince1970: TimeInterval(at)) }
    public var description: String { "\(owner)/\(alarmID)@\(at)" }

    public static func < (a: OccurrenceKey, b: OccurrenceKey) -> Bool {
        (a.at, a.owner, a.alarmID) < (b.at, b.owner, b.alarmID)
    }
}

/// One slot of a cascade: target `target` of the occurrence, due at `at` (a snoozed target fires again in a
/// new slot). `target == SlotKey.allTried` is the "All backups tried" announcement.
public struct SlotKey: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public static let allTried = -1
    public var occurrence: OccurrenceKey
    public var target: Int
    public var at: Int64

    public init(occurrence: OccurrenceKey, target: Int, at: Int64) {
        self.occurrence = occurrence
        self.target = target
        self.at = at
    }

    public var date: Date { Date(timeIntervalSince1970: TimeInterval(at)) }
    public var description: String { "\(occurrence) target \(target) at \(at)" }
}

/// An alarm's plan as received: label, time, coming occurrences and the ordered backups.
public struct KnownPlan: Sendable, Equatable, Codable {
    public var label: String
    public var time: String
    public var occurrences: [Int64]
    public var targets: [BackupTarget]

    public init(label: String, time: String, occurrences: [Int64], targets: [BackupTarget]) {
        self.label = label
        self.time = time
        self.occurrences = occurrences
        self.targets = targets
    }
}

/// One occurrence this agent knows, with the backup list it was planned with.
public struct KnownOccurrence: Sendable, Equatable {
    public var key: OccurrenceKey
    public var label: String
    public var time: String
    public var targets: [BackupTarget]
    /// When this agent first held it as planned now (by its own clock); nil: not known. A survivor sends for a
    /// gone owner only from an occurrence held before the occurrence and before the owner went away.
    public var heldAt: Date?

    public init(key: OccurrenceKey, label: String, time: String, targets: [BackupTarget], heldAt: Date? = nil) {
        self.key = key
        self.label = label
        self.time = time
        self.targets = targets
        self.heldAt = heldAt
    }

    /// The earliest moment `device` can answer this occurrence: the owner once its alarm rang, a device target
    /// once its first slot came (a snooze of an earlier target only makes it later); nil for any other device.
    public func earliestAnswer(by device: String) -> Date? {
        if device == key.owner { return key.date }
        guard let index = targets.firstIndex(of: .device(device)) else { return nil }
        return key.date.addingTimeInterval(BackupSchedule.step * Double(index + 1))
    }
}

extension KnownOccurrence {
    /// `occurrences` after taking `plan` — `owner`'s alarm `alarmID`, received (or published) at `now` — exactly as
    /// the store takes it (`HouseholdRepository.applyPlan`): the alarm's occurrences after `now` are replaced by the
    /// plan's (nil: withdrawn); those at or before `now` are kept as they were planned; a coming occurrence planned
    /// again as it was keeps when it was first held. The agent applies a plan it could not write (#51: the store
    /// locked or full) to what it read, so a backup slot rings on time whatever the store does.
    public static func applying(_ plan: KnownPlan?, owner: String, alarmID: Int, at now: Date,
                                to occurrences: [KnownOccurrence]) -> [KnownOccurrence] {
        let cut = Int64(now.timeIntervalSince1970.rounded(.down))
        func ours(_ o: KnownOccurrence) -> Bool { o.key.owner == owner && o.key.alarmID == alarmID }
        var held: [Int64: KnownOccurrence] = [:]
        for o in occurrences where ours(o) && o.key.at > cut { held[o.key.at] = o }
        var result = occurrences.filter { !ours($0) || $0.key.at <= cut }
        if let plan {
            var present = Set(result.filter(ours).map(\.key.at))
            for at in plan.occurrences where !present.contains(at) {
                present.insert(at)
                let before = held[at]
                let same = before.map { $0.label == plan.label && $0.time == plan.time && $0.targets == plan.targets } ?? false
                result.append(KnownOccurrence(key: OccurrenceKey(owner: owner, alarmID: alarmID, at: at), label: plan.label,
                                              time: plan.time, targets: plan.targets, heldAt: (same ? before?.heldAt : nil) ?? now))
            }
        }
        return result.sorted { $0.key < $1.key }
    }
}

/// A Stop or a Snooze of an occurrence, from any agent of the household.
public struct CascadeAnswer: Sendable, Equatable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable { case stop, snooze }
    public var key: OccurrenceKey
    public var kind: Kind
    /// The backup that was snoozed; nil for the primary alarm (and for a Stop).
    public var target: Int?
    public var at: Int64
    public var by: String

    public init(key: OccurrenceKey, kind: Kind, target: Int?, at: Int64, by: String) {
        self.key = key
        self.kind = kind
        self.target = target
        self.at = at
        self.by = by
    }
}

/// Who took a push or call slot.
public struct SlotClaim: Sendable, Equatable {
    public var by: String
    public var at: Int64
    public var state: ClaimMessage.State

    public init(by: String, at: Int64, state: ClaimMessage.State) {
        self.by = by
        self.at = at
        self.state = state
    }
}

/// What this agent did with a slot (persisted: a restart never does it twice).
public enum SlotOutcome: String, Sendable, Equatable, Codable, CaseIterable {
    /// A device slot rang here.
    case rang
    /// A push or call was sent (or answered with a final refusal: `failed`).
    case sent
    case failed
    /// This agent claimed a push or call slot and has not sent it yet (a crash in between never resends).
    case claimed
    /// Too late to fire (the agent was down past the late limit).
    case missed
    /// "All backups tried" was shown.
    case announced
    /// A push or call not sent: its owner's cap was reached (`HouseholdCascade.sendsPerOccurrence`, `sendsPerOwnerHour`).
    case capped
}

/// The household cascade as every agent computes it (#12): from the plans, the answers, the claims, the
/// peers online and what this agent already did, the decisions due now and when to look again. Pure: the
/// agent's `HouseholdService` does the I/O.
public enum HouseholdCascade {
    /// A survivor claims a push or call slot of a dead owner this long after the slot (the owner, if alive,
    /// sends at once); the n-th survivor in name order waits `claimStep` longer each.
    public static let claimDelay: TimeInterval = 3
    public static let claimStep: TimeInterval = 5
    /// A claim wins when it is still the latest one this long after it was published.
    public static let claimSettle: TimeInterval = 2
    /// A slot is fired at most this late (as an alarm rings at most this late).
    public static let lateLimit: TimeInterval = AlarmRingRules.lateLimit
    /// An occurrence is forgotten this long after it (it was stopped, or every backup was tried long ago).
    public static let retention: TimeInterval = 2 * 86_400
    /// At most this many pushes and calls (sent, failed or claimed by this agent) for one occurrence (#51 finding 9): a
    /// plan may list 32 targets, and a snoozed target fires again, but a person's backups are a push and a call or two.
    public static let sendsPerOccurrence = 4
    /// At most this many for one owner's slots due within an hour of each other: N plans of 16 occurrences each (anyone's own
    /// plans, under the ACL) made N×16 calls on the survivors' accounts; a person's alarms make a few.
    public static let sendsPerOwnerHour = 6

    public struct View: Sendable {
        public var me: String
        public var occurrences: [KnownOccurrence]
        public var answers: [CascadeAnswer]
        public var done: [SlotKey: SlotOutcome]
        public var claims: [SlotKey: SlotClaim]
        /// Devices whose presence is online now (this agent's own name may be in it or not).
        public var online: Set<String>
        /// Owners this agent saw online in the household and then saw go away, with when (by its clock). A
        /// survivor sends only for these.
        public var departed: [String: Date]
        /// The numbers this device's owner allows it to call for another device's plan (`[phone]
        /// household_numbers`); a survivor never claims a call to any other number.
        public var callable: Set<String>
        /// Devices whose clock is off from this one's (`HouseholdPeers.clockOffsets`: theirs minus this one's). An
        /// occurrence's slots are its owner's times: they are followed on the owner's clock (#51 finding 8), so a device
        /// whose clock is fast does not ring early. The answers are on this machine's clock.
        public var clockOffsets: [String: TimeInterval]

        public init(me: String, occurrences: [KnownOccurrence], answers: [CascadeAnswer], done: [SlotKey: SlotOutcome],
                    claims: [SlotKey: SlotClaim], online: Set<String>, departed: [String: Date] = [:], callable: Set<String> = [],
                    clockOffsets: [String: TimeInterval] = [:]) {
            self.clockOffsets = clockOffsets
            self.me = me
            self.occurrences = occurrences
            self.answers = answers
            self.done = done
            self.claims = claims
            self.online = online
            self.departed = departed
            self.callable = callable
        }

        /// Whether this agent, not the owner, may send `target` of `occurrence`: its owner was seen online and
        /// then went away, no earlier than this agent held the occurrence, which it held before it was due; and a
        /// call goes only to a number this device's owner allowed.
        public func survivorMaySend(_ target: BackupTarget, of occurrence: KnownOccurrence) -> Bool {
            let owner = occurrence.key.owner
            guard owner != me, !online.contains(owner), let gone = departed[owner], let held = occurrence.heldAt,
                  held <= gone, held < occurrence.key.date else { return false }
            if case .phone(let number) = target { return callable.contains(number) }
            return true
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Ring the backup alarm here (a `device:` target naming this agent); `round` counts earlier rings.
        case ring(SlotKey, KnownOccurrence, round: Int)
        /// Send a push or place a call: as the owner, or as the survivor whose claim won.
        case send(SlotKey, KnownOccurrence, BackupTarget)
        /// Publish a claim on a dead owner's push or call slot.
        case claim(SlotKey)
        /// Too late: recorded, never fired.
        case missed(SlotKey)
        /// Every backup was tried and nobody pressed Stop: "All backups tried for <label> at <time>".
        case allTried(SlotKey, KnownOccurrence)
        /// A push or call this agent would send or claim, not sent: the owner's cap was reached (recorded, never sent).
        case capped(SlotKey, KnownOccurrence, BackupTarget)
    }

    /// Where one occurrence's cascade stands at `now`.
    public struct Progress: Sendable, Equatable {
        public var occurrence: KnownOccurrence
        public var stopped: CascadeAnswer?
        /// Every slot due so far, in order (target index, or `SlotKey.allTried`).
        public var slots: [(key: SlotKey, round: Int)]
        public var nextAt: Date?
        public var finished: Bool

        public static func == (a: Progress, b: Progress) -> Bool {
            a.occurrence == b.occurrence && a.stopped == b.stopped && a.nextAt == b.nextAt && a.finished == b.finished
                && a.slots.map(\.key) == b.slots.map(\.key) && a.slots.map(\.round) == b.slots.map(\.round)
        }
    }

    /// Replays one occurrence's answers (in time order, up to `now`) through the `BackupCascade`.
    public static func progress(of occurrence: KnownOccurrence, answers: [CascadeAnswer], now: Date) -> Progress {
        var cascade = BackupCascade(occurrence: occurrence.key.date, count: occurrence.targets.count)
        var slots: [(key: SlotKey, round: Int)] = []
        func record(_ due: [(action: BackupCascade.Action, at: Date)]) {
            for (action, at) in due {
                let seconds = Int64(at.timeIntervalSince1970.rounded(.down))
                switch action {
                case .fire(let index, let round): slots.append((SlotKey(occurrence: occurrence.key, target: index, at: seconds), round))
                case .allTried: slots.append((SlotKey(occurrence: occurrence.key, target: SlotKey.allTried, at: seconds), 0))
                }
            }
        }
        let mine = answers.filter { $0.key == occurrence.key && TimeInterval($0.at) <= now.timeIntervalSince1970 }
            .sorted { ($0.at, $0.kind == .stop ? 0 : 1) < ($1.at, $1.kind == .stop ? 0 : 1) }
        var stopped: CascadeAnswer?
        for answer in mine {
            record(cascade.dueWithTimes(at: Date(timeIntervalSince1970: TimeInterval(answer.at))))
            switch answer.kind {
            case .stop:
                cascade.stop()
                if stopped == nil { stopped = answer }
            case .snooze:
                if let target = answer.target, !occurrence.targets.indices.contains(target) { continue }
                cascade.snooze(at: Date(timeIntervalSince1970: TimeInterval(answer.at)), target: answer.target)
            }
        }
        record(cascade.dueWithTimes(at: now))
        let finished = stopped != nil || cascade.announcedAllTried
        return Progress(occurrence: occurrence, stopped: stopped, slots: slots, nextAt: cascade.wakeAt, finished: finished)
    }

    /// The decisions due at `now` and when to look again.
    public static func decide(_ view: View, now: Date) -> (decisions: [Decision], wakeAt: Date?) {
        var decisions: [Decision] = []
        var wake: [Date] = []
        let survivors = view.online.union([view.me]).sorted()
        var sends = SendCount(view)
        let myNow = now
        for occurrence in view.occurrences.sorted(by: { $0.key < $1.key }) {
            let owner = occurrence.key.owner
            // On the owner's clock: its slots, when they are late, and its answers (kept on this clock) moved to it.
            let shift = view.clockOffsets[owner] ?? 0
            let now = myNow.addingTimeInterval(shift)
            let answers = shift == 0 ? view.answers : view.answers.map { answer -> CascadeAnswer in
                var moved = answer
                moved.at += Int64(shift.rounded())
                return moved
            }
            let progress = progress(of: occurrence, answers: answers, now: now)
            if let next = progress.nextAt { wake.append(next.addingTimeInterval(-shift)) }
            // A slot this agent claimed waits for its claim to win; every other slot it dealt with is done.
            for (slot, round) in progress.slots where view.done[slot] == nil || view.done[slot] == .claimed {
                let claimedHere = view.done[slot] == .claimed
                let late = now.timeIntervalSince(slot.date) > lateLimit
                if slot.target == SlotKey.allTried {
                    decisions.append(late ? .missed(slot) : .allTried(slot, occurrence))
                    continue
                }
                guard occurrence.targets.indices.contains(slot.target) else { continue }
                let target = occurrence.targets[slot.target]
                switch target {
                case .device(let name):
                    guard name == view.me else { continue }
                    decisions.append(late ? .missed(slot) : .ring(slot, occurrence, round: round))
                case .push, .phone:
                    let claim = view.claims[slot]
                    if let claim, claim.by != view.me { continue }
                    if owner == view.me {
                        if late {
                            decisions.append(.missed(slot))
                        } else if sends.allows(slot) {
                            sends.add(slot)
                            decisions.append(.send(slot, occurrence, target))
                        } else {
                            decisions.append(.capped(slot, occurrence, target))
                        }
                        continue
                    }
                    // A survivor acts only for an owner it saw online and then gone, from a plan it held before (and
                    // ahead of the occurrence); a call only to a number this device's owner allowed.
                    guard view.survivorMaySend(target, of: occurrence) else { continue }
                    if let claim, claimedHere {
                        // Ours: it wins once it is still the latest after the settling time.
                        // The claim is dated by this clock.
                        let settled = Date(timeIntervalSince1970: TimeInterval(claim.at) + claimSettle)
                        if claim.state != .claimed { continue }
                        if myNow >= settled { decisions.append(late ? .missed(slot) : .send(slot, occurrence, target)) } else { wake.append(settled) }
                        continue
                    }
                    // Claimed here, but the broker has not echoed it yet (or lost it): wait for it. A claim in our
                    // name that this agent has no record of is not trusted to send (it could be sent twice).
                    if claimedHere || claim != nil { continue }
                    guard let rank = survivors.filter({ $0 != owner }).firstIndex(of: view.me) else { continue }
                    let claimAt = slot.date.addingTimeInterval(claimDelay + claimStep * Double(rank))
                    if late {
                        decisions.append(.missed(slot))
                    } else if now >= claimAt {
                        if sends.allows(slot) {
                            sends.add(slot)
                            decisions.append(.claim(slot))
                        } else {
                            decisions.append(.capped(slot, occurrence, target))
                        }
                    } else {
                        wake.append(claimAt.addingTimeInterval(-shift))
                    }
                }
            }
        }
        return (decisions, wake.min())
    }
}

extension HouseholdCascade {
    /// The pushes and calls this agent sent, tried or claimed, by occurrence and by owner (`sendsPerOccurrence`,
    /// `sendsPerOwnerHour`), counted from what it did (`View.done`: pruned after `retention`) and what it decides in this pass.
    struct SendCount {
        private var byOccurrence: [OccurrenceKey: Int] = [:]
        /// The slots' due times, by owner.
        private var byOwner: [String: [Int64]] = [:]

        init(_ view: View) {
            let targets = Dictionary(view.occurrences.map { ($0.key, $0.targets) }, uniquingKeysWith: { a, _ in a })
            for (slot, outcome) in view.done where [.sent, .failed, .claimed].contains(outcome) {
                guard let list = targets[slot.occurrence], list.indices.contains(slot.target) else { continue }
                switch list[slot.target] {
                case .push, .phone: add(slot)
                case .device: continue
                }
            }
        }

        /// Under both caps: fewer than `sendsPerOccurrence` for its occurrence, fewer than `sendsPerOwnerHour` for its owner's
        /// slots due within an hour of it (either side).
        func allows(_ slot: SlotKey) -> Bool {
            let hour = (byOwner[slot.occurrence.owner] ?? []).filter { abs($0 - slot.at) < 3600 }.count
            return byOccurrence[slot.occurrence, default: 0] < HouseholdCascade.sendsPerOccurrence && hour < HouseholdCascade.sendsPerOwnerHour
        }

        mutating func add(_ slot: SlotKey) {
            byOccurrence[slot.occurrence, default: 0] += 1
            byOwner[slot.occurrence.owner, default: []].append(slot.at)
        }
    }
}
