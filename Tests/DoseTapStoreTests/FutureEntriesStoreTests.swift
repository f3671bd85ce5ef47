import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import Testing

/// #51 finding 4 in the store: entries dated in the future are remembered as set aside by the first write that
/// sees them, and V13 widens the log's CHECK for `discard` without losing a row, a `seq` or a guard.
@Suite("The store and entries dated in the future")
struct FutureEntriesStoreTests {
    let utc = TimeZone(identifier: "UTC")!
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func fresh() throws -> (URL, DoseTapDatabase) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-future-\(UUID().uuidString)")
        return (url, try DoseTapDatabase(directory: url))
    }

    func submit(_ repo: DoseRepository, _ command: DoseCommand, at now: Date) throws -> DoseOutcome {
        try repo.submit(DoseInput(command: command, source: .cli, issuedAt: now), now: now, timeZone: utc)
    }

    @Test("a refused input still remembers the entry it found dated in the future; the read alone does not write")
    func rememberedByTheFirstWrite() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        let future = DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: t0.addingTimeInterval(86_400), timeZone: "UTC", source: .cli)
        try repo.append([future])
        let marks = { try db.read { d in try String.fetchAll(d, sql: "SELECT id FROM dose_event_future") } }
        // A read (dose status, the dashboard) names it and writes nothing.
        #expect(try repo.recentLog(now: t0).setAside == [future])
        #expect(try marks().isEmpty)
        // A refused input (nothing to snooze) still commits the mark.
        guard case .refused(let refusal, let status) = try submit(repo, .snooze, at: t0) else {
            Issue.record("a snooze with no night recorded")
            return
        }
        #expect(refusal.code == .noDose1)
        #expect(status.setAside == [future])
        #expect(try marks() == [future.id.uuidString])
        // Its date come, it is still set aside, and the night is free.
        let later = t0.addingTimeInterval(86_400 + 600)
        #expect(try repo.recentLog(now: later).sessions.isEmpty)
        guard case .recorded(let dose1, _, _) = try submit(repo, .take(confirmLate: false), at: later) else {
            Issue.record("tomorrow's Dose 1 refused")
            return
        }
        #expect(try repo.recentLog(now: later).sessions.map(\.dose1) == [dose1])
        // The agent's path: remembered outside a dose input.
        let another = DoseEvent(id: UUID(), kind: .dose2(late: false), at: t0.addingTimeInterval(3 * 86_400), timeZone: "UTC", source: .cli)
        try repo.append([another])
        let log = try repo.recentLog(now: later)
        #expect(log.newlySetAside == [another.id])
        try repo.rememberSetAside(log.newlySetAside, now: later)
        #expect(try repo.recentLog(now: later).newlySetAside.isEmpty)
    }

    @Test("a discard is an event and a mark; whole-log reads (the CSV) see both")
    func discardIsAnEvent() throws {
        let (_, db) = try fresh()
        let repo = DoseRepository(database: db)
        let future = DoseEvent(id: UUID(), kind: .dose1(targetMinutes: 165), at: t0.addingTimeInterval(40 * 365 * 86_400), timeZone: "UTC", source: .cli)
        try repo.append([future])
        guard case .recorded(let discard, _, let status) = try submit(repo, .discard(reference: future.id.uuidString), at: t0) else {
            Issue.record("discard refused")
            return
        }
        #expect(discard.kind == .discard(of: future.id))
        #expect(status.setAside.isEmpty)
        let all = try repo.wholeLog(now: t0)
        #expect(all.discarded == [future] && all.setAside.isEmpty)
        #expect(try db.read { d in try Int.fetchOne(d, sql: "SELECT COUNT(*) FROM dose_event_future WHERE discarded_at IS NOT NULL") } == 1)
        #expect(try repo.count() == 2)
    }

    @Test("V13 on a v12 store: every row, its seq and the counter kept; the guards back; discard allowed")
    func upgradeKeepsTheLog() throws {
        let (url, db) = try fresh()
        let repo = DoseRepository(database: db)
        _ = try submit(repo, .take(confirmLate: false), at: t0)
        // Back to v12's table: the old CHECK, a hand-written unreadable row, a gap in seq, the counter ahead.
        try db.write { d in
            try d.execute(sql: """
                DROP TRIGGER dose_event_append_only_update; DROP TRIGGER dose_event_append_only_replace;
                DROP TRIGGER dose_event_append_only_delete; DROP INDEX dose_event_at; DROP TABLE dose_event_future;
                ALTER TABLE dose_event RENAME TO old;
                CREATE TABLE dose_event (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL CHECK (kind IN ('dose1', 'dose2', 'snooze', 'skip', 'undo')), at REAL NOT NULL,
                    time_zone TEXT NOT NULL, source TEXT NOT NULL, payload TEXT NOT NULL DEFAULT '{}');
                INSERT INTO dose_event SELECT * FROM old; DROP TABLE old;
                INSERT INTO dose_event (seq, id, kind, at, time_zone, source, payload) VALUES (7, 'x', 'dose2', 'tonight', 'UTC', 'cli', '{}');
                UPDATE sqlite_sequence SET seq = 40 WHERE name = 'dose_event';
                CREATE INDEX dose_event_at ON dose_event(at);
                DELETE FROM grdb_migrations WHERE identifier = 'v13-dose-event-future';
                """)
        }
        let before = try db.read { d in try Row.fetchAll(d, sql: "SELECT * FROM dose_event ORDER BY seq").map { $0.description } }
        let upgraded = try DoseTapDatabase(directory: url)
        let after = try upgraded.read { d in try Row.fetchAll(d, sql: "SELECT * FROM dose_event ORDER BY seq").map { $0.description } }
        #expect(after == before)
        #expect(try upgraded.read { d in try Int.fetchOne(d, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'dose_event'") } == 40)
        #expect(try upgraded.read { d in try String.fetchAll(d, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'dose_event' ORDER BY name") }
            == ["dose_event_append_only_delete", "dose_event_append_only_replace", "dose_event_append_only_update"])
        #expect(throws: (any Error).self) { try upgraded.write { d in try d.execute(sql: "DELETE FROM dose_event") } }
        #expect(throws: (any Error).self) { try upgraded.write { d in try d.execute(sql: "UPDATE dose_event SET at = 0") } }
        #expect(throws: (any Error).self) {
            try upgraded.write { d in try d.execute(sql: "INSERT OR REPLACE INTO dose_event (seq, id, kind, at, time_zone, source) VALUES (1, 'y', 'dose2', 0, 'UTC', 'cli')") }
        }
        #expect(throws: (any Error).self) {
            try upgraded.write { d in try d.execute(sql: "INSERT INTO dose_event (id, kind, at, time_zone, source) VALUES ('z', 'erase', 0, 'UTC', 'cli')") }
        }
        try upgraded.write { d in
            try d.execute(sql: "INSERT INTO dose_event (id, kind, at, time_zone, source, payload) VALUES (?, 'discard', ?, 'UTC', 'cli', ?)",
                          arguments: [UUID().uuidString, t0.timeIntervalSince1970, "{\"discards\":\"\(UUID().uuidString)\"}"])
        }
        #expect(try upgraded.read { d in try Int.fetchOne(d, sql: "SELECT MAX(seq) FROM dose_event") } == 41)
    }
}
