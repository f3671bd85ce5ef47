import DoseTapApp
import DoseTapCore
import Foundation
import Logging

/// A service that may hold an alarm ringing here: this machine's own (`AlarmService`) or a backup of the
/// household (`HouseholdService`). It says whether it rings; it is told to look again after an answer.
public protocol RingHolder: Sendable {
    /// True while its alarm rings, and for `AlarmRingRules.buttonGrace` after it ended.
    func claimsButtons(at now: Date) -> Bool
    /// Whether its alarm rings now (not counting the grace after).
    var isRinging: Bool { get }
    /// Look again now (its ring may have been answered).
    func poke()
    /// This machine's own alarm ringing now, by id; nil when none (a household backup is never one of ours).
    var ownAlarmRinging: Int? { get }
    /// Ends its ring here, the answer kept in memory until the store takes it — when the use case could not write
    /// it (#51: a Stop is never lost to a locked or full disk). The ended ring; nil when it cannot (nothing rings).
    func answerHere(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> AlarmRing?
}

extension RingHolder {
    public var ownAlarmRinging: Int? { nil }
    public func answerHere(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> AlarmRing? { nil }
}

/// This machine's own alarms as the household answers them (#12): a Stop of alarm `id` heard from another
/// device stops it here too, through the one use case, if it is the one ringing.
public protocol OwnAlarmAnswering: Sendable {
    func stop(ownAlarm id: Int, by ender: AlarmRingEnder) -> Bool
}

/// Every alarm that can ring here, answered as one by the buttons, the notifications and Home Assistant.
/// One use case ends a ring, whatever rang it (`AlarmUseCases.stopRinging`/`snoozeRinging`, as the command
/// line and the dashboard do); the holders then follow the stored answer.
public struct RingAnswers: RingAnswering, OwnAlarmAnswering {
    private let alarms: AlarmUseCases
    private let holders: [any RingHolder]
    private let logger: Logger

    public init(alarms: AlarmUseCases, holders: [any RingHolder], logger: Logger) {
        self.alarms = alarms
        self.holders = holders
        self.logger = logger
    }

    public func claimsButtons(at now: Date) -> Bool { holders.contains { $0.claimsButtons(at: now) } }
    public var isRinging: Bool { holders.contains { $0.isRinging } }

    @discardableResult
    public func stop(by ender: AlarmRingEnder) -> Bool { end(.stopped, by: ender) }

    @discardableResult
    public func snooze(by ender: AlarmRingEnder) -> Bool { end(.snoozed, by: ender) }

    /// Stops this machine's own alarm `id` if it is the one ringing (the household stopped it elsewhere);
    /// false, with nothing done, otherwise.
    public func stop(ownAlarm id: Int, by ender: AlarmRingEnder) -> Bool {
        guard holders.contains(where: { $0.ownAlarmRinging == id }) else { return false }
        return stop(by: ender)
    }

    /// Answers every alarm ringing now (this machine's own and a backup may ring at once): one answer each.
    private func end(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) -> Bool {
        var answered = 0
        var problem: (any Error)?
        for _ in 0..<max(1, holders.filter(\.isRinging).count) {
            do {
                log(outcome == .snoozed ? try alarms.snoozeRinging(by: ender) : try alarms.stopRinging(by: ender), outcome, by: ender)
                answered += 1
            } catch {
                problem = error
                break
            }
        }
        if let problem, holders.contains(where: \.isRinging), Self.storeCouldNotAnswer(problem) {
            // The store could not take the answer (locked, full, read-only), or has no row of a ring it could not
            // record: the ring ends here all the same, its answer written later.
            for holder in holders where holder.isRinging {
                guard let ring = holder.answerHere(outcome, by: ender) else { continue }
                log(AlarmUseCases.RingAnswer(alarm: nil, ring: ring, backupOf: nil), outcome, by: ender)
                answered += 1
            }
        }
        guard answered > 0 else {
            logger.notice("nothing to \(outcome == .snoozed ? "snooze" : "stop"): \(problem.map { "\($0)" } ?? "no alarm is ringing")",
                          metadata: ["by": "\(ender.rawValue)"])
            return false
        }
        for holder in holders { holder.poke() }
        return true
    }

    /// Whether `error` says the store could not take the answer (or had no row of the ring), not that the answer was
    /// refused for its own sake.
    static func storeCouldNotAnswer(_ error: any Error) -> Bool {
        guard let refusal = error as? UseCaseError else { return true }
        return refusal.kind == .unavailable || refusal.kind == .refused
    }

    private func log(_ answer: AlarmUseCases.RingAnswer, _ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) {
        if let owner = answer.backupOf {
            logger.notice(outcome == .snoozed ? "backup alarm snoozed" : "backup alarm stopped",
                          metadata: ["owner": "\(owner)", "alarm": "\(answer.ring.alarmID)", "by": "\(ender.rawValue)"])
        } else {
            logger.notice(outcome == .snoozed ? "alarm snoozed" : "alarm stopped", metadata: [
                "alarm": "\(answer.ring.alarmID)", "by": "\(ender.rawValue)",
                "until": "\(answer.ring.snoozeUntil.map { "\($0)" } ?? "-")",
            ])
        }
    }
}
