import Foundation

/// The devices heard on the household's broker (#12, #25): online or not, their last heartbeat, and when one
/// that was seen online went away (a survivor sends a dead owner's push and call only for such a device).
///
/// Bounded: a household has a handful of devices, but anyone who may publish on the broker can name new ones
/// without end. Beyond `capacity` one goes: first an offline device that never departed (nothing rests on
/// it), then the online one heard from longest ago (a real one is back at its next heartbeat), and a departed
/// one last.
public struct HouseholdPeers: Sendable, Equatable {
    public struct Peer: Sendable, Equatable {
        public var online: Bool
        public var seenAt: Date
        public var heartbeat: Date?
        /// Seen online in the household (this run), then gone: when.
        public var departedAt: Date?
        public var seenOnline: Bool
        /// Its clock minus this one's (#51 finding 8), from its last live heartbeats; nil until measured.
        public var clockOffset: TimeInterval?
    }

    /// Clocks this far apart count as the same (a heartbeat's whole seconds and its delivery are within it).
    public static let clockTolerance: TimeInterval = 30
    /// Two heartbeats measure a clock when their dates are as far apart as their arrivals, within this: the first one
    /// heard may be an old retained one, a live pair is not.
    public static let heartbeatAgreement: TimeInterval = 5

    /// Devices remembered at once by default.
    public static let kept = 256

    public let capacity: Int
    public private(set) var byDevice: [String: Peer] = [:]

    public init(capacity: Int = HouseholdPeers.kept) {
        self.capacity = max(1, capacity)
    }

    /// `device` said it is online or offline (its heartbeat, its last will, a clean stop). Returns whether
    /// that changed what is known of it.
    @discardableResult
    public mutating func heard(_ device: String, _ presence: PeerMessage, at now: Date) -> Bool {
        let before = byDevice[device]
        let sent = presence.at.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        var peer = Peer(online: presence.isOnline, seenAt: now, heartbeat: sent ?? before?.heartbeat,
                        departedAt: nil, seenOnline: presence.isOnline || before?.seenOnline == true, clockOffset: before?.clockOffset)
        // Its clock: from two heartbeats in a row whose dates are as far apart as their arrivals (live ones, not a retained
        // one from long ago), the later one's date against when it came.
        if presence.isOnline, let sent, let previous = before, previous.online, let last = previous.heartbeat {
            let apart = sent.timeIntervalSince(last)
            if apart > 0, abs(apart - now.timeIntervalSince(previous.seenAt)) <= Self.heartbeatAgreement {
                // A heartbeat's delivery and its whole-second date only make its clock look behind, never ahead: of the
                // measures that agree, the largest is the nearest (it then follows that clock a little late, never early).
                // One far from the last is a clock that was set: it replaces it.
                let measured = sent.timeIntervalSince(now)
                if let kept = previous.clockOffset, abs(measured - kept) <= Self.heartbeatAgreement {
                    peer.clockOffset = max(kept, measured)
                } else {
                    peer.clockOffset = measured
                }
            }
        }
        // Gone: seen online, now offline. Back online: not gone.
        peer.departedAt = presence.isOnline ? nil : (before?.online == true ? now : before?.departedAt)
        if before == nil, byDevice.count >= capacity { forgetOne() }
        byDevice[device] = peer
        return before?.online != presence.isOnline
    }

    public var count: Int { byDevice.count }
    public func knows(_ device: String) -> Bool { byDevice[device] != nil }
    /// The devices online now.
    public var online: Set<String> { Set(byDevice.filter { $0.value.online }.map(\.key)) }
    /// The devices whose clock is off from this one's by more than `clockTolerance`: their clock minus this one's.
    public var clockOffsets: [String: TimeInterval] {
        byDevice.compactMapValues { peer in peer.clockOffset.flatMap { abs($0) > Self.clockTolerance ? $0 : nil } }
    }
    /// The devices seen online this run that went away, and when.
    public var departed: [String: Date] { byDevice.compactMapValues { $0.seenOnline ? $0.departedAt : nil } }

    private mutating func forgetOne() {
        func rank(_ peer: Peer) -> Int { peer.departedAt != nil ? 2 : peer.online ? 1 : 0 }
        let oldest = byDevice.min { a, b in
            rank(a.value) != rank(b.value) ? rank(a.value) < rank(b.value) : (a.value.seenAt, a.key) < (b.value.seenAt, b.key)
        }
        if let oldest { byDevice[oldest.key] = nil }
    }
}

/// What the household believes of a message from the broker (#25: everything there is untrusted).
public enum HouseholdInbox {
    /// How far an answer may seem to come before the ring it answers (clocks a little apart).
    public static let answerSkew: TimeInterval = 10
    /// A Stop, Snooze or claim naming an occurrence or a sender not known yet waits this long (retained
    /// messages arrive in no particular order), then is dropped.
    public static let pendingGrace: TimeInterval = 60

    public enum AnswerVerdict: Sendable, Equatable {
        case accepted
        /// Not the owner, not one of its device targets.
        case notAnAnswerer
        /// Heard or dated before the ring it answers could have rung, or dated ahead of when it was heard.
        case beforeTheRing
        /// A snooze naming a backup the plan does not have.
        case unknownTarget
    }

    /// Only the owner or a device target answers an occurrence, and only once its alarm rang there. Times are read on
    /// this machine's clock (#51 finding 8): the ring is the owner's occurrence (on its clock) and the answer's date is
    /// its sender's clock, each moved by that device's `clockOffsets` (none: the same clock).
    public static func judge(_ answer: CascadeAnswer, of occurrence: KnownOccurrence, receivedAt: Date,
                             clockOffsets: [String: TimeInterval] = [:]) -> AnswerVerdict {
        guard let ownerEarliest = occurrence.earliestAnswer(by: answer.by) else { return .notAnAnswerer }
        let earliest = ownerEarliest.addingTimeInterval(-(clockOffsets[occurrence.key.owner] ?? 0))
        let bound = earliest.addingTimeInterval(-answerSkew)
        let dated = Date(timeIntervalSince1970: TimeInterval(answer.at) - (clockOffsets[answer.by] ?? 0))
        guard receivedAt >= bound, dated >= bound, dated <= receivedAt.addingTimeInterval(answerSkew) else { return .beforeTheRing }
        if answer.kind == .snooze, let target = answer.target, !occurrence.targets.indices.contains(target) { return .unknownTarget }
        return .accepted
    }

    /// The answer as this machine keeps it: its date on this machine's clock (its sender's clock offset taken off), so
    /// that a Stop from a device whose clock is ahead counts now, not when this clock reaches its date.
    public static func onThisClock(_ answer: CascadeAnswer, clockOffsets: [String: TimeInterval]) -> CascadeAnswer {
        guard let offset = clockOffsets[answer.by] else { return answer }
        var local = answer
        local.at = max(answer.key.at - Int64(clockOffsets[answer.key.owner] ?? 0), answer.at - Int64(offset.rounded()))
        return local
    }

    /// A sender is of the household when it owns the occurrence, is one of its device targets, or has said it
    /// is online or offline on the household's topics.
    public static func isMember(_ device: String, of occurrence: KnownOccurrence, peers: HouseholdPeers) -> Bool {
        device == occurrence.key.owner || occurrence.targets.contains(.device(device)) || peers.knows(device)
    }
}

/// Messages that wait for a plan or a peer (`HouseholdInbox.pendingGrace`), at most `capacity` of them (the
/// oldest goes first).
public struct HouseholdPending<Message: Sendable>: Sendable {
    public struct Item: Sendable {
        public var message: Message
        public var receivedAt: Date
        public var reason: String
    }

    public let capacity: Int
    public private(set) var items: [Item] = []

    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    public mutating func keep(_ message: Message, receivedAt: Date, reason: String) {
        if items.count >= capacity { items.removeFirst(items.count - capacity + 1) }
        items.append(Item(message: message, receivedAt: receivedAt, reason: reason))
    }

    /// Empties the queue: what may still wait (to be handled again) and what waited too long (to be dropped).
    public mutating func takeAll(at now: Date) -> (waiting: [Item], expired: [Item]) {
        defer { items = [] }
        let expired = items.filter { now.timeIntervalSince($0.receivedAt) >= HouseholdInbox.pendingGrace }
        return (items.filter { now.timeIntervalSince($0.receivedAt) < HouseholdInbox.pendingGrace }, expired)
    }

    /// When the oldest waiting message expires.
    public var nextExpiry: Date? { items.map { $0.receivedAt.addingTimeInterval(HouseholdInbox.pendingGrace) }.min() }
}
