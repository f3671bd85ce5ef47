// prediction-accuracy DIR [--json]
//
// Replays every `*.csv` battery trace of DIR (the format of shared/traces/README.md) through the Core
// code the agent uses — readings, suspends and resumes as the agent sees them, what it learned carried
// from night to night, nothing from the future — and scores three forecasts of each night side by side:
// `awake-drain` (the drain of the last 45 minutes awake, all night), `upower` (time to empty from the
// current rate) and `dosetap` (the night model). docs/performance.md, "Forecast accuracy on real nights".
// Also (#52) what the person experiences: each method's nudge decision at 30, 60 and 120 minutes before each sleep
// night's suspend (`bedtime`) and at every reading of the evening (`evening`), with learning carried from earlier
// nights (`lived`) and with nothing learned (`fresh`): `ForecastReplay.replayEvenings`.
import DoseTapCore
import Foundation

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("prediction-accuracy: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
let json = arguments.contains("--json")
let verbose = arguments.contains("--cases")
arguments.removeAll { $0 == "--json" || $0 == "--cases" }
if let unknown = arguments.first(where: { $0.hasPrefix("-") }) {
    fail("unknown option '\(DisplayText.escaped(unknown, maxLength: 40))' (usage: prediction-accuracy DIR [--json] [--cases])")
}
guard arguments.count == 1 else { fail("usage: prediction-accuracy DIR [--json] [--cases]") }
let directory = URL(fileURLWithPath: arguments[0], isDirectory: true)

var isDirectory: ObjCBool = false
guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
    fail("\(DisplayText.escaped(directory.path, maxLength: 200)) is not a directory")
}
let names: [String]
do {
    names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".csv") }.sorted()
} catch {
    fail("cannot list \(DisplayText.escaped(directory.path, maxLength: 200)): \(error.localizedDescription)")
}
guard !names.isEmpty else { fail("no *.csv trace in \(DisplayText.escaped(directory.path, maxLength: 200))") }

let started = Date()
let replay = ForecastReplay()
var all: [ForecastReplay.Outcome] = []
var nights: [ForecastReplay.NightNudge] = []
var perFile: [(String, Int, [ForecastReplay.Outcome])] = []
var richest = NightLearning()
for name in names {
    let text: String
    do {
        text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    } catch {
        fail("cannot read \(DisplayText.escaped(name, maxLength: 100)): not a UTF-8 text file")
    }
    let trace: BatteryTrace
    do {
        trace = try BatteryTrace.parse(text)
    } catch {
        fail("\(DisplayText.escaped(name, maxLength: 100)): \(error.description)")
    }
    for line in trace.skipped.prefix(5) {
        FileHandle.standardError.write(Data("prediction-accuracy: \(DisplayText.escaped(name, maxLength: 100)): skipped \(line)\n".utf8))
    }
    let (outcomes, learned) = replay.replay(trace)
    if learned.sleepDrain.observations.count + learned.habits.nights.count
        > richest.sleepDrain.observations.count + richest.habits.nights.count { richest = learned }
    perFile.append((name, trace.readings.count, outcomes))
    all += outcomes
    nights += replay.replayEvenings(trace)
}
let elapsed = Date().timeIntervalSince(started)
let scores = ForecastReplay.scores(all)
let nightScores = ForecastReplay.nightScores(nights)

func fixed(_ value: Double) -> String { String(format: "%.2f", value) }

/// {"nights": …, "nudgedNights": …, "falseNudgeNights": …, "missedNights": …[, "mae": …]}
/// mae: bedtime only (null when no night could be scored).
func nightJSON(_ s: ForecastReplay.NightScore, mae: Bool = false) -> String {
    "{\"nights\": \(s.nights), \"nudgedNights\": \(s.nudgedNights), \"falseNudgeNights\": \(s.falseNudgeNights), "
        + "\"missedNights\": \(s.missedNights)" + (mae ? ", \"mae\": \(s.mae.map(fixed) ?? "null")" : "") + "}"
}

func bedtimeJSON(_ mine: [ForecastReplay.Scenario: ForecastReplay.NightScore], _ learning: ForecastReplay.Learning) -> String {
    "{" + ForecastReplay.bedtimeLeads.map { "\"\($0)\": \(nightJSON(mine[.bedtime(minutes: $0, learning)] ?? .init(), mae: true))" }
        .joined(separator: ", ") + "}"
}

/// "evening": {"lived": S, "fresh": S}, "bedtime": {"30": S, …}, "bedtimeFresh": {…}
func experienceJSON(_ mine: [ForecastReplay.Scenario: ForecastReplay.NightScore]) -> String {
    "\"evening\": {\"lived\": \(nightJSON(mine[.evening(.lived)] ?? .init())), \"fresh\": \(nightJSON(mine[.evening(.fresh)] ?? .init()))}, "
        + "\"bedtime\": \(bedtimeJSON(mine, .lived)), \"bedtimeFresh\": \(bedtimeJSON(mine, .fresh))"
}

if json {
    var methods: [String] = []
    for method in ForecastReplay.Method.allCases {
        let s = scores[method]?.all ?? .init()
        let mine = ForecastReplay.NudgeMethod(rawValue: method.rawValue).flatMap { nightScores[$0] } ?? [:]
        methods.append("\"\(method.rawValue)\": {\"cases\": \(s.cases), \"sleepCases\": \(s.sleepCases), \"awakeCases\": \(s.awakeCases), "
            + "\"mae\": \(fixed(s.mae)), \"falseCritical\": \(s.falseCritical), \"falseNudge\": \(s.falseNudge), "
            + "\"missedRisk\": \(s.missedRisk), \"missedCritical\": \(s.missedCritical), "
            + experienceJSON(mine) + "}")
    }
    // The agent of #24 (the night model's forecast with the evening's guess, nudged when not safe), for comparison: beside
    // the methods, not one of them (it has no cases of its own: its forecast at the suspend is `dosetap`'s).
    print("{\"methods\": {\(methods.joined(separator: ", "))}, \"nightModel\": {" + experienceJSON(nightScores[.nightModel] ?? [:]) + "}}")
} else {
    let readings = perFile.map(\.1).reduce(0, +)
    print("Forecast accuracy on real nights: \(names.count) trace(s), \(readings) readings, replayed in \(fixed(elapsed)) s")
    for (name, count, outcomes) in perFile {
        let nights = Set(outcomes.map { "\($0.kind)\($0.target.timeIntervalSince1970)" }).count
        print("  \(DisplayText.escaped(name, maxLength: 100)): \(count) readings, \(nights) night(s) scored")
    }
    print("")
    let header = ["method", "nights", "cases", "MAE", "falseCritical", "falseNudge", "missedRisk", "missedCritical"]
    print(header.joined(separator: "\t"))
    for method in ForecastReplay.Method.allCases {
        guard let s = scores[method] else { continue }
        for (label, score) in [("all", s.all), ("sleep", s.sleep), ("awake", s.awake)] {
            print([method.rawValue, label, "\(score.cases)", fixed(score.mae), "\(score.falseCritical)", "\(score.falseNudge)",
                   "\(score.missedRisk)", "\(score.missedCritical)"].joined(separator: "\t"))
        }
    }
    // What the person experiences (#52): the nudge in the evening and at bedtime, for an alarm at each night's target.
    print("")
    print("What the person experiences: nights nudged in the evening (every reading from 18:00 or the last resume/unplug to the")
    print("suspend) and at 30/60/120 min before the suspend; false = nudged, above 20 % at the target; missed = not nudged, 20 % or below")
    print(["method", "scenario", "learning", "nights", "nudged", "falseNudge", "missed", "MAE"].joined(separator: "\t"))
    for method in ForecastReplay.NudgeMethod.allCases {
        let mine = nightScores[method] ?? [:]
        for learning in ForecastReplay.Learning.allCases {
            var rows: [(String, ForecastReplay.NightScore)] = [("evening", mine[.evening(learning)] ?? .init())]
            for lead in ForecastReplay.bedtimeLeads { rows.append(("bedtime \(lead)", mine[.bedtime(minutes: lead, learning)] ?? .init())) }
            for (label, s) in rows {
                print([method.rawValue, label, learning.rawValue, "\(s.nights)", "\(s.nudgedNights)", "\(s.falseNudgeNights)",
                       "\(s.missedNights)", s.mae.map(fixed) ?? "-"].joined(separator: "\t"))
            }
        }
    }
    // What one forecast costs the agent at a battery reading, with the fullest history learned here (the
    // agent forecasts each enabled alarm at each reading).
    let zone = TimeZone(identifier: "UTC")!
    let outlook = NightOutlook(learning: richest, conditions: NightConditions(), timeZone: zone)
    let state = PowerState(raw: [RawPowerSupply(name: "BAT0", attributes: [
        "type": "Battery", "present": "1", "status": "Discharging", "energy_now": "60000000", "energy_full": "100000000",
    ])])
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let rounds = 20_000
    var checksum = 0
    let costStart = Date()
    for i in 0..<rounds {
        let f = BatteryForecast.make(state: state, drain: DrainEstimate(percentPerHour: 12, source: .history),
                                     at: now.addingTimeInterval(Double(3600 + i % 36_000)), now: now, night: outlook)
        checksum &+= f.predictedLevel ?? 0
    }
    let perForecast = Date().timeIntervalSince(costStart) / Double(rounds) * 1e6
    // And one nudge decision by the deadline (#52), with the same history: what the agent adds per alarm and reading.
    var nudges = 0
    let decisionStart = Date()
    for i in 0..<rounds {
        let d = NudgeDecision.make(state: state, drain: DrainEstimate(percentPerHour: 12, source: .history),
                                   alarm: now.addingTimeInterval(Double(3600 + i % 36_000)), now: now, night: outlook)
        nudges &+= d.nudge == nil ? 0 : 1
    }
    let perDecision = Date().timeIntervalSince(decisionStart) / Double(rounds) * 1e6
    print("")
    print("One forecast with the night model (\(richest.sleepDrain.observations.count) sleeps, \(richest.habits.nights.count) evenings learned): "
          + "\(String(format: "%.1f", perForecast)) µs (checksum \(checksum))")
    print("One nudge decision by the deadline, same history: \(String(format: "%.1f", perDecision)) µs (\(nudges) of \(rounds) nudged)")
    if verbose {
        print("")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        for outcome in all {
            print([outcome.method.rawValue, outcome.kind.rawValue, formatter.string(from: outcome.at),
                   formatter.string(from: outcome.target), "actual \(fixed(outcome.actual))", "predicted \(outcome.predicted)",
                   outcome.risk.rawValue, outcome.assumption?.rawValue ?? "-"].joined(separator: "\t"))
        }
        print("")
        for night in nights {
            let scenario: String
            switch night.scenario {
            case .evening(let learning): scenario = "evening \(learning.rawValue)"
            case .bedtime(let minutes, let learning): scenario = "bedtime \(minutes) \(learning.rawValue)"
            }
            print([night.method.rawValue, scenario, night.kind.rawValue, formatter.string(from: night.at), formatter.string(from: night.target),
                   "actual \(fixed(night.actual))", night.nudged ? "nudged" : "silent", night.shown.map { "shown \($0)" } ?? "-",
                   night.why ?? "-"].joined(separator: "\t"))
        }
    }
}
if json { FileHandle.standardError.write(Data("prediction-accuracy: replayed in \(fixed(elapsed)) s\n".utf8)) }
