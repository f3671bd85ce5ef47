import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import Foundation
import Testing

/// The status bar's glance (#16 §3): each phase's text on both sides of its boundaries, the countdown's
/// next change, the alarm and battery nudges, the waybar and i3blocks lines.
@Suite("The status-bar glance")
struct StatusGlanceTests {
    static let zone = TimeZone(identifier: "Europe/Berlin")!
    /// Dose 1 at 22:00 local (21:00 UTC): the window opens 00:30, closes 02:00; the reminder (165) at 00:45.
    static let dose1 = Date(timeIntervalSince1970: 1_768_510_800)  // 2026-01-15 21:00 UTC

    func night(_ minutesAfterDose1: Double, dose2At: Double? = nil, skip: Bool = false) -> NightStatus {
        var events = [DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: Self.dose1, timeZone: Self.zone.identifier, source: .cli)]
        if let dose2At {
            events.append(DoseEvent(id: UUID(), kind: .dose2(late: false), at: Self.dose1.addingTimeInterval(dose2At * 60),
                                    timeZone: Self.zone.identifier, source: .button))
        }
        if skip {
            events.append(DoseEvent(id: UUID(), kind: .skip(.alert), at: Self.dose1.addingTimeInterval(60 * 60),
                                    timeZone: Self.zone.identifier, source: .cli))
        }
        return DoseLog(events: events).status(at: Self.dose1.addingTimeInterval(minutesAfterDose1 * 60), in: Self.zone)
    }

    func glance(_ night: NightStatus, alarm: AlarmView? = nil, nudge: Nudge? = nil) -> StatusGlance {
        StatusGlance.make(night: night, nextAlarm: alarm, reminderNudge: nudge)
    }

    @Test("no Dose 1 tonight: the pill alone, class idle, no timer")
    func idle() {
        let g = glance(DoseLog(events: []).status(at: Self.dose1, in: Self.zone))
        #expect(g.text == "💊" && g.classes == ["idle"] && !g.urgent && g.nextChange == nil)
        #expect(g.tooltip.hasPrefix("No Dose 1 yet tonight"))
    }

    @Test("before the window: its opening time; one second before it opens still waiting, at 150 min open 90 min")
    func waitingThenOpen() throws {
        let before = glance(night(150 - 1.0 / 60))
        #expect(before.text == "💊 00:30" && before.classes == ["waiting"])
        #expect(before.nextChange == Self.dose1.addingTimeInterval(150 * 60))
        #expect(before.tooltip.contains("Dose 1 at 22:00 · window 00:30–02:00") && before.tooltip.contains("Reminder at 00:45"))
        let open = glance(night(150))
        #expect(open.text == "💊 open 90 min" && open.classes == ["open"] && !open.urgent)
    }

    @Test("in the window: whole minutes left, rounded up; the text changes exactly when a minute passes")
    func countdown() throws {
        let g = glance(night(200.5))   // 39.5 min left → 40
        #expect(g.text == "💊 open 40 min")
        #expect(g.nextChange == Self.dose1.addingTimeInterval(201 * 60))
        let after = glance(night(201))
        #expect(after.text == "💊 open 39 min")
    }

    @Test("15 minutes left: near-close and urgent; 16 minutes left: not yet")
    func nearClose() {
        let sixteen = glance(night(224))
        #expect(sixteen.classes == ["open"] && !sixteen.urgent && sixteen.text == "💊 open 16 min")
        let fifteen = glance(night(225))
        #expect(fifteen.classes == ["near-close"] && fifteen.urgent && fifteen.text == "💊 open 15 min")
        // i3blocks 1.4 passes the string on to i3bar as `"urgent":true` and drops a JSON literal true unseen.
        #expect(fifteen.i3blocks.text.contains("\"urgent\":\"true\""))
        #expect(!sixteen.i3blocks.text.contains("urgent"))
    }

    @Test("after the close: closed (the late grace) and its end as the next change; then done, skipped")
    func afterTheWindow() {
        let closed = glance(night(241))
        #expect(closed.text == "💊 closed" && closed.classes == ["closed"])
        #expect(closed.nextChange == Self.dose1.addingTimeInterval(270 * 60))
        let done = glance(night(200, dose2At: 180))
        #expect(done.text == "💊 done" && done.shortText == "💊 ✓" && done.classes == ["completed"] && done.nextChange == nil)
        #expect(done.tooltip.contains("Dose 2 at 01:00"))
        let skipped = glance(night(90, skip: true))
        #expect(skipped.text == "💊 skipped" && skipped.tooltip.contains("Skipped: Feeling alert enough"))
    }

    @Test("an alarm at critical risk: the text says at risk, class alarm-critical, urgent; a warning: low battery, not urgent; safe: nothing")
    func alarmNudges() throws {
        let alarm = try Alarm(id: 1, time: try TimeOfDay(parsing: "06:30"), label: "Wake \u{1b}[31m")
        let at = Self.dose1.addingTimeInterval(8.5 * 3600)  // 06:30 in Berlin
        let critical = Nudge(severity: .critical, header: "Alarm at Risk", headline: "Estimated battery at alarm: 4%",
                             action: "Plug in before bed.", color: .red, powerOff: "This machine powers itself off at 2%.")
        let g = glance(night(30), alarm: AlarmView(alarm: alarm, nextAt: at, nudge: critical))
        #expect(g.text == "💊 00:30 ⏰ 06:30 at risk")
        #expect(g.classes == ["waiting", "alarm-critical"] && g.urgent)
        #expect(g.tooltip.contains("Alarm 06:30 (Wake \\x1b[31m): Alarm at Risk.") && g.tooltip.contains("powers itself off at 2%"))
        #expect(!g.tooltip.contains("\u{1b}"), "device and user text is shown escaped")
        let warning = Nudge(severity: .warning, header: "Low Battery Warning", headline: "Estimated battery at alarm: 15%",
                            action: "Consider charging.", color: .orange)
        let w = glance(night(30), alarm: AlarmView(alarm: alarm, nextAt: at, nudge: warning))
        #expect(w.text.hasSuffix("⏰ 06:30 low battery") && w.classes.last == "alarm-warning" && !w.urgent)
        let safe = glance(night(30), alarm: AlarmView(alarm: alarm, nextAt: at, nudge: nil))
        #expect(safe.text == "💊 00:30" && safe.classes == ["waiting"])
    }

    @Test("the battery nudge at the reminder shows while Dose 2 is ahead, not after it")
    func reminderNudge() {
        let nudge = Nudge(severity: .warning, header: "Low Battery Warning", headline: "Estimated battery at reminder: 12%",
                          action: "Plug in.", color: .orange)
        let g = glance(night(30), nudge: nudge)
        #expect(g.text == "💊 00:30 🔋" && g.classes == ["waiting", "battery-warning"])
        let done = glance(night(200, dose2At: 180), nudge: nudge)
        #expect(done.text == "💊 done" && done.classes == ["completed"])
    }

    @Test("#51: the agent cannot write its data: ⚠ before the text, the sentence first in the tooltip (escaped), store-trouble, urgent, red in i3blocks; none: nothing")
    func storeTrouble() throws {
        let sentence = "DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on /data\u{1b}[31m"
        let calm = StatusGlance.make(night: night(200.5), nextAlarm: nil, reminderNudge: nil)
        let told = StatusGlance.make(night: night(200.5), nextAlarm: nil, reminderNudge: nil, storeProblem: sentence)
        #expect(calm.text == "💊 open 40 min" && !calm.urgent && !calm.classes.contains("store-trouble"))
        #expect(told.text == "⚠ 💊 open 40 min" && told.shortText.hasPrefix("⚠ "))
        #expect(told.tooltip.split(separator: "\n").first == "DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on /data\\x1b[31m")
        #expect(told.classes == ["open", "store-trouble"] && told.urgent)
        #expect(told.nextChange == calm.nextChange, "the countdown goes on")
        #expect(told.i3blocks.text.contains(##""color":"#FF6B6B""##) && told.i3blocks.text.contains(#""urgent":"true""#))
        #expect(told.waybar.text.contains(#""class":["open","store-trouble","urgent"]"#), "\(told.waybar.text)")
        let idle = StatusGlance.make(night: DoseLog(events: []).status(at: Self.dose1, in: Self.zone), nextAlarm: nil, reminderNudge: nil, storeProblem: sentence)
        #expect(idle.text == "⚠ 💊" && idle.urgent)
    }

    @Test("the next alarm is the earliest enabled one")
    func nextAlarm() throws {
        let a = AlarmView(alarm: try Alarm(id: 1, time: try TimeOfDay(parsing: "07:00")), nextAt: Self.dose1.addingTimeInterval(36_000), nudge: nil)
        let b = AlarmView(alarm: try Alarm(id: 2, time: try TimeOfDay(parsing: "06:00")), nextAt: Self.dose1.addingTimeInterval(32_400), nudge: nil)
        let off = AlarmView(alarm: try Alarm(id: 3, time: try TimeOfDay(parsing: "05:00"), enabled: false), nextAt: nil, nudge: nil)
        #expect(StatusGlance.nextAlarm([a, b, off])?.alarm.id == 2)
        #expect(StatusGlance.nextAlarm([off]) == nil)
    }

    @Test("waybar's line: text, alt, tooltip, class; i3blocks': full_text, short_text, colour only with words")
    func lines() throws {
        let g = glance(night(230))
        let waybar = try #require(try JSONSerialization.jsonObject(with: Data(g.waybar.text.utf8)) as? [String: Any])
        #expect(Set(waybar.keys) == ["text", "alt", "tooltip", "class"])
        #expect(waybar["text"] as? String == "💊 open 10 min" && waybar["alt"] as? String == "near-close")
        #expect(waybar["class"] as? [String] == ["near-close", "urgent"])
        #expect(!g.waybar.text.contains("\n"))
        let i3 = try #require(try JSONSerialization.jsonObject(with: Data(g.i3blocks.text.utf8)) as? [String: Any])
        #expect(i3["full_text"] as? String == "💊 open 10 min" && i3["short_text"] as? String == "💊 10m")
        #expect(i3["color"] as? String == "#FF6B6B" && i3["urgent"] as? String == "true")
        let calm = try #require(try JSONSerialization.jsonObject(with: Data(glance(night(30)).i3blocks.text.utf8)) as? [String: Any])
        #expect(calm["color"] == nil && calm["urgent"] == nil)
    }
}

/// The follower's reading of the agent's event stream: names only, fed in any pieces.
@Suite("Server-sent events, as the follower reads them")
struct ServerSentEventParserTests {
    @Test("events split across chunks, comments, CRLF, unnamed and hostile names")
    func parse() {
        var p = ServerSentEventParser()
        #expect(p.feed("event: ready\ndata: {}\n\n: keep-alive\n\nevent: dose") == ["ready"])
        #expect(p.feed("Recorded\ndata: {}\n") == [])
        #expect(p.feed("\n") == ["doseRecorded"])
        #expect(p.feed("event: storeChanged\r\ndata: {}\r\n\r\n") == ["storeChanged"])
        #expect(p.feed("data: no name\n\n") == [])
        #expect(p.feed("event: a\u{1b}[31mb\n\nevent: \(String(repeating: "x", count: 65))\n\n") == [])
        #expect(p.feed(String(repeating: "y", count: 70_000)) == [])
        #expect(p.feed("\nevent: alarmRinging\n\n") == ["alarmRinging"], "a runaway line is dropped, the stream goes on")
    }
}
