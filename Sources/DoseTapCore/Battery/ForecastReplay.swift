import Foundation

/// Replays a real machine's battery log as the agent would have lived it — readings, suspends and
/// resumes, what it learned carried from night to night, nothing from the future — and scores forecasts
/// made at bedtime against the level the machine really had (`prediction-accuracy`, docs/performance.md).
///
/// The nights it scores:
/// - *sleep nights*: the last reading before a sleep of at least 4 h that starts between 20:00 and 03:00
///   local time, while discharging; the target is the first reading after it;
/// - *awake nights*: the first reading at 22:00–23:00 local of a discharge that goes on awake (no gap over
///   30 min, no charger) for at least 4 h; the target is the last reading of that stretch, at most 9 h on.
///
/// The methods, each forecasting the target's instant as if an alarm were set for it:
/// - `awake-drain`: today's agent before this model: the drain of the last 45 minutes awake, all night;
/// - `upower`: UPower's time to empty, from the rate of the last minutes (`upower -i`), extrapolated;
/// - `dosetap`: the night model (`NightOutlook`): at a sleep night the agent's word at `PrepareForSleep(true)`,
///   at an awake night its word at that evening reading.
public struct ForecastReplay: Sendable {
    public enum Method: String, Sendable, CaseIterable, Codable {
        case awakeDrain = "awake-drain"
        case upower
        case dosetap
    }

    public enum NightKind: String, Sendable, Codable {
        case sleep
        case awake
    }

    /// One forecast of one night by one method.
    public struct Outcome: Sendable, Equatable {
        public var method: Method
        public var kind: NightKind
        public var at: Date
        public var target: Date
        public var actual: Double
        public var predicted: Int
        public var risk: BatteryRisk
        public var assumption: ForecastAssumption?
    }

    /// The scores of one method (and one kind of night, or both).
    public struct Score: Sendable, Equatable, Codable {
        public var cases = 0
        public var sleepCases = 0
        public var awakeCases = 0
        public var mae = 0.0
        public var falseCritical = 0
        public var falseNudge = 0
        public var missedRisk = 0
        public var missedCritical = 0

        public init() {}

        public init(_ outcomes: [Outcome]) {
            cases = outcomes.count
            sleepCases = outcomes.filter { $0.kind == .sleep }.count
            awakeCases = outcomes.filter { $0.kind == .awake }.count
            mae = outcomes.isEmpty ? 0 : outcomes.map { abs(Double($0.predicted) - $0.actual) }.reduce(0, +) / Double(outcomes.count)
            falseCritical = outcomes.filter { $0.risk == .critical && $0.actual > 5 }.count
            falseNudge = outcomes.filter { $0.risk != .safe && $0.actual > 20 }.count
            missedRisk = outcomes.filter { $0.risk == .safe && $0.actual <= 20 }.count
            missedCritical = outcomes.filter { $0.risk != .critical && $0.actual <= 5 }.count
        }
    }

    public static let minimumSleep: TimeInterval = 4 * 3600
    public static let maximumAwakeGap: TimeInterval = 30 * 60
    public static let minimumAwake: TimeInterval = 4 * 3600
    public static let maximumHorizon: TimeInterval = 9 * 3600

    public var powerOff: PowerOffPolicy

    public init(powerOff: PowerOffPolicy = .upowerDefault) {
        self.powerOff = powerOff
    }

    /// Every scored forecast of the trace, in time order. `learning` is what the machine had already
    /// taught (from an earlier trace of the same machine); the replay's own learning is returned.
    public func replay(_ trace: BatteryTrace, learning start: NightLearning = .init()) -> (outcomes: [Outcome], learning: NightLearning) {
        let zone = trace.timeZone
        let rows = trace.readings.filter { $0.state != .unknown }
        var learning = start
        var awake = DrainEstimator()
        var upower = DrainEstimator(configuration: .init(window: 10 * 60, minimumSpan: 5 * 60))
        var outcomes: [Outcome] = []
        let awakeStarts = Self.awakeNightStarts(rows, zone: zone)
        var previous: BatteryTrace.Reading?
        for (index, row) in rows.enumerated() {
            // Did the machine sleep between the previous reading and this one?
            if let before = previous {
                if let kind = Self.sleepKind(before: before, next: row, hasPowerState: trace.hasPowerState) {
                    let isNight = Self.isSleepNight(before, next: row, zone: zone)
                    if isNight, before.state == .discharging {
                        // The agent's last word before the night, at PrepareForSleep(true).
                        let state = Self.state(before)
                        let asleep = learning.sleepDrainOutlook(zone: zone, goingToSleep: true, powerOff: powerOff)
                        outcomes += score(state: state, awake: awake, upower: upower, night: asleep, at: before.at,
                                          target: row, kind: .sleep)
                    }
                    let episode = SleepEpisode(start: before.at, end: row.at, levelBefore: before.level, levelAfter: row.level,
                                               onACBefore: before.state != .discharging, onACAfter: row.state != .discharging,
                                               resolution: Self.resolution(before.level, row.level),
                                               kind: kind)
                    learning.slept(episode, in: zone)
                    // The agent restarts its drain history after a resume.
                    awake.reset()
                    upower.reset()
                } else {
                    learning.habits.awake(at: row.at, since: before.at, in: zone)
                }
            } else {
                learning.habits.awake(at: row.at, in: zone)
            }
            let sample = BatterySample(at: row.at, level: row.level, onAC: row.state != .discharging, status: row.state)
            awake.record(sample)
            upower.record(sample)
            if let target = awakeStarts[index] {
                let evening = learning.sleepDrainOutlook(zone: zone, goingToSleep: false, powerOff: powerOff)
                outcomes += score(state: Self.state(row), awake: awake, upower: upower, night: evening, at: row.at,
                                  target: rows[target], kind: .awake)
            }
            previous = row
        }
        return (outcomes, learning)
    }

    private func score(state: PowerState, awake: DrainEstimator, upower: DrainEstimator, night: NightOutlook,
                       at now: Date, target: BatteryTrace.Reading, kind: NightKind) -> [Outcome] {
        var result: [Outcome] = []
        let forecasts: [(Method, BatteryForecast)] = [
            (.awakeDrain, BatteryForecast.make(state: state, drain: awake.estimate(for: state), at: target.at, now: now,
                                               powerOff: powerOff)),
            (.upower, BatteryForecast.make(state: state, drain: upower.estimate(for: state), at: target.at, now: now,
                                           powerOff: powerOff)),
            (.dosetap, BatteryForecast.make(state: state, drain: awake.estimate(for: state), at: target.at, now: now,
                                            powerOff: powerOff, night: night)),
        ]
        for (method, forecast) in forecasts {
            guard let risk = forecast.risk, let predicted = forecast.predictedLevel else { continue }
            result.append(Outcome(method: method, kind: kind, at: now, target: target.at, actual: target.level,
                                  predicted: predicted, risk: risk, assumption: forecast.assumption?.kind))
        }
        return result
    }

    /// The scores per method, and per method and kind of night.
    public static func scores(_ outcomes: [Outcome]) -> [Method: (all: Score, sleep: Score, awake: Score)] {
        var result: [Method: (all: Score, sleep: Score, awake: Score)] = [:]
        for method in Method.allCases {
            let mine = outcomes.filter { $0.method == method }
            result[method] = (Score(mine), Score(mine.filter { $0.kind == .sleep }), Score(mine.filter { $0.kind == .awake }))
        }
        return result
    }

    static func state(_ row: BatteryTrace.Reading) -> PowerState {
        // A battery of 100 Wh whose energy is the level: the level keeps its decimals (capacity would not).
        let energy = String(Int((row.level * 1_000_000).rounded()))
        return PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
            "type": "Battery", "present": "1", "status": row.state == .discharging ? "Discharging" : row.state == .charging ? "Charging" : "Full",
            "energy_now": energy, "energy_full": "100000000",
        ])])
    }

    /// A gauge that shows whole percents (a capacity-only battery) cannot show a smaller drop.
    static func resolution(_ a: Double, _ b: Double) -> Double {
        a == a.rounded() && b == b.rounded() ? 1 : 0.1
    }

    static func localHour(_ date: Date, zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.component(.hour, from: date)
    }

    static func isSleepNight(_ before: BatteryTrace.Reading, next: BatteryTrace.Reading, zone: TimeZone) -> Bool {
        guard next.at.timeIntervalSince(before.at) >= minimumSleep else { return false }
        let hour = localHour(before.at, zone: zone)
        return hour >= 20 || hour < 3
    }

    /// For each row that starts an awake night, the index of its target.
    static func awakeNightStarts(_ rows: [BatteryTrace.Reading], zone: TimeZone) -> [Int: Int] {
        var starts: [Int: Int] = [:]
        var usedNights = Set<String>()
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var index = 0
        while index < rows.count {
            let row = rows[index]
            guard row.state == .discharging, calendar.component(.hour, from: row.at) == 22 else {
                index += 1
                continue
            }
            let day = calendar.dateComponents([.year, .month, .day], from: row.at)
            let name = "\(day.year ?? 0)-\(day.month ?? 0)-\(day.day ?? 0)"
            if usedNights.contains(name) {
                index += 1
                continue
            }
            // The stretch: discharging, awake (no gap over 30 min, no sleep in the log), from this row.
            var end = index
            while end + 1 < rows.count, rows[end + 1].state == .discharging,
                  rows[end + 1].at.timeIntervalSince(rows[end].at) <= maximumAwakeGap,
                  rows[end].sleepsAfter == nil {
                end += 1
            }
            if rows[end].at.timeIntervalSince(row.at) >= minimumAwake {
                var target = end
                while rows[target].at.timeIntervalSince(row.at) > maximumHorizon { target -= 1 }
                starts[index] = target
                usedNights.insert(name)
                index += 1
            } else {
                // This reading's stretch is too short; a later one of the same hour may still qualify.
                index += 1
            }
        }
        return starts
    }
}

extension NightLearning {
    /// The outlook of the replay (and of a machine with no logind facts): it can wake for the alarm.
    func sleepDrainOutlook(zone: TimeZone, goingToSleep: Bool, powerOff: PowerOffPolicy) -> NightOutlook {
        NightOutlook(learning: self, conditions: NightConditions(canWake: true, goingToSleep: goingToSleep), timeZone: zone)
    }
}
