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
