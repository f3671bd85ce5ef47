import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

@Suite("Alarms: repeats, labels, and the next occurrence across DST")
struct AlarmTests {
    let ny = TimeZone(identifier: "America/New_York")!
    let london = TimeZone(identifier: "Europe/London")!
    let utc = TimeZone(identifier: "UTC")!

    func alarm(_ time: String, _ repetition: AlarmRepeat = .daily, enabled: Bool = true) throws -> Alarm {
        try Alarm(id: 1, time: try TimeOfDay(parsing: time), label: "Work", repetition: repetition, enabled: enabled)
    }

    func iso(_ date: Date?) -> String {
        guard let date else { return "nil" }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }

    @Test("repeat: once, daily, days in week order; seven days are daily; bad names and repeats refused")
    func repeats() throws {
        #expect(try AlarmRepeat(parsing: "once") == .once)
        #expect(try AlarmRepeat(parsing: "Daily") == .daily)
        #expect(try AlarmRepeat(parsing: "fri,mon,tue").description == "mon,tue,fri")
        #expect(try AlarmRepeat(parsing: "sun,mon").description == "mon,sun")
        #expect(try AlarmRepeat(parsing: "mon,tue,wed,thu,fri,sat,sun") == .daily)
        for bad in ["", "monday", "mon,,tue", "mon,mon", "mon ,tue", "ｍon", "mon,tue,", "weekly", "mon\u{0}"] {
            #expect(throws: AlarmError.self, "\(bad)") { try AlarmRepeat(parsing: bad) }
        }
    }

    @Test("labels: empty or blank refused; 200 characters allowed, 201 refused")
    func labels() throws {
        #expect(throws: AlarmError.self) { try Alarm.validLabel("") }
        #expect(throws: AlarmError.self) { try Alarm.validLabel(" \t\n") }
        #expect(try Alarm.validLabel(String(repeating: "é", count: 200)).count == 200)
        #expect(throws: AlarmError.self) { try Alarm.validLabel(String(repeating: "a", count: 201)) }
        // Every blank Unicode knows is blank: no-break, ideographic, line and paragraph separators, NEL.
        #expect(throws: AlarmError.self) { try Alarm.validLabel("\u{A0}\u{3000}\u{2028}\u{2029}\u{85}\u{2009}") }
        // A blank carrying a combining mark is not blank; a zero-width space is (as Foundation's table counts it).
        #expect(try Alarm.validLabel(" \u{301}") == " \u{301}")
        #expect(throws: AlarmError.self) { try Alarm.validLabel("\u{200B} ") }
    }

    @Test("blank labels: exactly what trimming Foundation's whitespacesAndNewlines leaves empty")
    func blankAsFoundation() async {
        let scalars: [Unicode.Scalar] = ["\u{9}", "\u{A}", "\u{B}", "\u{C}", "\u{D}", " ", "\u{85}", "\u{A0}", "\u{1680}", "\u{180E}",
                                         "\u{2000}", "\u{2007}", "\u{200A}", "\u{200B}", "\u{2028}", "\u{2029}", "\u{202F}", "\u{205F}",
                                         "\u{3000}", "\u{FEFF}", "\u{301}", "a", "\u{1C}", "\u{1F}"]
        await propertyCheck(count: 2000, input: Gen.int(in: 0...(scalars.count - 1)).array(of: 0...4)) { picks in
            var text = ""
            text.unicodeScalars.append(contentsOf: picks.map { scalars[$0] })
            let blank = text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            #expect((try? Alarm.validLabel(text)) == (blank ? nil : text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("an alarm that is off has no next occurrence")
    func off() throws {
        #expect(try alarm("06:30", enabled: false).nextOccurrence(after: Date(), in: ny) == nil)
    }

    @Test("midnight and the minute itself: strictly after now")
    func boundaries() throws {
        let a = try alarm("00:00")
        let now = localDate("2026-05-04 00:00:00", ny)
        #expect(a.nextOccurrence(after: now, in: ny) == localDate("2026-05-05 00:00:00", ny))
        #expect(a.nextOccurrence(after: now.addingTimeInterval(-1), in: ny) == now)
    }

    @Test("New York spring forward: 02:30 does not exist and rings at 03:00; the next day at 02:30 again")
    func springForwardNewYork() throws {
        let a = try alarm("02:30")
        let first = a.nextOccurrence(after: localDate("2026-03-07 23:00:00", ny), in: ny)
        #expect(iso(first) == "2026-03-08T07:00:00Z")  // 03:00 EDT
        let second = a.nextOccurrence(after: first!, in: ny)
        #expect(iso(second) == "2026-03-09T06:30:00Z")  // 02:30 EDT
    }

    @Test("New York fall back: 01:30 happens twice and rings once, at the first")
    func fallBackNewYork() throws {
        let a = try alarm("01:30")
        let first = a.nextOccurrence(after: localDate("2026-10-31 23:00:00", ny), in: ny)
        #expect(iso(first) == "2026-11-01T05:30:00Z")  // 01:30 EDT
        let next = a.nextOccurrence(after: first!, in: ny)
        #expect(iso(next) == "2026-11-02T06:30:00Z")  // the next day, 01:30 EST — not 01:30 EST the same night
        // Asked between the two instances (01:45 EDT): still the next day.
        #expect(iso(a.nextOccurrence(after: first!.addingTimeInterval(15 * 60), in: ny)) == "2026-11-02T06:30:00Z")
    }

    @Test("London: 01:30 on the spring-forward night rings at 02:00 BST; on the fall-back night once")
    func londonDST() throws {
        let a = try alarm("01:30")
        let spring = a.nextOccurrence(after: localDate("2026-03-28 23:00:00", london), in: london)
        #expect(iso(spring) == "2026-03-29T01:00:00Z")
        let autumn = a.nextOccurrence(after: localDate("2026-10-24 23:00:00", london), in: london)
        #expect(iso(autumn) == "2026-10-25T00:30:00Z")  // 01:30 BST
        #expect(iso(a.nextOccurrence(after: autumn!, in: london)) == "2026-10-26T01:30:00Z")  // the next day, GMT
    }

    @Test("Lord Howe Island falls back by half an hour: 01:45 shows twice, 30 min apart, and rings once")
    func lordHowe() throws {
        let zone = TimeZone(identifier: "Australia/Lord_Howe")!
        let a = try alarm("01:45")
        let first = a.nextOccurrence(after: Date(timeIntervalSince1970: 1_775_304_000), in: zone)  // 2026-04-04T12:00Z
        #expect(iso(first) == "2026-04-04T14:45:00Z")  // 01:45 +11:00
        #expect(iso(a.nextOccurrence(after: first!, in: zone)) == "2026-04-05T15:15:00Z")  // the next day, +10:30
        #expect(iso(a.nextOccurrence(after: first!.addingTimeInterval(600), in: zone)) == "2026-04-05T15:15:00Z")
    }

    @Test("days: the next allowed day; today when the time is still ahead")
    func days() throws {
        let weekdays = try alarm("06:30", try AlarmRepeat(parsing: "mon,tue,wed,thu,fri"))
        // Friday 2026-05-08 07:00: the next is Monday.
        #expect(weekdays.nextOccurrence(after: localDate("2026-05-08 07:00:00", ny), in: ny) == localDate("2026-05-11 06:30:00", ny))
        // Friday 06:00: today.
        #expect(weekdays.nextOccurrence(after: localDate("2026-05-08 06:00:00", ny), in: ny) == localDate("2026-05-08 06:30:00", ny))
        let sunday = try alarm("09:00", try AlarmRepeat(parsing: "sun"))
        #expect(sunday.nextOccurrence(after: localDate("2026-05-10 09:00:00", ny), in: ny) == localDate("2026-05-17 09:00:00", ny))
    }

    @Test("a time zone change: the same alarm, the local time of the new zone")
    func zoneChange() throws {
        let a = try alarm("06:30")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let tokyo = TimeZone(identifier: "Asia/Tokyo")!
        let inTokyo = try #require(a.nextOccurrence(after: now, in: tokyo))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = tokyo
        #expect(calendar.component(.hour, from: inTokyo) == 6 && calendar.component(.minute, from: inTokyo) == 30)
        #expect(inTokyo != a.nextOccurrence(after: now, in: ny))
    }

    static let zones = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago", "UTC"]

    @Test("property: the next occurrence is in the future, on an allowed day, at most 7 days (plus a DST hour) ahead")
    func property() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...23), Gen.int(in: 0...59), Gen.int(in: 1...127),
                            Gen.int(in: 0...(5 * 366 * 86_400)), Gen.int(in: 0...(Self.zones.count - 1))) { hour, minute, mask, offset, zoneIndex in
            let zone = TimeZone(identifier: Self.zones[zoneIndex])!
            let days = Set(Weekday.allCases.filter { mask & (1 << ($0.rawValue - 1)) != 0 })
            let repetition: AlarmRepeat = days.count == 7 ? .daily : .days(days)
            let time = try! TimeOfDay(hour: hour, minute: minute)
            let now = Date(timeIntervalSince1970: 1_767_225_600 + Double(offset))  // 2026 … 2030
            let next = Alarm.nextOccurrence(of: time, repeating: repetition, after: now, in: zone)
            #expect(next > now)
            #expect(next.timeIntervalSince(now) <= 7 * 86_400 + 3_600)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let weekday = Weekday(rawValue: calendar.component(.weekday, from: next))!
            #expect(repetition.allows(weekday), "\(next) is a \(weekday.name), not in \(repetition)")
            // At the time, or up to an hour after it when a DST gap swallowed it that day.
            let shown = calendar.component(.hour, from: next) * 60 + calendar.component(.minute, from: next)
            let late = shown - (hour * 60 + minute)
            #expect((0...60).contains(late), "\(next) shows \(shown / 60):\(shown % 60) for \(time)")
        }
    }
}
