import Foundation

/// The cascade of one alarm occurrence (#12), as a pure state machine every agent of the household can run
/// from the same plan and the same resolutions: with no Stop by T+2 min the first backup fires; each next
/// one 2 minutes after the previous; a Snooze pauses 9 minutes and then the same target fires again
/// (unlimited); only Stop resolves; when the list is exhausted, "all backups tried" once.
public struct BackupCascade: Sendable, Equatable, Codable {
    public static let escalation: TimeInterval = 120
    public static let snoozePause: TimeInterval = 540

    /// What the cascade does now.
    public enum Action: Sendable, Equatable {
        /// Ring (or push, or call) target `index`; `round` counts the times it was fired (0 the first).
        case fire(index: Int, round: Int)
        /// Every target was tried and nobody pressed Stop.
        case allTried
    }

    public let occurrence: Date
    public let count: Int
    /// The next target to fire and when; `next == count` means the list is exhausted at `nextAt`.
    public private(set) var next: Int
    public private(set) var nextAt: Date
    /// Rounds fired per target.
    public private(set) var rounds: [Int]
    public private(set) var resolved = false
    public private(set) var announcedAllTried = false

    /// The cascade of an occurrence at `occurrence` with `count` backups.
    public init(occurrence: Date, count: Int) {
        self.occurrence = occurrence
        self.count = max(0, count)
        next = 0
        nextAt = occurrence.addingTimeInterval(Self.escalation)
        rounds = Array(repeating: 0, count: max(0, count))
    }

    /// When to look again (nil when resolved or finished).
    public var wakeAt: Date? { resolved || announcedAllTried ? nil : nextAt }

    /// The actions due at `now` (in order), with the state moved past them.
    public mutating func due(at now: Date) -> [Action] {
        dueWithTimes(at: now).map(\.action)
    }

    /// The actions due at `now` with the instant each was due (a slot's identity across the household: every
    /// agent replaying the same plan and answers computes the same instants).
    public mutating func dueWithTimes(at now: Date) -> [(action: Action, at: Date)] {
        var actions: [(action: Action, at: Date)] = []
        var guardCount = 0
        while !resolved, !announcedAllTried, now >= nextAt, guardCount < count + 2 {
            guardCount += 1
            if next >= count {
                announcedAllTried = true
                actions.append((.allTried, nextAt))
                break
            }
            actions.append((.fire(index: next, round: rounds[next]), nextAt))
            rounds[next] += 1
            let firedAt = nextAt
            next += 1
            nextAt = firedAt.addingTimeInterval(Self.escalation)
        }
        return actions
    }

    /// Stop, from anywhere: nothing more fires.
    public mutating func stop() {
        resolved = true
    }

    /// Snooze at `now` on target `index` (nil: the primary alarm): the cascade pauses 9 minutes, then that
    /// target fires again (the primary: it rings again itself, and the first backup follows 2 minutes later).
    /// A snooze after Stop, or naming a target that has not fired, changes nothing.
    public mutating func snooze(at now: Date, target index: Int?) {
        guard !resolved else { return }
        if let index {
            guard index >= 0, index < count, rounds[index] > 0 else { return }
            next = index
            nextAt = now.addingTimeInterval(Self.snoozePause)
        } else {
            next = 0
            nextAt = now.addingTimeInterval(Self.snoozePause + Self.escalation)
        }
        announcedAllTried = false
    }
}
