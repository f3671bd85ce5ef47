import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("Usage alerts: thresholds, one alert per crossing, hysteresis, unreadable, snooze, templates")
struct UsageAlertTests {
    let defaults = AlertThresholds.defaults

    /// Feeds usages in order; returns the alerts fired.
    func run(_ usages: [Double?], thresholds: AlertThresholds = .defaults, state: inout AlertSourceState,
             snoozed: Bool = false) -> [String] {
        usages.map { usage in
            let outcome = AlertRules.observe(usage: usage, state: &state, thresholds: thresholds, snoozed: snoozed)
            return outcome.alert?.rawValue ?? (outcome.becameUnreadable ? "unreadable" : "-")
        }
    }

    @Test("thresholds: defaults 85/95; the seed's ranges on both sides; warning strictly below critical, said by name")
    func thresholds() throws {
        #expect(defaults.warning == 85 && defaults.critical == 95)
        #expect(try AlertThresholds(warning: 10, critical: 11).warning == 10)
        #expect(try AlertThresholds(warning: 94, critical: 95).critical == 95)
        #expect(throws: AlertError("warning (4 %) must be between 10 and 99 % used")) { try AlertThresholds(warning: 4, critical: 5) }
    }

    @Test("refused thresholds, each with the rule in its message", arguments: [
        (9, 95, "warning (9 %) must be between 10 and 99 % used"),
        (100, 95, "warning (100 %) must be between 10 and 99 % used"),
        (50, 4, "critical (4 %) must be between 5 and 95 % used"),
        (50, 96, "critical (96 %) must be between 5 and 95 % used"),
        (96, 95, "critical (95 %)"),
        (95, 95, "warning (95 %) must be lower than critical (95 %)"),
        (90, 20, "warning (90 %) must be lower than critical (20 %)"),
    ])
    func refused(warning: Int, critical: Int, message: String) {
        #expect {
            try AlertThresholds(warning: warning, critical: critical)
        } throws: { error in
            (error as? AlertError)?.description.contains(message) == true
        }
    }

    @Test("warning (96 %) above the highest critical: the rule that names both")
    func sevenNinetySix() {
        #expect(throws: AlertError("warning (96 %) must be lower than critical (95 %)")) { try AlertThresholds(warning: 96, critical: 95) }
    }

    @Test("84 / 85 / 86: the warning fires at 85 and once; 94 / 95 / 96: critical at 95, after the warning, and once")
    func boundaries() {
        var s = AlertSourceState()
        #expect(run([84], state: &s) == ["-"])
        #expect(run([85, 86], state: &s) == ["warning", "-"])
        #expect(run([94], state: &s) == ["-"])
        #expect(run([95, 96], state: &s) == ["critical", "-"])
    }

    @Test("hysteresis: hovering at the line does not flap; falling more than 2 points below re-arms")
    func hysteresis() {
        var s = AlertSourceState()
        #expect(run([85, 84, 85, 83, 85], state: &s) == ["warning", "-", "-", "-", "-"], "83 is exactly 2 below: not yet re-armed")
        #expect(run([82.9, 85], state: &s) == ["-", "warning"])
        #expect(run([95, 93, 95, 92.5, 95], state: &s) == ["critical", "-", "-", "-", "critical"])
    }

    @Test("a jump straight to critical fires critical only; a warning after it is not said again")
    func jump() {
        var s = AlertSourceState()
        #expect(run([50, 97, 90], state: &s) == ["-", "critical", "-"])
        #expect(run([82, 86], state: &s) == ["-", "warning"], "re-armed below 83, then crossed again")
    }

    @Test("0 % remaining is critical at once, even straight after a warning, and stays said while empty")
    func empty() throws {
        var s = AlertSourceState()
        #expect(run([100], thresholds: try AlertThresholds(warning: 94, critical: 95), state: &s) == ["critical"])
        var t = AlertSourceState(fired: [.warning])
        #expect(run([99, 100], thresholds: try AlertThresholds(warning: 10, critical: 95), state: &t) == ["critical", "-"])
    }

    @Test("a source that cannot be read: retried each cycle, unreadable after 3 (said once), readable again resets it")
    func unreadable() {
        var s = AlertSourceState()
        #expect(run([nil, nil], state: &s) == ["-", "-"])
        #expect(!s.isUnreadable)
        #expect(run([nil, nil, .nan, -1, 101], state: &s) == ["unreadable", "-", "-", "-", "-"])
        #expect(s.isUnreadable)
        #expect(run([90], state: &s) == ["warning"])
        #expect(!s.isUnreadable && s.failures == 0)
        #expect(run([nil, nil, nil], state: &s) == ["-", "-", "unreadable"], "said again after it was read in between")
    }

    @Test("snoozed: nothing fires; when the snooze ends, what still exceeds fires at once")
    func snooze() {
        var s = AlertSourceState()
        #expect(run([90, 96], state: &s, snoozed: true) == ["-", "-"])
        #expect(s.fired.isEmpty)
        #expect(run([96], state: &s) == ["critical"])
        var t = AlertSourceState()
        #expect(run([90], state: &t, snoozed: true) == ["-"])
        #expect(run([50], state: &t) == ["-"], "fell back during the snooze: nothing to say")
        #expect(AlertSnooze.allCases.map(\.rawValue) == ["15m", "1h", "4h", "24h"])
        #expect(AlertSnooze.oneDay.seconds == 86_400 && AlertSnooze.fifteenMinutes.seconds == 900)
    }

    @Test("the state shown: ok, warning, critical, unreadable")
    func shownState() {
        #expect(AlertRules.state(usage: 84.9, state: .init(), thresholds: defaults) == "ok")
        #expect(AlertRules.state(usage: 85, state: .init(), thresholds: defaults) == "warning")
        #expect(AlertRules.state(usage: 95, state: .init(), thresholds: defaults) == "critical")
        #expect(AlertRules.state(usage: nil, state: .init(failures: 3), thresholds: defaults) == "unreadable")
    }

    @Test("per-source overrides: either threshold, checked as a pair against the global one; off")
    func overrides() throws {
        #expect(try AlertSourceOverride(warning: 70).effective(defaults) == AlertThresholds(warning: 70, critical: 95))
        #expect(try AlertSourceOverride(critical: 90).effective(defaults) == AlertThresholds(warning: 85, critical: 90))
        #expect(throws: AlertError("warning (85 %) must be lower than critical (80 %)")) {
            try AlertSourceOverride(critical: 80).effective(defaults)
        }
        #expect(AlertSourceOverride().isDefault && !AlertSourceOverride(enabled: false).isDefault)
    }

    @Test("templates: the defaults, every placeholder, one pass; unknown placeholders, a lone brace, empty and long refused")
    func templates() throws {
        #expect(AlertTemplate.defaultWarning.render(source: "BAT0", usage: 86.4, level: .warning) == "BAT0 battery low: 14% left")
        #expect(AlertTemplate.defaultCritical.render(source: "mouse", usage: 100, level: .critical) == "mouse battery critical: 0% left")
        let all = try AlertTemplate("{level}: {source} {percent}% used, {remaining}% left")
        #expect(all.render(source: "{level}", usage: 90.6, level: .warning) == "warning: {level} 91% used, 9% left")
        for (text, message) in [("{source} at {pct}%", "unknown placeholder {pct}"), ("{source", "a { without its }"),
                                ("  ", "the template is empty"), (String(repeating: "x", count: 201), "at most 200"),
                                ("{\u{1b}[2J}", "unknown placeholder {\\x1b[2J}")] {
            #expect { try AlertTemplate(text) } throws: { ($0 as? AlertError)?.description.contains(message) == true }
        }
        let json = try JSONEncoder().encode(all)
        #expect(try JSONDecoder().decode(AlertTemplate.self, from: json) == all)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AlertTemplate.self, from: Data(#""{oops}""#.utf8)) }
    }

    @Test("property: an alert never repeats without a re-arm, and a warning never keeps a critical from firing")
    func property() async {
        await propertyCheck(count: 300, input: Gen.int(in: 10...94), Gen.int(in: 1...40),
                            Gen.int(in: 0...100).array(of: 1...60)) { warning, gap, readings in
            let thresholds = try! AlertThresholds(warning: warning, critical: min(95, warning + gap))
            var state = AlertSourceState()
            var fired: [AlertLevel: Bool] = [:]  // fired and not re-armed since
            for reading in readings.map(Double.init) {
                let outcome = AlertRules.observe(usage: reading, state: &state, thresholds: thresholds, snoozed: false)
                for level in AlertLevel.allCases where reading < Double(thresholds.threshold(level)) - AlertRules.hysteresis && reading < 100 {
                    fired[level] = false
                }
                if let alert = outcome.alert {
                    #expect(fired[alert] != true, "\(alert) repeated without a re-arm: \(readings)")
                    for level in AlertLevel.allCases where Double(thresholds.threshold(level)) <= reading || reading >= 100 { fired[level] = true }
                }
                // At or above critical, critical has been said (now or before, since its last re-arm).
                if reading >= Double(thresholds.critical) { #expect(fired[.critical] == true, "critical withheld: \(readings)") }
            }
        }
    }
}
