@testable import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

/// The benchmark's scoring of what the person experiences (#52): the nudge in the evening and at bedtime.
@Suite("Evening replay: nudged nights in the evening and at bedtime")
struct EveningReplayTests {
    static let zone = TimeZone(identifier: "America/Los_Angeles")!

    /// Awake and discharging at `drain` %/h from `from` (local) at `level`, one reading a minute until `until`, then asleep
    /// until 07:00 the next day, waking `cost` points lower. Optionally on AC (full) before `from`, from 17:00.
    static func night(from: String, until: String, level start: Double, drain: Double, cost: Double,
                      pluggedFrom17: Bool = false) throws -> BatteryTrace {
        var rows: [String] = ["# tz=America/Los_Angeles", "t_unix,level_percent,state"]
        let begin = localDate("2026-10-20 \(from)", zone)
        let end = localDate("2026-10-20 \(until)", zone)
        if pluggedFrom17 {
            var t = localDate("2026-10-20 17:00:00", zone)
            while t < begin {
                rows.append("\(Int(t.timeIntervalSince1970)),\(start),full")
                t.addTimeInterval(60)
            }
        }
        var t = begin
        var level = start
        while t <= end {
            rows.append("\(Int(t.timeIntervalSince1970)),\(String(format: "%.3f", level)),discharging")
            level -= drain / 60
            t.addTimeInterval(60)
        }
        let wake = localDate("2026-10-21 07:00:00", zone)
        rows.append("\(Int(wake.timeIntervalSince1970)),\(String(format: "%.3f", level + drain / 60 - cost)),discharging")
        return try BatteryTrace.parse(rows.joined(separator: "\n") + "\n")
    }

    static func find(_ nights: [ForecastReplay.NightNudge], _ method: ForecastReplay.NudgeMethod,
                     _ scenario: ForecastReplay.Scenario) -> ForecastReplay.NightNudge? {
        nights.first { $0.method == method && $0.scenario == scenario }
    }

    @Test("a laptop that sleeps at 23:00 with 64 %: dosetap silent all evening and at bedtime; the awake drain nudges every time")
    func sleeperSilent() throws {
        // 100 % at 20:00, 12 %/h: 64 % at 23:00; asleep until 07:00 at 2 points. Asleep now with the prior (3 %/h):
        // 64 − 24 − 2 = 38 %, safe; the deadline (38 − 9 t = 21) is 00:53, further than 20 minutes.
        let trace = try Self.night(from: "20:00:00", until: "23:00:00", level: 100, drain: 12, cost: 2)
        let nights = ForecastReplay().replayEvenings(trace)
        for learning in ForecastReplay.Learning.allCases {
            let evening = try #require(Self.find(nights, .dosetap, .evening(learning)))
            #expect(evening.kind == .sleep)
            #expect(!evening.nudged)
            #expect(abs(evening.actual - 62) < 0.01)
            #expect(Self.find(nights, .awakeDrain, .evening(learning))?.nudged == true)
            // The agent of #24 on a first night (nothing learned: planned awake until the alarm) cried wolf too.
            #expect(Self.find(nights, .nightModel, .evening(learning))?.nudged == true)
            for lead in ForecastReplay.bedtimeLeads {
                let bedtime = try #require(Self.find(nights, .dosetap, .bedtime(minutes: lead, learning)))
                #expect(!bedtime.nudged)
                #expect(bedtime.at == localDate("2026-10-20 23:00:00", Self.zone).addingTimeInterval(-Double(lead) * 60))
                #expect(bedtime.shown != nil)
                #expect(Self.find(nights, .awakeDrain, .bedtime(minutes: lead, learning))?.nudged == true)
            }
        }
        let scores = ForecastReplay.nightScores(nights)
        #expect(scores[.dosetap]?[.evening(.lived)] == {
            var s = ForecastReplay.NightScore()
            s.nights = 1
            return s
        }())
        #expect(scores[.awakeDrain]?[.evening(.fresh)]?.falseNudgeNights == 1)
        #expect(scores[.dosetap]?[.bedtime(minutes: 30, .lived)]?.mae != nil)
        #expect(scores[.dosetap]?[.evening(.lived)]?.mae == nil, "the evening has no single forecast shown")
    }

    @Test("the same laptop with 40 % at bedtime: even sleeping is not enough with the prior, and dosetap nudges")
    func lowSleeperNudged() throws {
        // 76 % at 20:00, 12 %/h: 40 % at 23:00; asleep now 40 − 24 − 2 = 14 %: warning.
        let trace = try Self.night(from: "20:00:00", until: "23:00:00", level: 76, drain: 12, cost: 2)
        let nights = ForecastReplay().replayEvenings(trace)
        #expect(Self.find(nights, .dosetap, .evening(.fresh))?.nudged == true)
        #expect(Self.find(nights, .dosetap, .bedtime(minutes: 30, .fresh))?.nudged == true)
    }

    @Test("bedtime: the reading exactly the lead before the suspend counts; an evening that starts a minute later has none")
    func bedtimeBoundary() throws {
        // Unplugged at 21:00, suspend (last reading) at 23:00: exactly 120 minutes.
        let exact = ForecastReplay().replayEvenings(try Self.night(from: "21:00:00", until: "23:00:00", level: 90, drain: 12, cost: 2,
                                                                   pluggedFrom17: true))
        #expect(Self.find(exact, .dosetap, .bedtime(minutes: 120, .lived)) != nil)
        let later = ForecastReplay().replayEvenings(try Self.night(from: "21:01:00", until: "23:00:00", level: 90, drain: 12, cost: 2,
                                                                   pluggedFrom17: true))
        #expect(Self.find(later, .dosetap, .bedtime(minutes: 120, .lived)) == nil, "on AC before 21:01: not awake and discharging since")
        #expect(Self.find(later, .dosetap, .bedtime(minutes: 60, .lived)) != nil)
        // The awake drain needs 20 minutes of history since the unplug: at 21:01 it cannot forecast, and is not scored.
        #expect(Self.find(exact, .awakeDrain, .bedtime(minutes: 120, .lived)) == nil)
        #expect(Self.find(exact, .awakeDrain, .bedtime(minutes: 60, .lived)) != nil)
    }

    static func nudge(_ actual: Double, nudged: Bool, beforeLow: Bool? = nil, kind: ForecastReplay.NightKind = .sleep,
                      shown: Int? = nil) -> ForecastReplay.NightNudge {
        ForecastReplay.NightNudge(method: .dosetap, scenario: .evening(.lived), kind: kind, at: Date(timeIntervalSince1970: 0),
                                  target: Date(timeIntervalSince1970: 3600), actual: actual, nudged: nudged,
                                  nudgedBeforeLow: beforeLow ?? nudged, shown: shown, why: nil)
    }

    @Test("scores: false above 20 % and missed at 20 % or below, on each side; an awake night's late nudge is missed")
    func scoreBoundaries() {
        let s = ForecastReplay.NightScore([
            Self.nudge(20.01, nudged: true), Self.nudge(20, nudged: true),
            Self.nudge(20, nudged: false), Self.nudge(20.01, nudged: false),
        ], withMAE: false)
        #expect(s.nights == 4)
        #expect(s.nudgedNights == 2)
        #expect(s.falseNudgeNights == 1)
        #expect(s.missedNights == 1)
        #expect(s.mae == nil)
        let awake = ForecastReplay.NightScore([
            Self.nudge(10, nudged: true, beforeLow: false, kind: .awake), Self.nudge(10, nudged: true, beforeLow: true, kind: .awake),
        ], withMAE: false)
        #expect(awake.missedNights == 1)
        #expect(awake.nudgedNights == 2)
        let mae = ForecastReplay.NightScore([Self.nudge(50, nudged: false, shown: 40), Self.nudge(30, nudged: false, shown: 36)],
                                            withMAE: true)
        #expect(mae.mae == 8)
        #expect(ForecastReplay.NightScore([], withMAE: true).mae == nil, "no night scored: no error either, not 0")
    }
}
