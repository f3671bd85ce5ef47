import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

@Suite("CSV export")
struct CSVExportTests {
    let ny = TimeZone(identifier: "America/New_York")!

    @Test("RFC 4180 quoting", arguments: [
        ("plain", "plain"), ("a,b", "\"a,b\""), ("say \"hi\"", "\"say \"\"hi\"\"\""), ("two\nlines", "\"two\nlines\""),
        ("cr\r", "\"cr\r\""), ("", ""),
    ])
    func quoting(value: String, expected: String) {
        #expect(CSVExport.field(value) == expected)
    }

    @Test("rows: on time, late, skipped, expired, in progress; oldest first; ranges inclusive")
    func rows() {
        var night = NightDriver()
        let n1 = localDate("2026-01-15 22:30:00", ny)
        night.submit(.take(confirmLate: false), at: n1)
        night.submit(.take(confirmLate: false), at: n1.addingTimeInterval(165 * 60))
        let n2 = localDate("2026-01-16 23:00:00", ny)
        night.submit(.take(confirmLate: false), at: n2)
        night.submit(.take(confirmLate: true), at: n2.addingTimeInterval(250 * 60))
        let n3 = localDate("2026-01-17 22:00:00", ny)
        night.submit(.take(confirmLate: false), at: n3)
        night.submit(.skip(.alert), at: n3.addingTimeInterval(60))
        let n4 = localDate("2026-01-18 22:00:00", ny)
        night.submit(.take(confirmLate: false), at: n4)
        let n5 = localDate("2026-01-19 22:00:00", ny)
        night.submit(.take(confirmLate: false), at: n5)
        let now = n5.addingTimeInterval(60)
        let rows = CSVExport.rows(night.log.sessions.reversed(), from: nil, to: nil, now: now)
        #expect(rows == [
            "2026-01-15,22:30:00,01:15:00,165,true,false",
            "2026-01-16,23:00:00,03:10:00,250,false,false",
            "2026-01-17,22:00:00,,,false,true",
            "2026-01-18,22:00:00,,,false,true",
            "2026-01-19,22:00:00,,,,false",
        ])
        let from = try! LocalDate(parsing: "2026-01-16"), to = try! LocalDate(parsing: "2026-01-17")
        #expect(CSVExport.rows(night.log.sessions, from: from, to: to, now: now).count == 2)
        #expect(CSVExport.document([], from: nil, to: nil, now: now) == "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped\r\n")
    }

    @Test("dates parse strictly", arguments: ["2026-02-30", "2026-13-01", "2026-1-01", "26-01-01", "2026/01/01", "", "2026-01-01x"])
    func badDates(_ text: String) {
        #expect(throws: LocalDate.ParseError.self) { try LocalDate(parsing: text) }
    }

    @Test("leap day and year ends")
    func goodDates() throws {
        #expect(try LocalDate(parsing: "2028-02-29").description == "2028-02-29")
        #expect(try LocalDate(parsing: "2026-12-31").adding(days: 1).description == "2027-01-01")
        #expect(try LocalDate(parsing: "2026-03-01").adding(days: -1).description == "2026-02-28")
    }
}
