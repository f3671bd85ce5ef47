import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

@Suite("TimeOfDay and the next alarm")
struct TimeOfDayTests {
    @Test("valid times parse", arguments: ["00:00", "6:30", "06:30", "23:59", "12:05"])
    func valid(_ text: String) throws {
        let t = try TimeOfDay(parsing: text)
        #expect((0...23).contains(t.hour) && (0...59).contains(t.minute))
    }

    @Test("invalid times are refused", arguments: ["25:00", "24:00", "12:60", "-1:00", "1230", "12:5", "12:345", "", ":", "ab:cd", "12:30:00", " 12:30", "١٢:٣٠"])
    func invalid(_ text: String) {
        #expect(throws: TimeOfDay.ParseError.self) { try TimeOfDay(parsing: text) }
    }

    @Test("the error names the input in one line")
    func message() {
        #expect(TimeOfDay.ParseError(text: "25:00").description
            == "invalid time '25:00': expected HH:MM with hours 00–23 and minutes 00–59")
    }

    let newYork = TimeZone(identifier: "America/New_York")!

    func date(_ text: String, _ tz: TimeZone) -> Date {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = tz
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f.date(from: text)!
    }

    @Test("later today, tomorrow, and exactly now")
    func nextOccurrence() throws {
        let alarm = try TimeOfDay(parsing: "06:30")
        #expect(alarm.nextOccurrence(after: date("2026-11-21 22:00", newYork), in: newYork) == date("2026-11-22 06:30", newYork))
        #expect(alarm.nextOccurrence(after: date("2026-11-22 05:00", newYork), in: newYork) == date("2026-11-22 06:30", newYork))
        // An alarm ringing right now is past: the next one is tomorrow.
        #expect(alarm.nextOccurrence(after: date("2026-11-22 06:30", newYork), in: newYork) == date("2026-11-23 06:30", newYork))
    }

    @Test("DST nights: real elapsed hours, not clock hours")
    func dst() throws {
        let alarm = try TimeOfDay(parsing: "06:30")
        // Spring forward (2026-03-08): 22:00 → 06:30 is 8.5 clock hours but 7.5 real hours.
        let spring = date("2026-03-07 22:00", newYork)
        #expect(alarm.nextOccurrence(after: spring, in: newYork).timeIntervalSince(spring) == 8.5 * 3600 - 3600)
        // Fall back (2026-11-01): one hour longer.
        let fall = date("2026-10-31 22:00", newYork)
        #expect(alarm.nextOccurrence(after: fall, in: newYork).timeIntervalSince(fall) == 8.5 * 3600 + 3600)
        // 02:30 does not exist on the spring-forward night: it rings at the first moment after the gap.
        let missing = try TimeOfDay(parsing: "02:30")
        let rings = missing.nextOccurrence(after: spring, in: newYork)
        #expect(rings > spring && rings.timeIntervalSince(spring) <= 5 * 3600)
    }

    /// Finding: Foundation's nextDate finds nothing in a zone whose offset has seconds (TZ=XXX-0:00:17), and
    /// the fallback was "now + 24 h" — an alarm at a random second of tomorrow.
    @Test("a zone whose offset has seconds: the time itself, today or tomorrow, never now + 24 h")
    func secondsOffset() throws {
        let zone = try #require(TimeZone(secondsFromGMT: 17))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let now = Date(timeIntervalSince1970: 1_795_917_401)  // 2026-11-24 01:56:41 UTC = 01:56:58 local
        let time = try TimeOfDay(parsing: "02:10")
        let next = time.nextOccurrence(after: now, in: zone)
        let c = calendar.dateComponents([.hour, .minute, .second, .day], from: next)
        #expect(c.hour == 2 && c.minute == 10 && c.second == 0)
        #expect(next > now && next.timeIntervalSince(now) < 15 * 60)
        let earlier = try TimeOfDay(parsing: "01:00").nextOccurrence(after: now, in: zone)
        let e = calendar.dateComponents([.hour, .minute, .second], from: earlier)
        #expect(e.hour == 1 && e.minute == 0 && e.second == 0)
        #expect(earlier.timeIntervalSince(now) > 23 * 3600 - 60 && earlier.timeIntervalSince(now) < 24 * 3600)
        let exactly = time.nextOccurrence(after: next, in: zone)
        #expect(exactly == next.addingTimeInterval(86_400), "strictly after")
        let alarm = try Alarm(id: 1, time: time, repetition: .daily)
        #expect(alarm.nextOccurrence(after: now, in: zone) == next)
    }
}
