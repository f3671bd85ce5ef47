import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// A store that cannot be written is a state (#51): told when it begins, changes cause or ends, reminded at most every
/// ten minutes, tried again on a back-off to a ceiling — never a line or an attempt per failure.
@Suite("StoreTrouble: one line per state change, a back-off with a ceiling")
struct StoreTroubleTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ seconds: Double) -> Date { Self.t0.addingTimeInterval(seconds) }

    @Test("the back-off: 5 s doubling to the 30-second ceiling, then every 30 s; none before a failure")
    func backoff() {
        #expect(StoreTrouble.retryDelay(afterFailures: 0) == 0)
        #expect((1...9).map { StoreTrouble.retryDelay(afterFailures: $0) } == [5, 10, 20, 30, 30, 30, 30, 30, 30])
        #expect(StoreTrouble.retryDelay(afterFailures: Int.max) == 30)
    }

    @Test("began once; quiet on the next failures; a reminder only after ten minutes; a change of cause is told; the end is told")
    func reports() {
        var trouble = StoreTrouble()
        #expect(trouble.succeeded() == nil, "nothing to end")
        let first = trouble.failed(.full, detail: "disk full", at: at(0))
        #expect(first.report == .began(.full))
        #expect(first.retryAt == at(5))
        let second = trouble.failed(.full, detail: "disk full", at: at(5))
        #expect(second.report == nil)
        #expect(second.retryAt == at(15))
        #expect(trouble.failed(.full, detail: "disk full", at: at(599.9)).report == nil, "just under ten minutes: quiet")
        #expect(trouble.failed(.full, detail: "disk full", at: at(600)).report == .reminder(.full, since: at(0), failures: 4))
        #expect(trouble.failed(.full, detail: "disk full", at: at(1199)).report == nil, "the reminder restarts the ten minutes")
        #expect(trouble.failed(.locked, detail: "locked", at: at(1200)).report == .changed(from: .full, to: .locked))
        #expect(trouble.isFailing)
        #expect(trouble.succeeded() == .recovered(.locked, since: at(0), failures: 6))
        #expect(!trouble.isFailing)
        #expect(trouble.failed(.locked, detail: "locked", at: at(2000)) == (.began(.locked), at(2005)))
    }

    @Test("a clock stepped back does not silence the reminder forever")
    func clockBack() {
        var trouble = StoreTrouble()
        _ = trouble.failed(.readOnly, detail: "ro", at: at(10_000))
        #expect(trouble.failed(.readOnly, detail: "ro", at: at(0)).report == .reminder(.readOnly, since: at(10_000), failures: 2))
    }

    @Test("whatever the failures, at most one line per ten minutes of one cause, and every retry within the ceiling")
    func bounded() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...5).array(of: 1...400), Gen.int(in: 1...120).array(of: 1...400)) { causes, gaps in
            var trouble = StoreTrouble()
            var now = Self.t0
            var lines: [Date] = []
            var last: StoreProblem?
            for (i, code) in causes.enumerated() {
                now = now.addingTimeInterval(Double(gaps[i % gaps.count]))
                let problem = StoreProblem.allCases[code]
                let (report, retryAt) = trouble.failed(problem, detail: "", at: now)
                #expect(retryAt > now)
                #expect(retryAt.timeIntervalSince(now) <= 30)
                if report != nil { lines.append(now) }
                if case .reminder = report { #expect(last == problem) }
                if problem != last { #expect(report != nil, "a new cause is always told") }
                last = problem
            }
            // Lines come only at a change of cause or ten minutes apart.
            let changes = zip(causes, causes.dropFirst()).filter { $0 != $1 }.count + 1
            let elapsed = now.timeIntervalSince(Self.t0)
            #expect(lines.count <= changes + Int(elapsed / StoreTrouble.reminderInterval) + 1)
        }
    }

    @Test("the sentence names the cause, says alarms still ring and doses cannot be recorded, and the fix")
    func sentence() {
        #expect(StoreProblem.full.sentence(folder: "/home/ana/.local/share/dosetap")
                == "DoseTap cannot write its data (the disk is full): alarms still ring, doses cannot be recorded — free space on /home/ana/.local/share/dosetap.")
        for problem in StoreProblem.allCases {
            #expect(problem.sentence(folder: "/d").hasPrefix("DoseTap cannot write its data ("))
            #expect(problem.sentence(folder: "/d").contains("alarms still ring, doses cannot be recorded"))
        }
    }
}

/// What the agent did that the store does not have yet is planned on as if written (#51): an occurrence rung but not
/// recorded is not rung again, a snooze kept in memory rings, a once alarm stopped in memory is off.
@Suite("AlarmPlanner.overlay: unsaved rings")
struct UnsavedRingsTests {
    let utc = TimeZone(identifier: "UTC")!
    func at(_ text: String) -> Date { ISO8601DateFormatter().date(from: "2026-01-15T\(text)Z")! }

    func track(_ repetition: AlarmRepeat = .daily, latest: AlarmRing? = nil) throws -> AlarmTrack {
        AlarmTrack(alarm: try Alarm(id: 1, time: TimeOfDay(parsing: "06:30"), repetition: repetition), armedAt: at("00:00:00"),
                   lastScheduled: latest?.kind == .scheduled ? latest : nil, latest: latest)
    }

    func ring(_ kind: AlarmRingKind = .scheduled, due: String, outcome: AlarmRingOutcome, endedAt: String? = nil,
              snoozeUntil: String? = nil) -> AlarmRing {
        AlarmRing(id: 0, alarmID: 1, kind: kind, dueAt: at(due), startedAt: at(due), endedAt: endedAt.map(at), outcome: outcome,
                  endedBy: outcome == .ringing ? nil : .button, snoozeUntil: snoozeUntil.map(at))
    }

    @Test("without unsaved rings the tracks are as stored")
    func none() throws {
        let tracks = [try track()]
        #expect(AlarmPlanner.overlay(tracks, unsaved: []) == tracks)
    }

    @Test("a ring started but not recorded: not due again; just before it, it is")
    func ringing() throws {
        let before = AlarmPlanner.plan([try track()], now: at("06:30:00"), in: utc)
        #expect(before.ringNow.map(\.dueAt) == [at("06:30:00")])
        let after = AlarmPlanner.plan(AlarmPlanner.overlay([try track()], unsaved: [ring(due: "06:30:00", outcome: .ringing)]),
                                      now: at("06:30:01"), in: utc)
        #expect(after.ringNow.isEmpty)
        #expect(after.missed.isEmpty)
    }

    @Test("a snooze kept in memory rings at its end, not before; a stop kept in memory leaves tomorrow's")
    func snoozeAndStop() throws {
        let snoozed = AlarmPlanner.overlay([try track()], unsaved: [ring(due: "06:30:00", outcome: .snoozed, endedAt: "06:31:00",
                                                                         snoozeUntil: "06:40:00")])
        #expect(AlarmPlanner.plan(snoozed, now: at("06:39:59"), in: utc).ringNow.isEmpty)
        #expect(AlarmPlanner.plan(snoozed, now: at("06:40:00"), in: utc).ringNow == [.init(alarmID: 1, kind: .snooze, dueAt: at("06:40:00"))])
        let stopped = AlarmPlanner.overlay([try track()], unsaved: [ring(due: "06:30:00", outcome: .stopped, endedAt: "06:31:00")])
        let plan = AlarmPlanner.plan(stopped, now: at("06:31:00"), in: utc)
        #expect(plan.ringNow.isEmpty)
        #expect(plan.nextAt == at("06:30:00").addingTimeInterval(86_400))
    }

    @Test("the store's row of the same occurrence is replaced by the answer kept here; an older stored ring is not kept over a newer one")
    func replaces() throws {
        var stored = ring(due: "06:30:00", outcome: .ringing)
        stored.id = 7
        let answered = ring(due: "06:30:00", outcome: .stopped, endedAt: "06:32:00")
        let track = AlarmPlanner.overlay([try track(latest: stored)], unsaved: [answered])[0]
        #expect(track.latest?.outcome == .stopped)
        #expect(track.lastScheduled?.outcome == .stopped)
        var later = ring(.snooze, due: "06:45:00", outcome: .ringing)
        later.id = 9
        let kept = AlarmPlanner.overlay([try self.track(latest: later)], unsaved: [answered])[0]
        #expect(kept.latest == later)
    }

    @Test("a once alarm ended in memory is off; snoozed, it stays on")
    func once() throws {
        #expect(AlarmPlanner.overlay([try track(.once)], unsaved: [ring(due: "06:30:00", outcome: .stopped, endedAt: "06:31:00")])[0]
            .alarm.enabled == false)
        #expect(AlarmPlanner.overlay([try track(.once)], unsaved: [ring(due: "06:30:00", outcome: .snoozed, endedAt: "06:31:00",
                                                                     snoozeUntil: "06:40:00")])[0].alarm.enabled)
        #expect(AlarmPlanner.overlay([try track(.once)], unsaved: [ring(due: "06:30:00", outcome: .ringing)])[0].alarm.enabled)
    }
}
