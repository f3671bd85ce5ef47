import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import Synchronization

/// What the agent learns of this machine's nights, for the battery forecast (#24): every suspend it sees
/// (the level at `PrepareForSleep(true)` against the level at resume, per hour asleep by the machine's own
/// count) and when it is awake in the evening. Kept in the store (`NightLearningRepository`) at every
/// suspend and resume and at most every 30 minutes of evening, so a restart keeps what was learned.
///
/// The sleep guard calls `willSleep` and `resumed`; the battery monitor calls `awake` at each reading;
/// every forecast of the agent takes `outlook()`.
public final class NightWatch: Sendable {
    struct State {
        var learning: NightLearning
        /// When the machine was last seen awake by this process (nil: not since start, or asleep since).
        var lastAwake: Date?
        /// The suspend offset when it was last seen awake: grown since, the machine slept in between.
        var lastAwakeOffset: Double = 0
        var lastSaved: Date?
        var pending: Pending?
        var conditions = NightConditions()
    }

    struct Pending {
        var at: Date
        var level: Double?
        var onAC: Bool
        var resolution: Double
        var suspendOffset: Double
    }

    /// Awake observations are saved at most this often (a suspend and a resume always are).
    static let saveInterval: TimeInterval = 30 * 60

    private let state: Mutex<State>
    private let save: @Sendable (NightLearning) throws -> Void
    private let battery: @Sendable () -> PowerState?
    private let suspendOffset: @Sendable () -> Double
    private let zone: @Sendable () -> TimeZone
    private let logger: Logger

    /// - Parameters:
    ///   - learning: what was learned before (from the store).
    ///   - battery: the system battery now (a fresh read: at suspend and resume the level must be the
    ///     machine's, not the last poll's).
    ///   - suspendOffset: `CLOCK_BOOTTIME − CLOCK_MONOTONIC` in seconds (it grows by each suspend's length).
    public init(learning: NightLearning, save: @escaping @Sendable (NightLearning) throws -> Void,
                battery: @escaping @Sendable () -> PowerState?,
                suspendOffset: @escaping @Sendable () -> Double = { SuspendDetector.offset() },
                zone: @escaping @Sendable () -> TimeZone = { SystemTimeZone.current }, logger: Logger) {
        var initial = State(learning: learning)
        initial.conditions = learning.conditions ?? NightConditions()
        initial.conditions.goingToSleep = false
        state = Mutex(initial)
        self.save = save
        self.battery = battery
        self.suspendOffset = suspendOffset
        self.zone = zone
        self.logger = logger
    }

    /// The night the forecasts assume now (`goingToSleep`: the re-check at `PrepareForSleep(true)`).
    public func outlook(goingToSleep: Bool = false) -> NightOutlook {
        let (learning, conditions) = state.withLock { ($0.learning, $0.conditions) }
        var now = conditions
        now.goingToSleep = goingToSleep
        return NightOutlook(learning: learning, conditions: now, timeZone: zone())
    }

    /// What was learned so far (the command line reads the stored copy).
    public var learning: NightLearning { state.withLock { $0.learning } }

    /// The sleep guard's and logind's facts: whether the machine can wake itself, what keeps it awake.
    public func update(conditions: NightConditions) {
        let changed = state.withLock { state -> NightLearning? in
            var new = conditions
            new.goingToSleep = false
            guard state.conditions != new else { return nil }
            state.conditions = new
            state.learning.conditions = new
            return state.learning
        }
        if let changed { store(changed) }
    }

    /// The sleep guard's finding alone (at start and whenever arming a wake-up fails).
    public func update(canWake: Bool) {
        var conditions = state.withLock { $0.conditions }
        conditions.canWake = canWake
        update(conditions: conditions)
    }

    /// The machine is awake at `now` (a battery reading, an event).
    public func awake(at now: Date) {
        let offset = suspendOffset()
        let toSave = state.withLock { state -> NightLearning? in
            // A suspend the sleep guard has not reported yet (a reading right after resume) breaks the stretch.
            let continuous = state.lastAwake != nil && offset - state.lastAwakeOffset < 5
            state.learning.habits.awake(at: now, since: continuous ? state.lastAwake : nil, in: zone())
            state.lastAwake = now
            state.lastAwakeOffset = offset
            if let saved = state.lastSaved, now.timeIntervalSince(saved) < Self.saveInterval, now >= saved { return nil }
            state.lastSaved = now
            return state.learning
        }
        if let toSave { store(toSave) }
    }

    /// `PrepareForSleep(true)`: the level before the machine sleeps.
    public func willSleep(at now: Date) {
        let power = battery()
        let toSave = state.withLock { state -> NightLearning in
            state.learning.habits.awake(at: now, since: state.lastAwake, in: zone())
            state.lastAwake = nil
            state.lastSaved = now
            state.pending = Pending(at: now, level: power?.fineLevel, onAC: power?.onAC ?? true,
                                    resolution: Self.resolution(power), suspendOffset: suspendOffset())
            return state.learning
        }
        store(toSave)
    }

    /// `PrepareForSleep(false)`: the level after, and what the suspend taught.
    @discardableResult
    public func resumed(at now: Date) -> SleepEpisodeVerdict? {
        let power = battery()
        let offset = suspendOffset()
        let result = state.withLock { state -> (NightLearning, SleepEpisodeVerdict?) in
            defer {
                state.pending = nil
                state.lastAwake = now
                state.lastAwakeOffset = offset
                state.lastSaved = now
            }
            guard let pending = state.pending else {
                state.learning.habits.awake(at: now, in: zone())
                return (state.learning, nil)
            }
            guard let before = pending.level, let after = power?.fineLevel else {
                state.learning.habits.awake(at: now, in: zone())
                return (state.learning, .ignored("the battery level was not known on both sides"))
            }
            let asleep = offset - pending.suspendOffset
            let episode = SleepEpisode(start: pending.at, end: now, asleepSeconds: asleep >= 0 ? asleep : nil,
                                       levelBefore: before, levelAfter: after, onACBefore: pending.onAC,
                                       onACAfter: power?.onAC ?? true, resolution: max(pending.resolution, Self.resolution(power)))
            let verdict = state.learning.slept(episode, in: zone())
            return (state.learning, verdict)
        }
        store(result.0)
        switch result.1 {
        case .learned(let rate)?:
            let estimate = result.0.sleepDrain.estimate
            logger.info("resumed: the battery drained \(rate.rounded(places: 2)) %/h asleep", metadata: [
                "asleepDrainPercentPerHour": "\(estimate.percentPerHour.rounded(places: 2))",
                "learnedFrom": "\(estimate.observations)",
            ])
        case .ignored(let why)?:
            logger.info("resumed: this suspend teaches nothing about the drain asleep (\(why))")
        case nil:
            break
        }
        return result.1
    }

    private func store(_ learning: NightLearning) {
        do { try save(learning) } catch {
            logger.error("cannot keep what was learned of this machine's nights", metadata: ["error": "\(error)"])
        }
    }

    /// A gauge that shows only whole percents (no energy figures) cannot show a smaller drop.
    static func resolution(_ power: PowerState?) -> Double {
        guard let power else { return 1 }
        return power.energyWh != nil && power.energyFullWh != nil ? 0.1 : 1
    }
}
