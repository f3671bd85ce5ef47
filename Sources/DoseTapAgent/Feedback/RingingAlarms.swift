import DoseTapCore
import Foundation

/// Every alarm that can ring here — this machine's own (`AlarmService`) and the household's backup alarms
/// (`HouseholdService`) — answered as one by the buttons and the notifications.
public struct RingingAlarms: RingingAlarmControl {
    private let controls: [any RingingAlarmControl]

    public init(_ controls: [any RingingAlarmControl]) {
        self.controls = controls
    }

    public func claimsButtons(at now: Date) -> Bool { controls.contains { $0.claimsButtons(at: now) } }
    public var isRinging: Bool { controls.contains { $0.isRinging } }

    @discardableResult
    public func stop(by ender: AlarmRingEnder) -> Bool {
        controls.filter(\.isRinging).map { $0.stop(by: ender) }.contains(true)
    }

    @discardableResult
    public func snooze(by ender: AlarmRingEnder) -> Bool {
        controls.filter(\.isRinging).map { $0.snooze(by: ender) }.contains(true)
    }
}
