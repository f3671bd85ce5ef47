import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

@Suite("DrainEstimator")
struct DrainEstimatorTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func sample(_ minutes: Double, _ level: Double, onAC: Bool = false) -> BatterySample {
        BatterySample(at: t0.addingTimeInterval(minutes * 60), level: level, onAC: onAC, status: onAC ? .charging : .discharging)
    }

    /// Replays a trace; returns (seconds, estimate, source, true drain) for every row.
    func replay(_ trace: DischargeTrace, hardware: Bool) -> [(Double, Double?, DrainSource, Double?)] {
        var estimator = DrainEstimator()
        return trace.rows.map { row in
            var raw = trace.raw(row)
            if !hardware { raw.attributes["power_now"] = nil }
            let state = PowerState(raw: [raw])
            let at = t0.addingTimeInterval(row.seconds)
            if let s = state.sample(at: at) { estimator.record(s) }
            let e = estimator.estimate(for: state)
            return (row.seconds, e.percentPerHour, e.source, trace.trueDrain(at: row.seconds))
        }
    }

    func worstError(_ results: [(Double, Double?, DrainSource, Double?)], from: Double, to: Double) -> Double {
        results.filter { $0.0 >= from && $0.0 <= to }
            .compactMap { r in r.1.flatMap { e in r.3.map { abs(e - $0) } } }
            .max() ?? .infinity
    }

    @Test("steady drain: the history fit is within 0.5 %/h once it has 20 minutes")
    func steady() throws {
        let r = replay(try Fixtures.trace("steady-drain"), hardware: false)
        #expect(r.filter { $0.0 < 20 * 60 }.allSatisfy { $0.1 == nil && $0.2 == .unknown })
        #expect(r.filter { $0.0 >= 20 * 60 }.allSatisfy { $0.2 == .history })
        #expect(worstError(r, from: 20 * 60, to: 4 * 3600) <= 0.5)
    }

    @Test("steady drain: the noisy hardware rate is smoothed; one spike does not move the figure much")
    func hardware() throws {
        let r = replay(try Fixtures.trace("steady-drain"), hardware: true)
        #expect(r.allSatisfy { $0.2 == .hardware })
        // After 5 samples the median of the last 5 minutes is in force.
        let errors = r.dropFirst(5).compactMap { x in x.1.flatMap { e in x.3.map { abs(e - $0) / $0 } } }
        #expect(errors.max()! <= 0.2)
        #expect(errors.sorted()[errors.count / 2] <= 0.05)
    }

    @Test("a lone spike in power_now is outvoted by the minutes around it")
    func spike() {
        var e = DrainEstimator()
        var last: PowerState?
        for m in 0...5 {
            let power = m == 5 ? 60.0 : 5.0
            let state = PowerState(raw: [.battery(energyNowWh: 40 - Double(m) * 0.08, energyFullWh: 50, powerW: power)])
            if let s = state.sample(at: t0.addingTimeInterval(Double(m) * 60)) { e.record(s) }
            last = state
        }
        let estimate = e.estimate(for: last!)
        #expect(estimate.source == .hardware)
        #expect(estimate.percentPerHour == 10) // 5 W of 50 Wh, not 60 W
        // With no history, the instant figure is all there is.
        #expect(DrainEstimator().estimate(for: last!).percentPerHour == 120)
    }

    @Test("a change of load shows within the 45-minute window")
    func loadChange() throws {
        let r = replay(try Fixtures.trace("load-change"), hardware: false)
        #expect(worstError(r, from: 20 * 60, to: 90 * 60) <= 0.75)
        // 45 minutes after the change, only the new load is in the window.
        #expect(worstError(r, from: 135 * 60, to: 180 * 60) <= 1.0)
    }

    @Test("a suspend gap restarts the history instead of reading near-zero drain")
    func suspendGap() throws {
        let r = replay(try Fixtures.trace("suspend-gap"), hardware: false)
        let after = r.filter { $0.0 > 21600 }
        // Right after resume there is no figure at all (history restarted), then the real 10 %/h.
        #expect(after.prefix(5).allSatisfy { $0.1 == nil })
        #expect(after.compactMap(\.1).allSatisfy { abs($0 - 10) <= 1 })
        #expect(after.compactMap(\.1).count >= 30)
    }

    @Test("a capacity-only battery stepping 1% at a time: within 1.5 %/h after 30 minutes")
    func capacityOnly() throws {
        let trace = try Fixtures.trace("capacity-only")
        let r = replay(trace, hardware: true)
        #expect(r.filter { $0.0 >= 20 * 60 }.allSatisfy { $0.2 == .history })
        #expect(worstError(r, from: 30 * 60, to: 5 * 3600) <= 1.5)
    }

    @Test("history resets when external power comes or goes")
    func acChange() {
        var e = DrainEstimator()
        for m in stride(from: 0.0, through: 30, by: 1) { e.record(sample(m, 80 - m * 0.2)) }
        #expect(e.historyDrainPercentPerHour != nil)
        e.record(sample(31, 74, onAC: true))
        #expect(e.history.count == 1)
        #expect(e.historyDrainPercentPerHour == nil)
        e.record(sample(32, 74))
        #expect(e.history.count == 1)
    }

    @Test("a gap over 10 minutes restarts; 10 minutes exactly does not")
    func gap() {
        var e = DrainEstimator()
        e.record(sample(0, 80))
        e.record(sample(10, 79))
        #expect(e.history.count == 2)
        e.record(sample(20.01, 78))
        #expect(e.history.count == 1)
    }

    @Test("the clock going backwards restarts; a duplicate instant replaces")
    func backwards() {
        var e = DrainEstimator()
        e.record(sample(5, 80))
        e.record(sample(5, 79.5))
        #expect(e.history.count == 1)
        #expect(e.history.last?.level == 79.5)
        e.record(sample(4, 79))
        #expect(e.history.count == 1)
        #expect(e.history.last?.level == 79)
    }

    @Test("the minimum span: 19 minutes is not enough, 20 is")
    func span() {
        var e = DrainEstimator()
        for m in stride(from: 0.0, through: 19, by: 1) { e.record(sample(m, 80 - m * 0.1)) }
        #expect(e.historyDrainPercentPerHour == nil)
        e.record(sample(20, 78))
        #expect(abs((e.historyDrainPercentPerHour ?? 0) - 6) < 0.01)
    }

    @Test("a rising level (the battery recovering) is 0 drain, never negative")
    func rising() {
        var e = DrainEstimator()
        for m in stride(from: 0.0, through: 30, by: 1) { e.record(sample(m, 50 + m * 0.05)) }
        #expect(e.historyDrainPercentPerHour == 0)
    }

    @Test("garbage samples are ignored")
    func garbage() {
        var e = DrainEstimator()
        e.record(sample(0, .nan))
        e.record(sample(1, 140))
        e.record(sample(2, -3))
        #expect(e.history.isEmpty)
    }

    @Test("loading stored samples in any order gives the same estimate")
    func order() {
        let samples = stride(from: 0.0, through: 40, by: 1).map { sample($0, 90 - $0 * 0.15) }
        let a = DrainEstimator(samples: samples)
        let b = DrainEstimator(samples: samples.reversed())
        #expect(a.historyDrainPercentPerHour == b.historyDrainPercentPerHour)
        #expect(abs((a.historyDrainPercentPerHour ?? 0) - 9) < 0.01)
    }
}
