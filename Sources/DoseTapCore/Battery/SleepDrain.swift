import Foundation

/// One suspend of the machine as the agent saw it: the level before `PrepareForSleep(true)` and after
/// `PrepareForSleep(false)`, and how long the machine really slept.
public struct SleepEpisode: Sendable, Equatable, Codable {
    /// How the machine slept, when known (a trace's `power_state`; logind does not say).
    public enum Kind: String, Sendable, Equatable, Codable {
        case suspend
        case hibernate
        case unknown
    }

    public var start: Date
    public var end: Date
    /// The time spent asleep by the machine's own count (`CLOCK_BOOTTIME` − `CLOCK_MONOTONIC` grew by
    /// this much), immune to a wall-clock step during the sleep; nil when not measured (a trace).
    public var asleepSeconds: Double?
    public var levelBefore: Double
    public var levelAfter: Double
    public var onACBefore: Bool
    public var onACAfter: Bool
    /// The smallest step the gauge shows, in points: 1 for a battery that reports only `capacity`.
    public var resolution: Double
    public var kind: Kind

    public init(start: Date, end: Date, asleepSeconds: Double? = nil, levelBefore: Double, levelAfter: Double,
                onACBefore: Bool = false, onACAfter: Bool = false, resolution: Double = 0.1, kind: Kind = .unknown) {
        self.start = start
        self.end = end
        self.asleepSeconds = asleepSeconds
        self.levelBefore = levelBefore
        self.levelAfter = levelAfter
        self.onACBefore = onACBefore
        self.onACAfter = onACAfter
        self.resolution = resolution
        self.kind = kind
    }

    /// The hours asleep: the machine's own count when measured (a clock step during the sleep moves the
    /// wall clock, not this), else the wall-clock span.
    public var hoursAsleep: Double? {
        if let asleepSeconds, asleepSeconds.isFinite, asleepSeconds >= 0 { return asleepSeconds / 3600 }
        let wall = end.timeIntervalSince(start)
        return wall.isFinite && wall >= 0 ? wall / 3600 : nil
    }
}

/// What the learner made of one sleep.
public enum SleepEpisodeVerdict: Sendable, Equatable {
    /// Learned: this many %/h asleep.
    case learned(percentPerHour: Double)
    /// Not learned from, and why (one line, for the agent's log).
    case ignored(String)
}

/// A sleep drain learned from the machine's own suspends.
public struct SleepDrainObservation: Sendable, Equatable, Codable {
    public var at: Date
    public var hours: Double
    public var percentPerHour: Double

    public init(at: Date, hours: Double, percentPerHour: Double) {
        self.at = at
        self.hours = hours
        self.percentPerHour = percentPerHour
    }
}

/// The drain the forecast uses while the machine sleeps, and where it came from: a sleep of `h` hours
/// costs `fixed + percentPerHour × h` points (suspending and resuming cost a little whatever the length).
public struct SleepDrainEstimate: Sendable, Equatable {
    public var percentPerHour: Double
    /// Points every sleep costs whatever its length (0 for the prior).
    public var fixed: Double
    /// True once learned from this machine's own suspends; false: the stated prior.
    public var learned: Bool
    /// How many suspends it was learned from.
    public var observations: Int

    public init(percentPerHour: Double, fixed: Double = 0, learned: Bool, observations: Int) {
        self.percentPerHour = percentPerHour
        self.fixed = fixed
        self.learned = learned
        self.observations = observations
    }

    /// The points a sleep of `hours` costs.
    public func drop(hours: Double) -> Double {
        guard hours > 0 else { return 0 }
        return fixed + percentPerHour * hours
    }
}

/// The machine's drain while suspended, learned from every suspend the agent sees.
///
/// Rules (docs/alarms.md, "Awake and asleep"):
/// - a suspend feeds it only on battery on both sides, when it lasted at least `minimumSleep`, and when
///   its hours are known (the machine's own count of suspended time, so a clock step does not matter);
/// - no level change is not zero drain: a sleep that shows less than the gauge's resolution (a
///   hibernate, a power-off, a stuck gauge) teaches nothing; nor does a hibernate, nor a rise of the
///   level (a gauge that recalibrated, or a charger while asleep), nor a drop no suspended machine makes
///   (`implausible`: the gauge recalibrated downwards, or the machine was awake);
/// - until `minimumObservations` suspends are learned, the drain is the conservative `prior`;
/// - then it is a line through the recent sleeps, `fixed + rate × hours` (`estimate`): the short naps of
///   the day carry the fixed cost of suspending and resuming, which one rate per hour would spread over
///   a whole night.
public struct SleepDrainModel: Sendable, Equatable, Codable {
    /// What the forecast assumes before the machine has taught it anything: a few %/h, what the
    /// s2idle ("Modern Standby") laptops of design.md §3.1 drain asleep; a deep-sleep laptop drains a
    /// tenth of it.
    public static let prior = 3.0
    public static let minimumSleep: TimeInterval = 30 * 60
    public static let minimumObservations = 3
    /// Kept: the most recent observations (older ones describe an older battery).
    public static let kept = 40
    /// No suspended machine drains faster; a faster drop is a recalibration or a machine that was awake.
    public static let implausible = 30.0

    public internal(set) var observations: [SleepDrainObservation] = []

    public init(observations: [SleepDrainObservation] = []) {
        self.observations = Array(observations.suffix(Self.kept))
    }

    /// Learns from one suspend, or says why not.
    @discardableResult
    public mutating func learn(_ episode: SleepEpisode) -> SleepEpisodeVerdict {
        let verdict = Self.judge(episode)
        if case .learned(let rate) = verdict, let hours = episode.hoursAsleep {
            observations.append(SleepDrainObservation(at: episode.end, hours: hours, percentPerHour: rate))
            if observations.count > Self.kept { observations.removeFirst(observations.count - Self.kept) }
        }
        return verdict
    }

    static func judge(_ e: SleepEpisode) -> SleepEpisodeVerdict {
        guard e.levelBefore.isFinite, e.levelAfter.isFinite, (0...100).contains(e.levelBefore),
              (0...100).contains(e.levelAfter) else { return .ignored("the level before or after is not a percentage") }
        if e.onACBefore || e.onACAfter { return .ignored("on external power") }
        if e.kind == .hibernate { return .ignored("a hibernate draws nothing: it says nothing of a suspend") }
        guard let hours = e.hoursAsleep else { return .ignored("the clock went backwards and the time asleep is unknown") }
        if hours * 3600 < minimumSleep { return .ignored("shorter than \(Int(minimumSleep / 60)) minutes") }
        if hours > 24 * 14 { return .ignored("longer than two weeks") }
        let resolution = e.resolution.isFinite && e.resolution > 0 ? e.resolution : 1
        let drop = e.levelBefore - e.levelAfter
        if drop < -max(1, resolution) { return .ignored("the level rose (the gauge recalibrated, or a charger)") }
        if drop < resolution { return .ignored("no level change (a hibernate, a power-off or a stuck gauge is not zero drain)") }
        let rate = drop / hours
        if rate > implausible { return .ignored("a drop no suspended machine makes (\(Int(rate)) %/h)") }
        return .learned(percentPerHour: rate)
    }

    /// The drain asleep: learned, or the prior.
    ///
    /// Learned: a line `drop = fixed + rate × hours` through the recent sleeps, fitted robustly (Theil–Sen:
    /// the median of the slopes between every two sleeps of different lengths; the fixed part the median of
    /// what is left), neither part below 0. A night is a long sleep and a nap a short one: the line serves
    /// both, where one rate per hour overstates a night by the cost of a nap's suspend and resume. Caution
    /// then adds the upper quartile of the misses the line makes on the sleeps it learned from, when above
    /// the line, so three sleeps in four cost no more than the forecast says.
    public var estimate: SleepDrainEstimate {
        guard observations.count >= Self.minimumObservations else {
            return SleepDrainEstimate(percentPerHour: Self.prior, learned: false, observations: observations.count)
        }
        let points = observations.map { (h: $0.hours, drop: $0.percentPerHour * $0.hours) }
        var slopes: [Double] = []
        for i in points.indices {
            for j in points.indices where j > i {
                let dh = points[j].h - points[i].h
                if abs(dh) >= 0.25 { slopes.append((points[j].drop - points[i].drop) / dh) }
            }
        }
        let rate = slopes.isEmpty ? Self.median(points.map { $0.drop / $0.h }) : max(0, Self.median(slopes))
        let fixed = max(0, Self.median(points.map { $0.drop - rate * $0.h }))
        let misses = points.map { $0.drop - (fixed + rate * $0.h) }
        let margin = max(0, Self.upperQuartile(misses))
        return SleepDrainEstimate(percentPerHour: rate, fixed: fixed + margin, learned: true, observations: observations.count)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// The 75th percentile, interpolated between ranks.
    static func upperQuartile(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard sorted.count > 1 else { return sorted.first ?? prior }
        let position = 0.75 * Double(sorted.count - 1)
        let low = Int(position.rounded(.down))
        let high = min(low + 1, sorted.count - 1)
        let fraction = position - Double(low)
        return sorted[low] + (sorted[high] - sorted[low]) * fraction
    }
}
