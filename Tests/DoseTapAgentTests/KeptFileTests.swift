import DoseTapAgent
import DoseTapCore
import DoseTapStore
import Foundation
import Testing

/// The copy of what the agent keeps in memory while the store refuses writes (#51), for the next start.
@Suite("KeptFile: what is kept in memory survives a restart of the agent")
struct KeptFileTests {
    func runtime() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-kept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("saved and loaded again; 0600; removed when nothing is kept; a file that cannot be read is removed and said")
    func roundTrip() throws {
        let folder = try runtime()
        defer { try? FileManager.default.removeItem(at: folder) }
        let env = ["XDG_RUNTIME_DIR": folder.path]
        let ring = AlarmRing(id: 0, alarmID: 3, kind: .scheduled, dueAt: Date(timeIntervalSince1970: 1_800_000_000),
                             startedAt: Date(timeIntervalSince1970: 1_800_000_000.25), endedAt: nil, outcome: .ringing, endedBy: nil, snoozeUntil: nil)
        let file = KeptFile<[AlarmRing]>(name: "alarms", database: "/home/ana/.local/share/dosetap/dosetap.sqlite", environment: env)
        let url = try #require(file.url)
        #expect(url.deletingLastPathComponent().path == folder.appendingPathComponent("dosetap").path)
        #expect(file.save([ring]) == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = KeptFile<[AlarmRing]>(name: "alarms", database: "/home/ana/.local/share/dosetap/dosetap.sqlite", environment: env)
        #expect(again.url == url, "the same data folder, the same file")
        #expect(again.load().value == [ring])
        #expect(again.save(nil) == nil)
        #expect(!FileManager.default.fileExists(atPath: url.path), "removed once nothing is kept")
        // Another data folder of the same user: another file.
        let other = KeptFile<[AlarmRing]>(name: "alarms", database: "/srv/dosetap/dosetap.sqlite", environment: env)
        #expect(other.url != url)
        // Damaged: removed, said, nothing loaded.
        try Data("{not json".utf8).write(to: url)
        let damaged = again.load()
        #expect(damaged.value == nil && damaged.error?.contains("cannot be read") == true)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        // A runtime folder that cannot be written: said once, not at every pass.
        let blocked = folder.appendingPathComponent("blocked")
        try Data().write(to: blocked)  // a file where the folder should be
        let unwritable = KeptFile<[AlarmRing]>(name: "alarms", database: "/d", environment: ["XDG_RUNTIME_DIR": blocked.path])
        #expect(unwritable.save([ring]) != nil)
        var later = ring
        later.outcome = .stopped
        #expect(unwritable.save([later]) == nil, "the same problem is not said again")
        // No runtime directory (or a relative one): nothing is copied, nothing fails.
        #expect(KeptFile<[AlarmRing]>(name: "alarms", database: "/x", environment: [:]).url == nil)
        #expect(KeptFile<[AlarmRing]>(name: "alarms", database: "/x", environment: ["XDG_RUNTIME_DIR": "run"]).url == nil)
    }

    @Test("the household's kept plans, answers, rings and slots round-trip, backup targets as their text")
    func household() throws {
        let folder = try runtime()
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = OccurrenceKey(owner: "jen-laptop", alarmID: 1, at: 1_800_000_000)
        let slot = SlotKey(occurrence: key, target: 0, at: 1_800_000_120)
        let plan = KnownPlan(label: "Wake ✓", time: "05:00", occurrences: [1_800_000_000],
                             targets: [.device("bedroom-pi"), .phone("+15551234567"), .push("https://ntfy.sh/wake")])
        let data = try JSONEncoder().encode(plan)
        #expect(try JSONDecoder().decode(KnownPlan.self, from: data) == plan)
        #expect(String(decoding: data, as: UTF8.self).contains(#""device:bedroom-pi""#))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([BackupTarget].self, from: Data(#"["fax:123"]"#.utf8)) }
        let answer = CascadeAnswer(key: key, kind: .stop, target: nil, at: 1_800_000_150, by: "bedroom-pi")
        let ring = HouseholdRepository.BackupRing(slot: slot, label: "Wake", time: "05:00", startedAt: Date(timeIntervalSince1970: 1_800_000_120))
        #expect(try JSONDecoder().decode(CascadeAnswer.self, from: JSONEncoder().encode(answer)) == answer)
        #expect(try JSONDecoder().decode(HouseholdRepository.BackupRing.self, from: JSONEncoder().encode(ring)) == ring)
        let reminders = [Reminder(kind: .windowOpen, sessionID: UUID(), dueAt: Date(timeIntervalSince1970: 1_800_000_000)): Date(timeIntervalSince1970: 1_800_000_001)]
        let file = KeptFile<[Reminder: Date]>(name: "reminders", database: "/d", environment: ["XDG_RUNTIME_DIR": folder.path])
        #expect(file.save(reminders) == nil)
        #expect(KeptFile<[Reminder: Date]>(name: "reminders", database: "/d", environment: ["XDG_RUNTIME_DIR": folder.path]).load().value == reminders)
    }
}
