import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// The overnight re-check's rules: once per step, never twice for a level, the baseline, plugging in.
@Suite("AlarmRiskTracker (overnight re-check)")
struct AlarmRiskTrackerTests {
    static let occurrence = Date(timeIntervalSince1970: 1_800_030_000)

    static func alarm(_ id: Int, _ time: String = "06:30", enabled: Bool = true) -> Alarm {
        // swiftlint:disable:next force_try
        try! Alarm(id: id, time: TimeOfDay(parsing: time), label: "A\(id)", repetition: .daily, enabled: enabled)
    }

    static func nudge(_ risk: BatteryRisk?) -> Nudge? {
        switch risk {
        case .warning: Nudge(severity: .warning, header: "Low Battery Warning", headline: "h", action: "a", color: .orange)
        case .critical: Nudge(severity: .critical, header: "Alarm at Risk", headline: "h", action: "a", color: .red)
        default: nil
        }
    }

    static func see(_ alarm: Alarm, _ risk: BatteryRisk?, at occurrence: Date = occurrence) -> AlarmRiskTracker.Observation {
        .init(alarm: alarm, occurrence: occurrence, risk: risk, nudge: nudge(risk))
    }

    @Test("safe → warning → critical: one nudge per step, none repeated")
    func steps() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        #expect(t.observe([Self.see(a, .safe)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .safe)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).map(\.nudge.severity) == [.warning])
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .critical)], pluggedIn: false).map(\.nudge.severity) == [.critical])
        #expect(t.observe([Self.see(a, .critical)], pluggedIn: false).isEmpty)
        // A wobble down and back up is not a new step.
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .critical)], pluggedIn: false).isEmpty)
    }

    @Test("safe → critical at once is one nudge (critical)")
    func jump() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        _ = t.observe([Self.see(a, .safe)], pluggedIn: false)
        let steps = t.observe([Self.see(a, .critical)], pluggedIn: false)
        #expect(steps.map(\.nudge.severity) == [.critical])
        #expect(steps.first?.alarm == a)
        #expect(steps.first?.occurrence == Self.occurrence)
    }

    @Test("baseline: an alarm toggled on at warning or critical does not nudge again at once; later growth does")
    func baseline() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        let b = Self.alarm(2)
        #expect(t.observe([Self.see(a, .critical), Self.see(b, .warning)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .critical), Self.see(b, .critical)], pluggedIn: false).map(\.alarm.id) == [2])
    }

    @Test("unknown first: the first known risk is news; unknown later changes nothing")
    func unknown() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        #expect(t.observe([Self.see(a, nil)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).map(\.nudge.severity) == [.warning])
        #expect(t.observe([Self.see(a, nil)], pluggedIn: false).isEmpty)
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).isEmpty)
        // First known at safe: nothing.
        var u = AlarmRiskTracker()
        _ = u.observe([Self.see(a, nil)], pluggedIn: false)
        #expect(u.observe([Self.see(a, .safe)], pluggedIn: false).isEmpty)
    }

    @Test("plugging in ends it and resets: after unplugging, a risk is said again")
    func pluggedIn() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        _ = t.observe([Self.see(a, .safe)], pluggedIn: false)
        #expect(t.observe([Self.see(a, .critical)], pluggedIn: false).count == 1)
        #expect(t.observe([Self.see(a, .safe)], pluggedIn: true).isEmpty)
        #expect(t.marks.map(\.level) == [.safe])
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).map(\.nudge.severity) == [.warning])
        // An alarm first seen while plugged in starts at safe.
        var u = AlarmRiskTracker()
        _ = u.observe([Self.see(a, .safe)], pluggedIn: true)
        #expect(u.observe([Self.see(a, .critical)], pluggedIn: false).count == 1)
    }

    @Test("several alarms: only the one whose risk grew is nudged")
    func several() {
        var t = AlarmRiskTracker()
        let (a, b, c) = (Self.alarm(1, "06:30"), Self.alarm(2, "07:00"), Self.alarm(3, "23:00"))
        _ = t.observe([Self.see(a, .safe), Self.see(b, .safe), Self.see(c, .safe)], pluggedIn: false)
        let steps = t.observe([Self.see(a, .safe), Self.see(b, .warning), Self.see(c, .safe)], pluggedIn: false)
        #expect(steps.map(\.alarm.id) == [2])
    }

    @Test("the next occurrence starts at safe; an edited alarm is a new toggle-on; a removed or disabled one is forgotten")
    func occurrences() {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        _ = t.observe([Self.see(a, .critical)], pluggedIn: false)
        let tomorrow = Self.occurrence.addingTimeInterval(86_400)
        #expect(t.observe([Self.see(a, .critical, at: tomorrow)], pluggedIn: false).map(\.occurrence) == [tomorrow])
        // Edited (a new time): the baseline again, silently.
        let edited = Self.alarm(1, "07:15")
        #expect(t.observe([Self.see(edited, .critical, at: tomorrow.addingTimeInterval(2700))], pluggedIn: false).isEmpty)
        // Gone, then back: a new toggle-on.
        #expect(t.observe([], pluggedIn: false).isEmpty)
        #expect(t.marks.isEmpty)
        #expect(t.observe([Self.see(edited, .critical, at: tomorrow)], pluggedIn: false).isEmpty)
    }

    @Test("the marks survive a restart: nothing is said twice")
    func restart() throws {
        var t = AlarmRiskTracker()
        let a = Self.alarm(1)
        _ = t.observe([Self.see(a, .safe)], pluggedIn: false)
        #expect(t.observe([Self.see(a, .warning)], pluggedIn: false).count == 1)
        let data = try JSONEncoder().encode(t.marks)
        var restarted = AlarmRiskTracker(marks: try JSONDecoder().decode([AlarmRiskTracker.Mark].self, from: data))
        #expect(restarted.observe([Self.see(a, .warning)], pluggedIn: false).isEmpty)
        #expect(restarted.observe([Self.see(a, .critical)], pluggedIn: false).count == 1)
    }

    static let risks: [BatteryRisk?] = [nil, .safe, .warning, .critical]

    @Test("property: for any sequence of readings, each level is nudged at most once per occurrence between plug-ins, and only upward")
    func neverTwice() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...3).array(of: 1...40), Gen.int(in: 0...9).array(of: 40...40)) { risks, plugs in
            var t = AlarmRiskTracker()
            let a = Self.alarm(1)
            var said: Set<BatteryRisk> = []
            var highest = 0 // what the person has heard or seen since the last plug-in
            var first = true
            for (index, code) in risks.enumerated() {
                let plugged = plugs[index] == 0
                let risk = Self.risks[code]
                let steps = t.observe([Self.see(a, risk)], pluggedIn: plugged)
                if plugged {
                    #expect(steps.isEmpty)
                    said = []
                    highest = 0
                    first = false
                    continue
                }
                #expect(steps.count <= 1)
                let rank = risk.map { $0 == .safe ? 0 : $0 == .warning ? 1 : 2 }
                if first {
                    // The baseline: nothing said, whatever the level.
                    #expect(steps.isEmpty)
                    highest = rank ?? 0
                    first = false
                    continue
                }
                let before = highest
                if let rank, rank > before {
                    #expect(steps.count == 1, "a rise not said")
                } else {
                    #expect(steps.isEmpty, "a nudge that is not a rise")
                }
                for step in steps {
                    let level: BatteryRisk = step.nudge.severity == .warning ? .warning : .critical
                    #expect(!said.contains(level), "said twice")
                    #expect(level == risk)
                    said.insert(level)
                }
                if let rank { highest = max(highest, rank) }
            }
        }
    }
}
