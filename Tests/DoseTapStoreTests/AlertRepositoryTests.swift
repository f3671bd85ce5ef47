import DoseTapCore
@testable import DoseTapStore
import Foundation
import GRDB
import Testing

@Suite("Usage-alert store (migration v7)")
struct AlertRepositoryTests {
    func repository() throws -> AlertRepository {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alerts-\(UUID().uuidString)")
        return AlertRepository(database: try DoseTapDatabase(directory: dir))
    }

    @Test("settings: the defaults until saved, then what was saved; a value edited into nonsense is an error, not the defaults")
    func settings() throws {
        let repo = try repository()
        #expect(try repo.settings() == AlertSettings())
        let saved = AlertSettings(thresholds: try AlertThresholds(warning: 70, critical: 90), snoozedUntil: Date(timeIntervalSince1970: 1_800_000_000),
                                  warningTemplate: try AlertTemplate("{source}: {remaining}%"))
        try repo.save(saved)
        #expect(try repo.settings() == saved)
        try repo.database.write { db in
            try db.execute(sql: #"UPDATE setting SET value = '{"thresholds":{"warning":96,"critical":95}}' WHERE key = 'alerts'"#)
        }
        #expect(throws: StoreError.self) { try repo.settings() }
    }

    @Test("overrides: set, changed, and forgotten when back to the defaults")
    func overrides() throws {
        let repo = try repository()
        try repo.setOverride("BAT0", AlertSourceOverride(warning: 70))
        try repo.setOverride("button:bedside", AlertSourceOverride(enabled: false))
        #expect(try repo.overrides() == ["BAT0": AlertSourceOverride(warning: 70), "button:bedside": AlertSourceOverride(enabled: false)])
        try repo.setOverride("BAT0", AlertSourceOverride())
        #expect(try repo.overrides().keys.sorted() == ["button:bedside"])
    }

    @Test("a state and its history line are written together; the history keeps the newest 100; clearing it keeps the states")
    func historyCap() throws {
        let repo = try repository()
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        for i in 0..<105 {
            let state = AlertSourceState(fired: [.warning], usage: 86)
            try repo.record("BAT\(i % 2)", state: state, alert: AlertRecord(at: t0.addingTimeInterval(Double(i)), source: "BAT\(i % 2)", usage: 86, level: .warning))
        }
        let history = try repo.history()
        #expect(history.count == 100)
        #expect(history.first?.at == t0.addingTimeInterval(104) && history.last?.at == t0.addingTimeInterval(5), "newest first, the oldest pruned")
        #expect(try repo.states()["BAT1"] == AlertSourceState(fired: [.warning], usage: 86))
        try repo.record("BAT0", state: AlertSourceState(failures: 2), alert: nil)
        #expect(try repo.history().count == 100, "a state without an alert adds no line")
        #expect(try repo.clearHistory() == 100)
        #expect(try repo.history().isEmpty)
        #expect(try repo.states()["BAT0"]?.failures == 2)
    }

    @Test("data clear forgets the alert settings, overrides, states and history")
    func clear() throws {
        let repo = try repository()
        try repo.save(AlertSettings(thresholds: try AlertThresholds(warning: 50, critical: 60)))
        try repo.setOverride("BAT0", AlertSourceOverride(enabled: false))
        try repo.record("BAT0", state: AlertSourceState(fired: [.critical]), alert: AlertRecord(at: Date(), source: "BAT0", usage: 99, level: .critical))
        try repo.database.clearAll()
        #expect(try repo.settings() == AlertSettings())
        #expect(try repo.overrides().isEmpty && repo.states().isEmpty && repo.history().isEmpty)
    }
}
