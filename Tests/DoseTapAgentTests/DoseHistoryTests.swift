import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// The dose reads every face shares: tonight, the export, the skip question.
@Suite("DoseHistory and the dose reads")
struct DoseHistoryTests {
    let ny = TimeZone(identifier: "America/New_York")!
    var t0: Date { localDate("2026-01-15 22:30:00", ny) }

    @Test("without data: an empty night and an empty export, and no database file is created")
    func noData() throws {
        let folder = freshDataFolder()
        let history = DoseHistory(store: DataStore(directory: folder), clock: FakeClock(t0, timeZone: ny))
        let status = try history.status()
        #expect(status.phase == .idle)
        #expect(status.session == nil)
        let export = try history.export(.all)
        #expect(export.csv == CSVExport.document([], from: nil, to: nil, now: t0))
        #expect(export.unreadable.isEmpty)
        #expect(try history.unreadableEntries() == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    @Test("tonight after a Dose 1; the export's last-N-days range includes tonight and excludes older nights")
    func statusAndExport() throws {
        let folder = freshDataFolder()
        let clock = FakeClock(t0.addingTimeInterval(-40 * 86400), timeZone: ny)
        let doses = try MachinePorts.doses(store: DataStore(directory: folder), clock: clock)
        _ = try doses.submit(.take(confirmLate: false), source: .cli) // 40 nights ago
        clock.set(t0)
        _ = try doses.submit(.take(confirmLate: false), source: .cli)
        let history = DoseHistory(store: DataStore(directory: folder), clock: clock)
        let status = try history.status()
        #expect(status.phase == .waiting)
        #expect(status.session?.dose1.at == t0)
        #expect(status.json(in: ny).text.contains(#""dose1At":"2026-01-15T22:30:00-05:00""#))
        let month = try history.export(.last(days: 30)).csv.split(separator: "\r\n")
        #expect(month.count == 2)
        #expect(month.last?.hasPrefix("2026-01-15,22:30:00,") == true)
        #expect(try history.export(.last(days: 90)).csv.split(separator: "\r\n").count == 3)
        #expect(try history.export(.between(LocalDate(parsing: "2026-01-16"), nil)).csv.split(separator: "\r\n").count == 1)
    }

    @Test("a skip is asked about only when it would be recorded: not before Dose 1, yes after it")
    func skipQuestion() throws {
        let clock = FakeClock(t0, timeZone: ny)
        let doses = try MachinePorts.doses(store: DataStore(directory: freshDataFolder()), clock: clock)
        #expect(!doses.skipWouldRecord())
        _ = try doses.submit(.take(confirmLate: false), source: .cli)
        #expect(doses.skipWouldRecord())
        _ = try doses.submit(.skip(.alert), source: .cli)
        #expect(!doses.skipWouldRecord())
    }

    @Test("a submission's JSON: recorded with event and night, refused with its code")
    func submissionJSON() throws {
        let clock = FakeClock(t0, timeZone: ny)
        let doses = try MachinePorts.doses(store: DataStore(directory: freshDataFolder()), clock: clock)
        let recorded = try doses.submit(.take(confirmLate: false), source: .cli).json(in: ny).text
        #expect(recorded.hasPrefix(#"{"recorded":true,"event":{"id":""#))
        #expect(recorded.contains(#""kind":"dose1","at":"2026-01-15T22:30:00-05:00","source":"cli"}"#))
        let refused = try doses.submit(.take(confirmLate: false), source: .cli).json(in: ny).text
        #expect(refused.hasPrefix(#"{"recorded":false,"refusal":{"code":"too-early","message":"#))
    }

    @Test("data: nothing to clear without data; a clear deletes what it counted")
    func clear() throws {
        let folder = freshDataFolder()
        let data = DataUseCases(store: DataStore(directory: folder))
        #expect(try data.contents() == nil)
        let doses = try MachinePorts.doses(store: DataStore(directory: folder), clock: FakeClock(t0, timeZone: ny))
        _ = try doses.submit(.take(confirmLate: false), source: .cli)
        let contents = try #require(try data.contents())
        #expect(contents.doseEvents == 1)
        try data.clear(contents)
        #expect(try data.contents()?.doseEvents == 0)
    }
}
