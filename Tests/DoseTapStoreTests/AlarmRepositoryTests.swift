import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import Testing

@Suite("Alarm store (migration v5)")
struct AlarmRepositoryTests {
    func repository() throws -> AlarmRepository {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alarms-\(UUID().uuidString)")
        return AlarmRepository(database: try DoseTapDatabase(directory: dir))
    }

    @Test("add gives increasing ids; find, update, turn off and remove; an unknown id changes nothing")
    func lifecycle() throws {
        let repo = try repository()
        let first = try repo.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:30"), label: "Work", repetition: try AlarmRepeat(parsing: "mon,fri")))
        let second = try repo.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "05:30"), label: "Flight", haptics: .strong))
        #expect(first.id >= 1 && second.id == first.id + 1)
        #expect(try repo.find(id: first.id) == first)
        #expect(try repo.find(id: second.id)?.haptics == .strong)
        var edited = first
        edited.enabled = false
        edited.label = "Work \u{1b}[2J"  // kept as typed; shown escaped
        #expect(try repo.update(edited))
        #expect(try repo.find(id: first.id) == edited)
        var ghost = first
        ghost.id = 999
        #expect(try !repo.update(ghost))
        #expect(try !repo.remove(id: 999))
        #expect(try repo.remove(id: first.id))
        #expect(try repo.all() == [second])
        // Ids are never reused.
        #expect(try repo.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "07:00"))).id == second.id + 1)
    }

    @Test("a row that cannot be read is reported by id, never rung as something else")
    func unusableRows() throws {
        let repo = try repository()
        let good = try repo.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:30")))
        try repo.database.write { db in
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('25:00', 'x', 'daily', 1, 0)")
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('06:00', 'x', 'weekly', 1, 0)")
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('06:00', '', 'daily', 1, 0)")
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES ('06:00', 'x', 'daily', 7, 0)")
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, haptics, created_at) VALUES ('06:00', 'x', 'daily', 1, 'loud', 0)")
            try db.execute(sql: "INSERT INTO alarm (time, label, repetition, enabled, created_at) VALUES (630, 'x', 'daily', 1, 0)")
        }
        let loaded = try repo.load()
        #expect(loaded.alarms == [good])
        #expect(loaded.unusable.map(\.reason) == ["unreadable time", "unreadable repeat", "the label is empty: give a few words, such as --label \"Work\"",
                                                  "unreadable enabled flag", "unreadable haptic intensity", "unreadable time"])
    }
}

@Suite("Alarm ring log (migration v6)")
struct AlarmRingRepositoryTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func store() throws -> (AlarmRepository, AlarmRingRepository) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-rings-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        return (AlarmRepository(database: db), AlarmRingRepository(database: db))
    }

    @Test("a ring ends once: the second answer (a Stop racing the timeout) finds nothing; a once alarm turns off, a snoozed one stays on")
    func endsOnce() throws {
        let (alarms, rings) = try store()
        let once = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:30")), now: t0)
        let due = AlarmPlanner.Due(alarmID: once.id, kind: .scheduled, dueAt: t0.addingTimeInterval(60))
        let ring = try rings.start(due, at: t0.addingTimeInterval(60))
        #expect(ring.outcome == .ringing && ring.startedAt == t0.addingTimeInterval(60))
        #expect(try rings.start(due, at: t0.addingTimeInterval(90)) == ring, "starting the same occurrence again returns the same ring")
        #expect(try rings.ringing() == ring)
        let snoozed = try rings.end(ringID: ring.id, outcome: .snoozed, by: .cli, at: t0.addingTimeInterval(70),
                                    snoozeUntil: t0.addingTimeInterval(610))
        #expect(snoozed?.snoozeUntil == t0.addingTimeInterval(610))
        #expect(try alarms.find(id: once.id)?.enabled == true)
        #expect(try rings.end(ringID: ring.id, outcome: .missed, by: .timeout, at: t0.addingTimeInterval(700)) == nil)
        #expect(try rings.ringing() == nil)
        let again = try rings.start(.init(alarmID: once.id, kind: .snooze, dueAt: t0.addingTimeInterval(610)), at: t0.addingTimeInterval(610))
        #expect(try rings.end(ringID: again.id, outcome: .stopped, by: .button, at: t0.addingTimeInterval(620))?.endedBy == .button)
        #expect(try alarms.find(id: once.id)?.enabled == false)
        #expect(try rings.history(alarmID: once.id).map(\.outcome) == [.snoozed, .stopped])
    }

    @Test("a miss is recorded once per occurrence; the tracks carry armed-since, the last scheduled ring and the latest")
    func missedAndTracks() throws {
        let (alarms, rings) = try store()
        let daily = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:30"), repetition: .daily), now: t0)
        let due = AlarmPlanner.Due(alarmID: daily.id, kind: .scheduled, dueAt: t0.addingTimeInterval(3600))
        #expect(try rings.recordMissed(due, at: t0.addingTimeInterval(9000)))
        #expect(try !rings.recordMissed(due, at: t0.addingTimeInterval(9001)))
        #expect(try alarms.find(id: daily.id)?.enabled == true, "a daily alarm stays on after a miss")
        let track = try #require(try rings.tracks().first)
        #expect(track.armedAt == t0)
        #expect(track.lastScheduled?.dueAt == due.dueAt && track.latest?.outcome == .missed)
        var edited = daily
        edited.label = "new"
        #expect(try alarms.update(edited))
        #expect(try rings.tracks().first?.armedAt == t0, "a new label does not re-arm")
        #expect(try alarms.update(edited, rearmedAt: t0.addingTimeInterval(50)))
        #expect(try rings.tracks().first?.armedAt == t0.addingTimeInterval(50))
        #expect(try rings.latestByAlarm()[daily.id]?.outcome == .missed)
    }

    @Test("a ring row edited by hand into nonsense is ignored, never guessed")
    func unreadableRing() throws {
        let (alarms, rings) = try store()
        let alarm = try alarms.add(try Alarm(id: 0, time: try TimeOfDay(parsing: "06:30")), now: t0)
        try rings.database.write { db in
            try db.execute(sql: "INSERT INTO alarm_ring (alarm_id, kind, due_at, outcome) VALUES (?, 'sometimes', 1.0, 'ringing')", arguments: [alarm.id])
            try db.execute(sql: "INSERT INTO alarm_ring (alarm_id, kind, due_at, outcome) VALUES (?, 'scheduled', 2.0, 'exploded')", arguments: [alarm.id])
        }
        #expect(try rings.ringing() == nil)
        #expect(try rings.history(alarmID: alarm.id).isEmpty)
    }
}
