import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// `CivilTime` replaced `Calendar` for the night's date, the clock texts and RFC 3339 (#29): it must give the
/// Gregorian calendar's fields exactly.
@Suite("civil time: the Gregorian calendar's fields without a Calendar")
struct CivilTimeTests {
    static let zones = ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe",
                        "Pacific/Chatham", "America/St_Johns", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Africa/Casablanca",
                        "America/Santiago", "Antarctica/Troll"]
        .map { TimeZone(identifier: $0)! } + [TimeZone(secondsFromGMT: -12_600)!, TimeZone(secondsFromGMT: 50_400)!]

    static func calendarFields(_ date: Date, _ zone: TimeZone) -> [Int] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return [c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!]
    }

    static func fields(_ c: CivilTime) -> [Int] { [c.year, c.month, c.day, c.hour, c.minute, c.second] }

    @Test("known instants: a leap day, the turn of a year west of UTC, a DST change, before 1970, a fraction")
    func known() {
        let newYork = TimeZone(identifier: "America/New_York")!
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: 951_782_400), in: .gmt)) == [2000, 2, 29, 0, 0, 0])
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: 1_798_761_599.75), in: .gmt)) == [2026, 12, 31, 23, 59, 59])
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: 1_798_761_600), in: newYork)) == [2026, 12, 31, 19, 0, 0])
        // 2026-03-08 07:00Z is 03:00 EDT (02:00 EST never happened).
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: 1_772_953_200), in: newYork)) == [2026, 3, 8, 3, 0, 0])
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: 1_772_953_199), in: newYork)) == [2026, 3, 8, 1, 59, 59])
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: -1), in: .gmt)) == [1969, 12, 31, 23, 59, 59])
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: -0.5), in: .gmt)) == [1969, 12, 31, 23, 59, 59])
        // Not finite, or absurdly far: no trap.
        #expect(Self.fields(CivilTime(Date(timeIntervalSince1970: .nan), in: .gmt)) == [1970, 1, 1, 0, 0, 0])
        #expect(CivilTime(Date(timeIntervalSince1970: .infinity), in: .gmt).year > 300_000)
        #expect(CivilTime(Date(timeIntervalSince1970: -1e300), in: newYork).year < -300_000)
    }

    @Test("any instant from 1600 to 2200, in any of 15 zones: the calendar's fields")
    func matchesCalendar() async {
        await propertyCheck(count: 3000, input: Gen.double(in: -11_676_096_000...7_258_118_400),
                            Gen.int(in: 0...(Self.zones.count - 1))) { seconds, z in
            let date = Date(timeIntervalSince1970: seconds)
            #expect(Self.fields(CivilTime(date, in: Self.zones[z])) == Self.calendarFields(date, Self.zones[z]), "\(seconds) \(Self.zones[z].identifier)")
        }
    }

    @Test("days and civil dates convert both ways, one day apart when one day apart")
    func daysRoundTrip() async {
        #expect(CivilTime.days(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilTime.days(year: 2000, month: 3, day: 1) - CivilTime.days(year: 2000, month: 2, day: 28) == 2)
        #expect(CivilTime.days(year: 1900, month: 3, day: 1) - CivilTime.days(year: 1900, month: 2, day: 28) == 1)
        #expect(CivilTime.date(days: -1) == (1969, 12, 31))
        await propertyCheck(count: 3000, input: Gen.int(in: -100_000_000...100_000_000)) { days in
            let c = CivilTime.date(days: days)
            #expect(CivilTime.days(year: c.year, month: c.month, day: c.day) == days)
            let next = CivilTime.date(days: days + 1)
            #expect(next == (c.year, c.month, c.day + 1) || next == (c.year, c.month + 1, 1) || next == (c.year + 1, 1, 1))
        }
    }

    @Test("LocalDate: parsing knows the months' lengths and leap years; adding days is the calendar's")
    func localDates() async throws {
        #expect(try LocalDate(parsing: "2028-02-29") == LocalDate(year: 2028, month: 2, day: 29))
        #expect(try LocalDate(parsing: "2000-02-29") == LocalDate(year: 2000, month: 2, day: 29))
        for bad in ["2026-02-29", "1900-02-29", "2026-04-31", "2026-06-31", "2026-13-01", "2026-00-10", "2026-01-00"] {
            #expect(throws: LocalDate.ParseError.self, "\(bad)") { try LocalDate(parsing: bad) }
        }
        #expect(try LocalDate(parsing: "2026-12-31") == LocalDate(year: 2026, month: 12, day: 31))
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = .gmt
        await propertyCheck(count: 1000, input: Gen.int(in: -100_000...200_000), Gen.int(in: -40_000...40_000)) { start, offset in
            let (y, m, d) = CivilTime.date(days: start)
            let date = utc.date(from: DateComponents(year: y, month: m, day: d))!
            let moved = utc.dateComponents([.year, .month, .day], from: utc.date(byAdding: .day, value: offset, to: date)!)
            #expect(LocalDate(year: y, month: m, day: d).adding(days: offset) == LocalDate(year: moved.year!, month: moved.month!, day: moved.day!))
        }
    }
}
