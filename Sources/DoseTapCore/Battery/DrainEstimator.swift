import Foundation

/// One observation of the system battery, as stored in the drain history.
public struct BatterySample: Sendable, Equatable, Codable {
    public var at: Date
    /// 0…100.
    public var level: Double
    public var energyWh: Double?
    public var energyFullWh: Double?
    public var rateW: Double?
    public var onAC: Bool
    public var status: SupplyStatus

    public init(at: Date, level: Double, energyWh: Double? = nil, energyFullWh: Double? = nil,
                rateW: Double? = nil, onAC: Bool, status: SupplyStatus) {
        self.at = at
        self.level = level
        self.energyWh = energyWh
        self.energyFullWh = energyFullWh
        self.rateW = rateW
        self.onAC = onAC
        self.status = status
    }

    /// The finest level the sample offers: energy ÷ full when known (sub-percent), else `level`.
    var fineLevel: Double {
        if let e = energyWh, let f = energyFullWh, f > 0 { return min(100, max(0, e / f * 100)) }
        return level
    }
}

/// Where a drain figure came from.
public enum DrainSource: String, Sendable, Equatable, Codable {
    /// The battery's own rate (`power_now`, or `current_now` × voltage).
    case hardware
    /// Fitted from the recorded history of energy (or of `capacity` on capacity-only batteries).
    case history
    /// Not known yet: no sane hardware rate and not enough history.
    case unknown
}

public struct DrainEstimate: Sendable, Equatable {
    /// %/h of full capacity, ≥ 0; nil when unknown.
    public var percentPerHour: Double?
    public var source: DrainSource

    public init(percentPerHour: Double?, source: DrainSource) {
        self.percentPerHour = percentPerHour
        self.source = source
    }

    public static let unknown = DrainEstimate(percentPerHour: nil, source: .unknown)
}

/// Estimates how fast the system battery drains, in %/h.
///
/// The hardware rate wins when it is sane (0.1–300 W). Otherwise the drain is the least-squares slope
/// of the level over the recent history. The history restarts whenever it stops describing one
/// continuous discharge: external power plugged or unplugged, a resume from suspend (a gap between
/// samples, or an explicit `reset()` from the agent's suspend detector), or the clock going backwards.
public struct DrainEstimator: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Only samples this recent are fitted, so a change of load shows within the window.
        public var window: TimeInterval
        /// The history must span at least this long before it gives a figure.
        public var minimumSpan: TimeInterval
        /// A longer gap between two samples means the machine slept or the agent was not running.
        public var maximumGap: TimeInterval

        /// Hardware rates within this many seconds are smoothed together (median).
        public var hardwareSmoothing: TimeInterval

        public init(window: TimeInterval = 45 * 60, minimumSpan: TimeInterval = 20 * 60,
                    maximumGap: TimeInterval = 10 * 60, hardwareSmoothing: TimeInterval = 5 * 60) {
            self.window = window
            self.minimumSpan = minimumSpan
            self.maximumGap = maximumGap
            self.hardwareSmoothing = hardwareSmoothing
        }
    }

    public var configuration: Configuration
    /// Samples of the current continuous discharge, oldest first, trimmed to the window.
    public private(set) var history: [BatterySample] = []

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Builds an estimator from stored samples (any order; duplicates tolerated).
    public init(samples: [BatterySample], configuration: Configuration = Configuration()) {
        self.init(configuration: configuration)
        for s in samples.sorted(by: { $0.at < $1.at }) { record(s) }
    }

    public mutating func record(_ sample: BatterySample) {
        guard sample.level.isFinite, (0...100).contains(sample.level) else { return }
        if let last = history.last {
            let gap = sample.at.timeIntervalSince(last.at)
            if gap < 0 || gap > configuration.maximumGap || last.onAC != sample.onAC {
                history.removeAll()
            } else if gap == 0 {
                history[history.count - 1] = sample
                return
            }
        }
        history.append(sample)
        let horizon = sample.at.addingTimeInterval(-configuration.window)
        if let firstKept = history.firstIndex(where: { $0.at >= horizon }), firstKept > 0 {
            history.removeFirst(firstKept)
        }
    }

    /// Forget the history (after a resume from suspend, or an AC change seen elsewhere).
    public mutating func reset() {
        history.removeAll()
    }

    /// The drain fitted from history, or nil when the history is too short or on external power.
    public var historyDrainPercentPerHour: Double? {
        guard history.count >= 3, let first = history.first, let last = history.last,
              !last.onAC, last.at.timeIntervalSince(first.at) >= configuration.minimumSpan else { return nil }
        let t0 = first.at.timeIntervalSinceReferenceDate
        let xs = history.map { ($0.at.timeIntervalSinceReferenceDate - t0) / 3600 }
        let ys = history.map(\.fineLevel)
        let n = Double(xs.count)
        let meanX = xs.reduce(0, +) / n
        let meanY = ys.reduce(0, +) / n
        var sxx = 0.0, sxy = 0.0
        for (x, y) in zip(xs, ys) {
            sxx += (x - meanX) * (x - meanX)
            sxy += (x - meanX) * (y - meanY)
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        return max(0, -slope)
    }

    /// The best drain figure for the state now: hardware when sane, else history, else unknown.
    ///
    /// The hardware figure is the median of the sane rates seen in the last `hardwareSmoothing` seconds of
    /// history and now: `power_now` jumps with every burst of load, and one spike must not raise an alarm.
    public func estimate(for state: PowerState) -> DrainEstimate {
        if let instant = state.hardwareDrainPercentPerHour, let rate = state.rateW, let full = state.energyFullWh {
            var rates = [rate]
            if let last = history.last {
                let horizon = last.at.addingTimeInterval(-configuration.hardwareSmoothing)
                rates += history.reversed().prefix { $0.at >= horizon }
                    .compactMap(\.rateW).filter { PowerState.saneRateW.contains($0) }
            }
            guard rates.count > 1 else { return DrainEstimate(percentPerHour: instant, source: .hardware) }
            rates.sort()
            let mid = rates.count / 2
            let median = rates.count % 2 == 1 ? rates[mid] : (rates[mid - 1] + rates[mid]) / 2
            return DrainEstimate(percentPerHour: median / full * 100, source: .hardware)
        }
        if state.present, !state.onAC, let fitted = historyDrainPercentPerHour {
            return DrainEstimate(percentPerHour: fitted, source: .history)
        }
        return .unknown
    }
}
