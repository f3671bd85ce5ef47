import DoseTapCore
@testable import DoseTapStore
import Foundation
import PropertyBased
import Testing

/// The folded log kept between decisions must never hide a write: another process's (data_version) or
/// this instance's (settings, setting an entry aside, a clear).
@Suite("DoseRepository's kept log")
struct DoseLogCacheTests {
    let ny = TimeZone(identifier: "America/New_York")!
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func submit(_ repo: DoseRepository, _ command: DoseCommand, at now: Date) throws -> DoseOutcome {
        try repo.submit(DoseInput(command: command, source: .cli, issuedAt: now), now: now, timeZone: ny)
    }

    func recordedKind(_ outcome: DoseOutcome) -> DoseEvent.Kind? {
        if case .recorded(let event, _, _) = outcome { return event.kind }
        return nil
    }

    @Test("another connection's undo is seen by the next decision")
    func otherConnection() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cache-\(UUID().uuidString)")
        let a = DoseRepository(database: try DoseTapDatabase(directory: dir))
        let b = DoseRepository(database: try DoseTapDatabase(directory: dir))
        #expect(recordedKind(try submit(a, .take(confirmLate: false), at: t0)) == .dose1(targetMinutes: 165))
        #expect(recordedKind(try submit(b, .undo, at: t0.addingTimeInterval(2))) != nil)
        // A stale kept log would still hold Dose 1 and refuse this as "too early".
        #expect(recordedKind(try submit(a, .take(confirmLate: false), at: t0.addingTimeInterval(3))) == .dose1(targetMinutes: 165))
        #expect(try a.count() == 3)
    }

    @Test("a settings change through the same database is seen by the next Dose 1")
    func sameInstanceSettings() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cache-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        let repo = DoseRepository(database: db)
        _ = try submit(repo, .take(confirmLate: false), at: t0)
        _ = try submit(repo, .undo, at: t0.addingTimeInterval(1))
        var settings = UserSettings.defaults
        settings.dose2TargetMinutes = 210
        try SettingsRepository(database: db).save(settings)
        #expect(recordedKind(try submit(repo, .take(confirmLate: false), at: t0.addingTimeInterval(2))) == .dose1(targetMinutes: 210))
    }

    @Test("property: two connections taking turns decide exactly as fresh reads would (over many nights)")
    func interleaved() async {
        let n = 160
        let commands = Gen.int(in: 0...5).array(of: n)
        let who = Gen.int(in: 0...1).array(of: n)
        let steps = Gen.double(in: 0...40).array(of: n)
        await propertyCheck(count: 8, input: commands, who, steps) { commands, who, steps in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cache-\(UUID().uuidString)")
            let repos = [DoseRepository(database: try DoseTapDatabase(directory: dir)),
                         DoseRepository(database: try DoseTapDatabase(directory: dir))]
            // A third connection that always reads the log afresh: what a decision must see.
            let fresh = DoseRepository(database: try DoseTapDatabase(directory: dir))
            var now = t0
            for i in 0..<n {
                // Seconds (undo), minutes (the window), hours (the next nights: the kept log is trimmed).
                now = now.addingTimeInterval(steps[i] < 4 ? steps[i] : steps[i] < 30 ? (steps[i] - 4) * 600 : (steps[i] - 30) * 7200)
                let command: DoseCommand = [.take(confirmLate: false), .take(confirmLate: false), .snooze, .undo, .skip(nil),
                                            .take(confirmLate: true)][commands[i]]
                let log = try fresh.recentLog(now: now)
                let expected = DosePolicy.decide(DoseInput(command: command, source: .cli, issuedAt: now), log: log, now: now,
                                                 timeZone: ny, targetMinutes: 165)
                let outcome = try submit(repos[who[i]], command, at: now)
                switch (expected, outcome) {
                case (.record(let kind, _), .recorded(let event, _, _)): #expect(kind == event.kind)
                case (.refuse(let r), .refused(let refusal, _)): #expect(r.code == refusal.code)
                default: Issue.record("step \(i): expected \(expected), got \(outcome)")
                }
            }
        }
    }

    @Test("a long-running process keeps only the recent window: a hundred nights later the kept log is small")
    func trimmed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cache-\(UUID().uuidString)")
        let db = try DoseTapDatabase(directory: dir)
        let repo = DoseRepository(database: db)
        var now = t0
        for _ in 0..<100 {
            _ = try submit(repo, .take(confirmLate: false), at: now)
            _ = try submit(repo, .take(confirmLate: false), at: now.addingTimeInterval(170 * 60))
            now = now.addingTimeInterval(24 * 3600)
        }
        _ = try submit(repo, .take(confirmLate: false), at: now)
        let kept = try #require(db.doseLogCache.withLock { $0 })
        #expect(try repo.count() == 201)
        #expect(kept.events.count <= 64 + 4)
        #expect(kept.events.last?.kind == .dose1(targetMinutes: 165))
    }
}
