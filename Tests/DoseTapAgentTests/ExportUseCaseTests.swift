import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// A log source that returns what the test gives it and remembers what it was asked.
final class FakeLogSource: LogSource, @unchecked Sendable {
    let records: [LogRecord]
    private(set) var askedSince: Date?
    init(_ records: [LogRecord]) { self.records = records }
    func records(since: Date) async throws -> [LogRecord] {
        askedSince = since
        return records
    }
}

@Suite("Exports: the calendar and the anonymised log (use cases)")
struct ExportUseCaseTests {
    let ny = TimeZone(identifier: "America/New_York")!
    let identity = InstallIdentity(secret: Array(repeating: 7, count: 32))

    func database() throws -> (DoseTapDatabase, URL) {
        let folder = freshDataFolder("dosetap-export")
        return (try DoseTapDatabase(directory: folder), folder)
    }

    @Test("alarms: every occurrence in the span, once only once, off never; UIDs stable and per install")
    func alarms() throws {
        let (db, _) = try database()
        let clock = FakeClock(localDate("2026-10-29 12:00:00", ny), timeZone: ny)
        let alarms = AlarmUseCases(store: DataStore(database: db), clock: clock, battery: { nil })
        _ = try alarms.add(.init(time: "06:30", label: "Work, gym", repetition: "daily"))
        _ = try alarms.add(.init(time: "07:00", repetition: "once"))
        _ = try alarms.add(.init(time: "05:00", repetition: "daily", enabled: false))
        _ = try alarms.add(.init(time: "08:00", repetition: "sat,sun"))
        let export = CalendarExport(store: DataStore(database: db), identity: identity, clock: clock)
        let result = try export.export(days: 7)
        let alarmEvents = result.events.filter { $0.uid.hasPrefix("alarm-") }
        // 06:30 daily × 7 (Oct 30 … Nov 5), 07:00 once, 08:00 on Oct 31 and Nov 1.
        #expect(alarmEvents.count == 7 + 1 + 2)
        // DST: 06:30 local on both sides of the Nov 1 change.
        let daily = alarmEvents.filter { $0.uid.hasPrefix("alarm-1-") }.map(\.start)
        #expect(daily.allSatisfy { ClockText(timeZone: ny).time($0) == "06:30" })
        #expect(daily.contains(localDate("2026-11-02 06:30:00", ny)))
        #expect(result.ics.contains("SUMMARY:Alarm: Work\\, gym\r\n"))
        // Stable: the same export again, the same UIDs; another install, other UIDs.
        #expect(try export.export(days: 7).events.map(\.uid) == result.events.map(\.uid))
        let other = CalendarExport(store: DataStore(database: db), identity: InstallIdentity(secret: Array(repeating: 8, count: 32)), clock: clock)
        #expect(Set(try other.export(days: 7).events.map(\.uid)).isDisjoint(with: result.events.map(\.uid)))
        #expect(throws: UseCaseError.self) { try export.export(days: 0) }
        #expect(throws: UseCaseError.self) { try export.export(days: 367) }
    }

    @Test("the dose window: planned from bedtime before Dose 1, the real one after, the next night once done")
    func doseWindow() throws {
        let (db, _) = try database()
        let clock = FakeClock(localDate("2026-01-15 20:00:00", ny), timeZone: ny)
        let store = DataStore(database: db)
        let export = CalendarExport(store: store, identity: identity, clock: clock)
        // Not set up: no planned window, and a note.
        let unset = try export.export(days: 1)
        #expect(unset.events.isEmpty && unset.notes.contains { $0.contains("dosetap setup") })

        try SettingsRepository(database: db).save(UserSettings(bedtime: "22:30", dose2TargetMinutes: 180, configured: true))
        let planned = try #require(try export.export(days: 1).events.first)
        #expect(planned.summary == "Dose 2 window (planned)")
        #expect(planned.start == localDate("2026-01-16 01:00:00", ny) && planned.end == localDate("2026-01-16 02:30:00", ny))
        #expect(planned.reminders.map(\.offset) == [-150 * 60, 30 * 60] as [TimeInterval])
        #expect(planned.uid.hasPrefix("dose-window-2026-01-15-"))

        // Dose 1 at 23:00: the real window, same UID (a calendar replaces the planned one).
        clock.set(localDate("2026-01-15 23:00:00", ny))
        let doses = try MachinePorts.doses(store: store, clock: clock)
        _ = try doses.submit(.take(confirmLate: false), source: .cli)
        let real = try #require(try export.export(days: 1).events.first)
        #expect(real.summary == "Dose 2 window")
        #expect(real.start == localDate("2026-01-16 01:30:00", ny) && real.end == localDate("2026-01-16 03:00:00", ny))
        #expect(real.uid == planned.uid)
        #expect(real.reminders.map(\.offset) == [0, 30 * 60, 75 * 60] as [TimeInterval])

        // Dose 2 at 01:45: the night is done; the next is tomorrow's.
        clock.set(localDate("2026-01-16 01:45:00", ny))
        _ = try doses.submit(.take(confirmLate: false), source: .cli)
        let next = try #require(try export.export(days: 1).events.first)
        #expect(next.summary == "Dose 2 window (planned)")
        #expect(next.start == localDate("2026-01-17 01:00:00", ny))
        #expect(next.uid.hasPrefix("dose-window-2026-01-16-"))
    }

    @Test("the log: anonymised, oldest first, nothing older than 90 days, untimed lines counted")
    func log() async throws {
        let (db, _) = try database()
        let now = localDate("2026-11-24 08:00:00", ny)
        let clock = FakeClock(now, timeZone: ny)
        try ButtonRepository(database: db).save(try ButtonConfig(address: "A4:C1:38:8D:18:B2", kind: .bthome, name: "Bedside",
                                                                 bindkey: "231d39c1d7cc1ab1aee224f7ec1ad4c4"))
        let source = FakeLogSource([
            LogRecord(time: now.addingTimeInterval(-60), level: "info", message: "Bedside pressed",
                      metadata: [.init("button", "Bedside"), .init("address", "a4:c1:38:8d:18:b2")]),
            LogRecord(time: now.addingTimeInterval(-91 * 86_400), level: "info", message: "too old"),
            LogRecord(time: nil, level: "info", message: "no time"),
            LogRecord(time: now.addingTimeInterval(-3600), level: "notice", message: "dose 1 recorded (4.5 g)",
                      metadata: [.init("bindkey", "231d39c1d7cc1ab1aee224f7ec1ad4c4")]),
        ])
        let export = try await LogExport(store: DataStore(database: db), identity: identity, clock: clock)
            .export(from: source, age: 90 * 86_400)
        #expect(source.askedSince == now.addingTimeInterval(-90 * 86_400))
        #expect(export.untimed == 1)
        #expect(export.records.count == 2)
        #expect(export.records[0].level == "notice")
        let csv = export.csv
        for secret in ["Bedside", "A4:C1", "a4:c1", "231d39", "4.5", "too old"] { #expect(!csv.contains(secret), "\(secret) in \(csv)") }
        let hash = identity.shortHash(domain: "button", value: "Bedside")
        #expect(csv.contains("button-\(hash) pressed"))
        #expect(csv.contains("address=bt-\(identity.shortHash(domain: "bt", value: "A4:C1:38:8D:18:B2"))"))
    }

    @Test("--since: 1h…90d; more than 90 days, zero, or anything else is refused")
    func since() throws {
        #expect(try LogExport.age(parsing: "90d") == 90 * 86_400)
        #expect(try LogExport.age(parsing: "1d") == 86_400)
        #expect(try LogExport.age(parsing: "12h") == 12 * 3600)
        for bad in ["91d", "0d", "-1d", "2161h", "d", "7", "7 d", "٧d", "999999999999d", "1w", ""] {
            #expect(throws: UseCaseError.self, "\(bad)") { try LogExport.age(parsing: bad) }
        }
    }

    @Test("the journal: JSON lines parsed (agent lines, systemd's lines, byte-array messages); the real journalctl takes our arguments")
    func journal() async throws {
        let lines = [
            #"{"__REALTIME_TIMESTAMP":"1795939971000000","PRIORITY":"6","MESSAGE":"2026-11-24T07:12:51+0000 info dosetap.agent: button=Bedside [DoseTapAgent] press"}"#,
            #"{"__REALTIME_TIMESTAMP":"1795939972000000","PRIORITY":"3","MESSAGE":"dosetap.service: Main process exited, code=killed"}"#,
            #"{"__REALTIME_TIMESTAMP":"1795939973000000","PRIORITY":"6","MESSAGE":[104,105,27,255]}"#,
            "not json",
        ].joined(separator: "\n")
        let records = JournalLogSource.parse(Array(lines.utf8))
        #expect(records.count == 3)
        #expect(records[0].level == "info" && records[0].message == "press" && records[0].metadata == [.init("button", "Bedside")])
        #expect(records[0].time == Date(timeIntervalSince1970: 1_795_939_971))
        #expect(records[1].level == "error" && records[1].message.hasPrefix("dosetap.service: Main process exited"))
        #expect(records[2].message.hasPrefix("hi\u{1b}"))

        let since = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(JournalLogSource().arguments(since: since) == ["--user", "-u", "dosetap.service", "-o", "json", "--since", "@1700000000", "--no-pager", "-q"])
        #expect(JournalLogSource(user: false).arguments(since: since).first == "-u")
        // The real journalctl accepts exactly these arguments (on an empty journal directory: no entries).
        let empty = freshDataFolder("dosetap-journal")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = try await JournalLogSource(extraArguments: ["--directory", empty.path]).records(since: since)
        #expect(none.isEmpty)
    }
}
