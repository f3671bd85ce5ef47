import Foundation

/// What the person experiences (#52): the nudge as the agent would have shown it in the evening, not only the
/// forecast at the suspend. Replays a trace like `ForecastReplay.replay` (readings, suspends and resumes, nothing
/// from the future) and, for each night it scores, asks each method whether it would have nudged, for an alarm
/// set at the night's target reading:
/// - `bedtime` (sleep nights): the forecast and the nudge decision made `bedtimeLeads` minutes before the suspend,
///   from the last reading at or before that instant, only when the machine was awake and discharging from that
///   reading to the suspend (the last reading before the sleep stands for the suspend);
/// - `evening` (sleep and awake nights): every reading from 18:00 local — or the last resume or unplug after it —
///   until the suspend (or the awake night's target), the method's nudge logic run at each; for `dosetap` also
///   the timer at `deadline − margin` when it falls before the next reading, and the re-check at the suspend
///   (`PrepareForSleep(true)`). The night is *nudged* when any nudge would have played.
///
/// Each with `lived` learning (carried from the earlier nights of the trace) and `fresh` (nothing learned before
/// each night: a new install, every night). The awake drain is the live one either way: it is measured in the
/// evening itself, not learned.
///
/// The methods' nudge logic: `awake-drain` and `upower` nudge when their forecast (awake until the alarm) is not
/// safe — the agent before #24, and UPower's time to empty; `night-model` is the agent of #24 (the night model's
/// forecast with the evening's guess of when it sleeps, nudged when not safe, and its re-check at the suspend);
/// `dosetap` decides by the deadline (`NudgeDecision`), with the re-check at the suspend.
/// The level a method shows (`shown`, scored at bedtime): its forecast's; for `dosetap` the decision's
/// prediction — the nudge's when nudged, else the forecast asleep from now that the silence rests on.
extension ForecastReplay {
    public enum Learning: String, Sendable, CaseIterable, Codable {
        case lived
        case fresh
    }

    /// The nudge logics compared: `ForecastReplay.Method`'s three, and the agent of #24 (`night-model`).
    public enum NudgeMethod: String, Sendable, CaseIterable, Codable {
        case awakeDrain = "awake-drain"
        case upower
        case nightModel = "night-model"
        case dosetap
    }

    public enum Scenario: Sendable, Hashable {
        case evening(Learning)
        case bedtime(minutes: Int, Learning)
    }

    /// Minutes before the suspend at which `bedtime` decides.
    public static let bedtimeLeads = [30, 60, 120]

    /// One method's decision over one night in one scenario.
    public struct NightNudge: Sendable, Equatable {
        public var method: NudgeMethod
        public var scenario: Scenario
        public var kind: NightKind
        /// The moment decided at (bedtime), or the evening's last reading.
        public var at: Date
        public var target: Date
        public var actual: Double
        public var nudged: Bool
        /// A nudge came while the level was still above 20 % (what counts on an awake night).
        public var nudgedBeforeLow: Bool
        /// The level forecast shown (bedtime), when the method could make one.
        public var shown: Int?
        /// `dosetap`: why it decided so at the last moment that decided (`NudgeDecision.Why`).
        public var why: String?
    }

    /// The scores of one method in one scenario (`prediction-accuracy --json`: "evening" and "bedtime").
    public struct NightScore: Sendable, Equatable, Codable {
        public var nights = 0
        public var nudgedNights = 0
        /// Nudged, and the level at the target was above 20 %.
        public var falseNudgeNights = 0
        /// Not nudged (on an awake night: not before the level reached 20 %), and the level at the target was 20 % or below.
        public var missedNights = 0
        /// Of the level shown, when scored (bedtime) and some night was.
        public var mae: Double?

        public init() {}

        public init(_ nights: [NightNudge], withMAE: Bool) {
            self.nights = nights.count
            nudgedNights = nights.filter(\.nudged).count
            falseNudgeNights = nights.filter { $0.nudged && $0.actual > Double(RiskPredictor.warningCeiling) }.count
            missedNights = nights.filter {
                $0.actual <= Double(RiskPredictor.warningCeiling) && !($0.kind == .awake ? $0.nudgedBeforeLow : $0.nudged)
            }.count
            if withMAE {
                let shown = nights.compactMap { n in n.shown.map { abs(Double($0) - n.actual) } }
                mae = shown.isEmpty ? nil : shown.reduce(0, +) / Double(shown.count)
            }
        }
    }

    /// One awake, discharging reading of the current stretch, with what each method's drain estimator said then.
    struct StretchEntry {
        var row: BatteryTrace.Reading
        var state: PowerState
        var awake: DrainEstimate
        var upower: DrainEstimate
    }

    /// Every night's decisions of the trace, per method and scenario.
    public func replayEvenings(_ trace: BatteryTrace, learning start: NightLearning = .init()) -> [NightNudge] {
        let zone = trace.timeZone
        let rows = trace.readings.filter { $0.state != .unknown }
        var learning = start
        var awake = DrainEstimator()
        var upower = DrainEstimator(configuration: .init(window: 10 * 60, minimumSpan: 5 * 60))
        var stretch: [StretchEntry] = []
        var result: [NightNudge] = []
        var awakeTargets: [Int: Int] = [:]
        for (start, target) in Self.awakeNightStarts(rows, zone: zone) { awakeTargets[target] = start }
        var previous: BatteryTrace.Reading?
        for (index, row) in rows.enumerated() {
            if let before = previous {
                if let kind = Self.sleepKind(before: before, next: row, hasPowerState: trace.hasPowerState) {
                    if Self.isSleepNight(before, next: row, zone: zone), before.state == .discharging, !stretch.isEmpty {
                        result += nightNudges(stretch, suspend: before.at, target: row, kind: .sleep, learning: learning, zone: zone)
                    }
                    let episode = SleepEpisode(start: before.at, end: row.at, levelBefore: before.level, levelAfter: row.level,
                                               onACBefore: before.state != .discharging, onACAfter: row.state != .discharging,
                                               resolution: Self.resolution(before.level, row.level), kind: kind)
                    learning.slept(episode, in: zone)
                    awake.reset()
                    upower.reset()
                    stretch.removeAll()
                } else {
                    learning.habits.awake(at: row.at, since: before.at, in: zone)
                }
            } else {
                learning.habits.awake(at: row.at, in: zone)
            }
            let sample = BatterySample(at: row.at, level: row.level, onAC: row.state != .discharging, status: row.state)
            awake.record(sample)
            upower.record(sample)
            if row.state == .discharging {
                let state = Self.state(row)
                stretch.append(StretchEntry(row: row, state: state, awake: awake.estimate(for: state), upower: upower.estimate(for: state)))
            } else {
                // On external power: the next discharge starts at the unplug.
                stretch.removeAll()
            }
            if awakeTargets[index] != nil, !stretch.isEmpty {
                result += nightNudges(stretch, suspend: nil, target: row, kind: .awake, learning: learning, zone: zone)
            }
            previous = row
        }
        return result
    }

    /// Did the machine sleep between two readings (the trace's `power_state`, or a gap over 30 minutes)?
    static func sleepKind(before: BatteryTrace.Reading, next: BatteryTrace.Reading, hasPowerState: Bool) -> SleepEpisode.Kind? {
        before.sleepsAfter ?? (hasPowerState ? nil : (next.at.timeIntervalSince(before.at) > maximumAwakeGap ? .unknown : nil))
    }

    /// The decisions of one night: `stretch` is the awake discharge up to the suspend (or the awake night's target).
    private func nightNudges(_ stretch: [StretchEntry], suspend: Date?, target: BatteryTrace.Reading, kind: NightKind,
                             learning lived: NightLearning, zone: TimeZone) -> [NightNudge] {
        var result: [NightNudge] = []
        let end = suspend ?? target.at
        let evening = SleepHabits.nightStart(containing: end, in: zone).start
        let eveningEntries = stretch.filter { $0.row.at >= evening && $0.row.at <= end }
        for learning in Learning.allCases {
            let known = learning == .lived ? lived : NightLearning()
            let asleep = known.sleepDrain.estimate
            for method in NudgeMethod.allCases {
                func decide(_ entry: StretchEntry, goingToSleep: Bool = false) -> (nudge: Bool, shown: Int?, why: String?, deadline: Date?) {
                    switch method {
                    case .awakeDrain, .upower:
                        let forecast = BatteryForecast.make(state: entry.state, drain: method == .upower ? entry.upower : entry.awake,
                                                            at: target.at, now: entry.row.at, powerOff: powerOff)
                        return (forecast.nudge != nil, forecast.predictedLevel, nil, nil)
                    case .nightModel:
                        let outlook = NightOutlook(learning: known, conditions: NightConditions(canWake: true, goingToSleep: goingToSleep),
                                                   timeZone: zone)
                        let forecast = BatteryForecast.make(state: entry.state, drain: entry.awake, at: target.at, now: entry.row.at,
                                                            powerOff: powerOff, night: outlook)
                        return (forecast.nudge != nil, forecast.predictedLevel, forecast.assumption?.kind.rawValue, nil)
                    case .dosetap:
                        let deadline = AlarmDeadline.make(level: entry.state.level, onAC: entry.state.onAC,
                                                          awakeDrain: entry.awake.percentPerHour, asleep: asleep,
                                                          powerOff: powerOff, alarm: target.at, now: entry.row.at)
                        let decision = NudgeDecision.decide(deadline, now: entry.row.at,
                                                            conditions: NightConditions(canWake: true, goingToSleep: goingToSleep),
                                                            habits: known.habits, powerOff: powerOff)
                        return (decision.nudge != nil, decision.prediction?.predictedLevel, decision.why.rawValue,
                                decision.nudge == nil ? deadline.deadline : nil)
                    }
                }
                // Evening: every reading, the timer at the deadline less the margin, the re-check at the suspend.
                var nudged = false
                var beforeLow = false
                var why: String?
                var low = false
                for (i, entry) in eveningEntries.enumerated() {
                    if entry.row.level <= Double(RiskPredictor.warningCeiling) { low = true }
                    var said = decide(entry)
                    if !said.nudge, let deadline = said.deadline, i + 1 < eveningEntries.count,
                       deadline.addingTimeInterval(-NudgeDecision.margin) < eveningEntries[i + 1].row.at {
                        // The agent's timer at deadline − margin fires before the next reading.
                        said.nudge = true
                        said.why = NudgeDecision.Why.deadlineNear.rawValue
                    }
                    if said.nudge {
                        nudged = true
                        if !low { beforeLow = true }
                    }
                    why = said.why ?? why
                }
                if method == .dosetap || method == .nightModel, suspend != nil, let last = eveningEntries.last {
                    let said = decide(last, goingToSleep: true)
                    if said.nudge {
                        nudged = true
                        if !low { beforeLow = true }
                    }
                    why = said.why ?? why
                }
                if let last = eveningEntries.last {
                    result.append(NightNudge(method: method, scenario: .evening(learning), kind: kind, at: last.row.at, target: target.at,
                                             actual: target.level, nudged: nudged, nudgedBeforeLow: beforeLow, shown: nil, why: why))
                }
                // Bedtime: the last reading at or before the suspend less the lead, awake and discharging since.
                guard let suspend else { continue }
                for lead in Self.bedtimeLeads {
                    let instant = suspend.addingTimeInterval(-Double(lead) * 60)
                    guard let entry = stretch.last(where: { $0.row.at <= instant }) else { continue }
                    let said = decide(entry)
                    if method != .dosetap && said.shown == nil { continue } // cannot forecast yet: not scored, as today
                    result.append(NightNudge(method: method, scenario: .bedtime(minutes: lead, learning), kind: kind, at: entry.row.at,
                                             target: target.at, actual: target.level, nudged: said.nudge, nudgedBeforeLow: said.nudge,
                                             shown: said.shown, why: said.why))
                }
            }
        }
        return result
    }

    /// The scores per method and scenario.
    public static func nightScores(_ nights: [NightNudge]) -> [NudgeMethod: [Scenario: NightScore]] {
        var result: [NudgeMethod: [Scenario: NightScore]] = [:]
        for method in NudgeMethod.allCases {
            var mine: [Scenario: NightScore] = [:]
            for learning in Learning.allCases {
                let evening = nights.filter { $0.method == method && $0.scenario == .evening(learning) }
                mine[.evening(learning)] = NightScore(evening, withMAE: false)
                for lead in bedtimeLeads {
                    let bedtime = nights.filter { $0.method == method && $0.scenario == .bedtime(minutes: lead, learning) }
                    mine[.bedtime(minutes: lead, learning)] = NightScore(bedtime, withMAE: true)
                }
            }
            result[method] = mine
        }
        return result
    }
}
