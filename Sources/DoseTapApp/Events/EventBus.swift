import DoseTapCore
import Foundation
import Synchronization

/// What happened, once, for every subscriber: feedback, the scheduler, and later MQTT, the dashboard and
/// the status-bar glance. A new output is a new subscriber, never a new closure threaded through
/// initialisers.
public enum AgentEvent: Sendable, Equatable {
    /// A dose input was recorded; `nudge` is the battery-at-reminder warning of a Dose 1 on battery.
    case doseRecorded(DoseEvent, confirmation: String, status: NightStatus, nudge: Nudge?)
    case doseRefused(DoseRefusal, source: InputSource)
    case reminderDue(Reminder)
    /// The battery monitor evaluated a reading (a udev change or a poll while discharging): the battery
    /// now, its drain and power-off level. The overnight re-check (`AlarmRiskMonitor`) follows these.
    case batteryReading(BatteryStatus, at: Date)
    case buttonPressed(address: String, gesture: String)
    case buttonBattery(name: String, level: Double)
    case settingsChanged
    /// config.toml was read again (SIGHUP) and accepted.
    case configurationReloaded
    /// An alarm started ringing (or rings again after a restart of the agent).
    case alarmRinging(AlarmRing, Alarm)
    /// A ring ended: stopped, snoozed or missed (by whom is in the ring).
    case alarmEnded(AlarmRing)
    /// An occurrence was missed without ringing (the machine was off or asleep past the late limit).
    case alarmMissed(AlarmRing, Alarm?)
    /// A household member's alarm rings here as its backup (#12): its ring (a negative id, never one of ours)
    /// and its alarm as the owner planned it.
    case backupAlarmRinging(AlarmRing, Alarm, owner: String)
    /// That backup ring ended: stopped or snoozed (here or by the household), or unanswered for ten minutes.
    case backupAlarmEnded(AlarmRing, owner: String)
    /// The agent can no longer write its data, for this cause, or can again (nil) (#51, `StoreHealth`): every face
    /// that shows the sentence looks again.
    case storeHealthChanged(StoreProblem?)
}

/// A typed broadcaster: every subscriber gets every event published after it subscribed, in order,
/// through its own bounded buffer. A slow subscriber never blocks the publisher or the others: when its
/// buffer is full it loses its oldest events (counted in `dropped`), never the newest.
public final class EventBus: Sendable {
    public static let defaultBuffer = 256

    private struct Subscriber {
        var continuation: AsyncStream<AgentEvent>.Continuation
    }

    private struct State {
        var subscribers: [UUID: Subscriber] = [:]
        var dropped = 0
        var finished = false
    }

    private let state = Mutex(State())

    public init() {}

    /// A bus that goes away ends its subscriptions (nobody can publish on it any more).
    deinit { finish() }

    /// A stream of what happens from now on; it ends when the bus finishes or the consumer stops.
    public func subscribe(buffer: Int = EventBus.defaultBuffer) -> AsyncStream<AgentEvent> {
        let (stream, continuation) = AsyncStream<AgentEvent>.makeStream(bufferingPolicy: .bufferingNewest(max(1, buffer)))
        let id = UUID()
        let finished = state.withLock { s -> Bool in
            guard !s.finished else { return true }
            s.subscribers[id] = Subscriber(continuation: continuation)
            return false
        }
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    public func publish(_ event: AgentEvent) {
        let continuations = state.withLock { $0.subscribers.values.map(\.continuation) }
        var lost = 0
        for continuation in continuations {
            if case .dropped = continuation.yield(event) { lost += 1 }
        }
        if lost > 0 { state.withLock { $0.dropped += lost } }
    }

    /// Ends every subscription (shutdown).
    public func finish() {
        let continuations = state.withLock { s -> [AsyncStream<AgentEvent>.Continuation] in
            s.finished = true
            defer { s.subscribers.removeAll() }
            return s.subscribers.values.map(\.continuation)
        }
        for continuation in continuations { continuation.finish() }
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    /// Events lost by slow subscribers, in all.
    public var dropped: Int { state.withLock { $0.dropped } }
}
