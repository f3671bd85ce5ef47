import Foundation

/// What an owner tells its household of its alarms with backups (#12): for each enabled alarm whose backups
/// are on, the occurrences of the next eight days (at most `HouseholdLimits.maximumOccurrences`) with the
/// ordered targets. Pure: `HouseholdService` publishes the plans (retained) and withdraws the ones that went.
public enum HouseholdPlanner {
    /// Plans cover the occurrences of the next eight days.
    public static let horizon: TimeInterval = 8 * 86_400
    /// A plan heard is kept only up to the horizon and this much more (its owner's clock may be a little ahead): a
    /// retained plan outlives its owner's broker account by eight days at most (#51 finding 7).
    public static let horizonSlack: TimeInterval = 3600

    /// One alarm as the planner sees it.
    public struct Input: Sendable {
        public var alarm: Alarm
        /// Its backups when they are on (empty: off, or none).
        public var targets: [BackupTarget]
        /// How its latest ring ended (nil: never rang).
        public var latestRing: AlarmRingOutcome?

        public init(alarm: Alarm, targets: [BackupTarget], latestRing: AlarmRingOutcome?) {
            self.alarm = alarm
            self.targets = targets
            self.latestRing = latestRing
        }
    }

    /// An alarm's plan: the message as published (`PlanMessage`: no secret of a push URL) and the targets as
    /// kept by the owner (with them).
    public struct Plan: Sendable, Equatable {
        public var message: PlanMessage
        public var targets: [BackupTarget]

        public var known: KnownPlan {
            KnownPlan(label: message.label, time: message.time, occurrences: message.occurrences, targets: targets)
        }
    }

    /// The plans by alarm id. An alarm with no occurrence in the horizon has none.
    public static func plans(_ inputs: [Input], now: Date, timeZone: TimeZone) -> [Int: Plan] {
        var plans: [Int: Plan] = [:]
        for input in inputs where input.alarm.enabled && !input.targets.isEmpty {
            let occurrences = occurrences(of: input, now: now, timeZone: timeZone)
            guard !occurrences.isEmpty else { continue }
            let alarm = input.alarm
            plans[alarm.id] = Plan(message: PlanMessage(label: alarm.label, time: "\(alarm.time)", occurrences: occurrences, targets: input.targets),
                                   targets: input.targets)
        }
        return plans
    }

    /// A once alarm has one occurrence: the next one, or none while it rings or is snoozed (the household
    /// holds the one under way; the alarm turns itself off when it ends).
    static func occurrences(of input: Input, now: Date, timeZone: TimeZone) -> [Int64] {
        let alarm = input.alarm
        let limit = alarm.repetition == .once ? 1 : HouseholdLimits.maximumOccurrences
        if alarm.repetition == .once, input.latestRing == .ringing || input.latestRing == .snoozed { return [] }
        var occurrences: [Int64] = []
        var cursor = now
        while occurrences.count < limit, let next = alarm.nextOccurrence(after: cursor, in: timeZone), next.timeIntervalSince(now) <= horizon {
            occurrences.append(Int64(next.timeIntervalSince1970.rounded(.down)))
            cursor = next
        }
        return occurrences
    }
}

extension KnownPlan {
    /// The plan without the occurrences dated more than `HouseholdPlanner.horizon` (and its slack) after `now`, and how
    /// many were left out: an owner never plans further, so a plan that does was not written by this version (or forged).
    public func withinHorizon(of now: Date) -> (plan: KnownPlan, dropped: Int) {
        let limit = Int64((now.timeIntervalSince1970 + HouseholdPlanner.horizon + HouseholdPlanner.horizonSlack).rounded(.down))
        var kept = self
        kept.occurrences = occurrences.filter { $0 <= limit }
        return (kept, occurrences.count - kept.occurrences.count)
    }
}
