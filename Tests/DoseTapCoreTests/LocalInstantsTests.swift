@testable import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// When an alarm rings next, where a night starts and the clock a forecast names came from `Calendar` until #29;
/// now from the zone's offsets and day arithmetic (`LocalInstants.swift`). The old code is kept here, word for word,
/// as the reference: on every day without a change of offset the two must agree to the second, in many zones; on
/// the nights a zone changes its clocks the rules (docs/alarms.md) are checked directly — a time the clock skips
/// rings at the jump, a time it shows twice rings at its first showing only.
@Suite("local instants: alarms, nights and clocks without a Calendar")
struct LocalInstantsTests {
    static let zones = CivilTimeTests.zones + ["Pacific/Apia", "America/Havana", "Asia/Beirut", "Europe/London", "Asia/Tehran",
                                               "America/Sao_Paulo", "Europe/Chisinau", "America/Godthab"].map { TimeZone(identifier: $0)! }

    // MARK: The reference: the Calendar code this replaced

    enum Reference {
        static func nextOccurrence(_ time: TimeOfDay, after now: Date, in timeZone: TimeZone) -> Date {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let components = DateComponents(hour: time.hour, minute: time.minute, second: 0)
            if let next = calendar.nextDate(after: now, matching: components, matchingPolicy: .nextTime,
                                            repeatedTimePolicy: .first, direction: .forward) {
                return next
            }
            return byOffset(time, after: now, in: timeZone)
        }

        static func byOffset(_ time: TimeOfDay, after now: Date, in timeZone: TimeZone) -> Date {
            let target = Double(time.hour * 3600 + time.minute * 60)
            var candidate = now
            for _ in 0..<3 {
                let offset = Double(timeZone.secondsFromGMT(for: candidate))
                let local = now.timeIntervalSince1970 + offset
                let midnight = (local / 86_400).rounded(.down) * 86_400
                var next = midnight + target - offset
                if next <= now.timeIntervalSince1970 { next += 86_400 }
                let found = Date(timeIntervalSince1970: next)
                if found == candidate { break }
                candidate = found
            }
            return candidate
        }

        static func alarm(_ time: TimeOfDay, repeating: AlarmRepeat, after now: Date, in timeZone: TimeZone) -> Date {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            var candidate = nextOccurrence(time, after: now, in: timeZone)
            for shift in [3600.0, 1800.0] {
                let earlier = candidate.addingTimeInterval(-shift)
                guard calendar.component(.hour, from: earlier) == time.hour, calendar.component(.minute, from: earlier) == time.minute,
                      calendar.isDate(earlier, inSameDayAs: candidate) else { continue }
                candidate = earlier > now ? earlier : nextOccurrence(time, after: candidate.addingTimeInterval(60), in: timeZone)
                break
            }
            for _ in 0..<8 {
                let weekday = Weekday(rawValue: calendar.component(.weekday, from: candidate)) ?? .mon
                if repeating.allows(weekday) { return candidate }
                candidate = nextOccurrence(time, after: candidate.addingTimeInterval(60), in: timeZone)
            }
            return candidate
        }

        static func nightStart(containing instant: Date, in zone: TimeZone) -> (name: String, start: Date) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            var day = calendar.dateComponents([.year, .month, .day, .hour], from: instant)
            if (day.hour ?? 0) < 18, let earlier = calendar.date(byAdding: .day, value: -1, to: instant) {
                day = calendar.dateComponents([.year, .month, .day, .hour], from: earlier)
            }
            let start = calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: 18)) ?? instant
            let name = String(format: "%04d-%02d-%02d", day.year ?? 0, day.month ?? 0, day.day ?? 0)
            return (name, start)
        }

        static func clockText(_ date: Date, in zone: TimeZone) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let rounded = Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 300).rounded() * 300)
            let parts = calendar.dateComponents([.hour, .minute], from: rounded)
            return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        }
    }

    /// Whether the zone's offset changes within two days of `date` (the nights the rules, not the reference, decide).
    static func nearChange(_ date: Date, _ zone: TimeZone) -> Bool {
        let offsets = stride(from: -172_800.0, through: 172_800, by: 3600).map { zone.secondsFromGMT(for: date.addingTimeInterval($0)) }
        return Set(offsets).count > 1
    }

    static let repeats: [AlarmRepeat] = [.once, .daily, .days([.mon]), .days([.sat, .sun]), .days([.mon, .tue, .wed, .thu, .fri]),
                                         .days([.sun]), .days([.wed, .fri])]

    // MARK: Against the reference

    @Test("any instant from 2000 to 2040, any time of day, any zone: the calendar's next occurrence away from a change of offset")
    func nextOccurrenceMatchesCalendar() async throws {
        await propertyCheck(count: 4000, input: Gen.double(in: 946_684_800...2_208_988_800), Gen.int(in: 0...(Self.zones.count - 1)),
                            Gen.int(in: 0...23), Gen.int(in: 0...59)) { seconds, z, hour, minute in
            let zone = Self.zones[z]
            let now = Date(timeIntervalSince1970: seconds)
            let time = try! TimeOfDay(hour: hour, minute: minute)
            guard !Self.nearChange(now, zone) else { return }
            #expect(time.nextOccurrence(after: now, in: zone) == Reference.nextOccurrence(time, after: now, in: zone),
                    "\(time) after \(seconds) in \(zone.identifier)")
        }
    }

    @Test("any alarm, any repeat, any zone: the calendar's next ring away from a change of offset")
    func alarmMatchesCalendar() async throws {
        await propertyCheck(count: 3000, input: Gen.double(in: 946_684_800...2_208_988_800), Gen.int(in: 0...(Self.zones.count - 1)),
                            Gen.int(in: 0...(24 * 60 - 1)), Gen.int(in: 0...(Self.repeats.count - 1))) { seconds, z, minutes, r in
            let zone = Self.zones[z]
            let now = Date(timeIntervalSince1970: seconds)
            let time = try! TimeOfDay(hour: minutes / 60, minute: minutes % 60)
            let ours = Alarm.nextOccurrence(of: time, repeating: Self.repeats[r], after: now, in: zone)
            guard !Self.nearChange(now, zone), !Self.nearChange(ours, zone) else { return }
            #expect(ours == Reference.alarm(time, repeating: Self.repeats[r], after: now, in: zone),
                    "\(time) \(Self.repeats[r]) after \(seconds) in \(zone.identifier)")
        }
    }

    @Test("a day the zone skipped whole has no night: 31 December 2011 00:00 in Apia belongs to the night of the 29th")
    func skippedDay() {
        let apia = TimeZone(identifier: "Pacific/Apia")!
        for seconds: TimeInterval in [1_325_239_200, 1_325_239_200 + 3600, 1_325_239_200 + 17 * 3600] { // 31 Dec 00:00, 01:00, 17:00 local
            let instant = Date(timeIntervalSince1970: seconds)
            #expect(SleepHabits.nightStart(containing: instant, in: apia).name == "2011-12-29", "\(seconds)")
            #expect(SleepHabits.nightStart(containing: instant, in: apia).name == Reference.nightStart(containing: instant, in: apia).name)
        }
        // 18:00 on the 31st starts that day's own night.
        #expect(SleepHabits.nightStart(containing: Date(timeIntervalSince1970: 1_325_239_200 + 18 * 3600), in: apia).name == "2011-12-31")
    }

    @Test("the night an instant belongs to and the clock a forecast names: the calendar's, in every zone, any instant")
    func nightsAndClocksMatchCalendar() async throws {
        await propertyCheck(count: 4000, input: Gen.double(in: 946_684_800...2_208_988_800), Gen.int(in: 0...(Self.zones.count - 1))) { seconds, z in
            let zone = Self.zones[z]
            let instant = Date(timeIntervalSince1970: seconds)
            #expect(NightAssumption.clockText(instant, in: zone) == Reference.clockText(instant, in: zone), "\(seconds) \(zone.identifier)")
            let ours = SleepHabits.nightStart(containing: instant, in: zone)
            let reference = Reference.nightStart(containing: instant, in: zone)
            #expect(ours.name == reference.name, "\(seconds) \(zone.identifier)")
            if !Self.nearChange(reference.start, zone) {
                #expect(ours.start == reference.start, "\(seconds) \(zone.identifier)")
            }
        }
    }

    // MARK: The nights the clocks change, by the rules

    /// The next `count` changes of offset of `zone` after 2020 (Foundation's own list of transitions).
    static func changes(_ zone: TimeZone, count: Int) -> [Date] {
        var out: [Date] = []
        var at = Date(timeIntervalSince1970: 1_577_836_800)
        while out.count < count, let next = zone.nextDaylightSavingTimeTransition(after: at) {
            out.append(next)
            at = next
        }
        return out
    }

    /// The local reading an instant shows, in minutes of its local day, and that day.
    static func reading(_ date: Date, _ zone: TimeZone) -> (day: Int, minute: Int) {
        let c = CivilTime(date, in: zone)
        return (CivilTime.days(year: c.year, month: c.month, day: c.day), c.hour * 60 + c.minute)
    }

    @Test("on the nights clocks change: the time rings when first shown, or at the jump when skipped; never twice in a night")
    func changeNightsByTheRules() throws {
        var checked = 0
        for zone in Self.zones {
            for change in Self.changes(zone, count: 12) {
                let before = zone.secondsFromGMT(for: change.addingTimeInterval(-1))
                let after = zone.secondsFromGMT(for: change)
                let jump = after - before
                let localAtChange = Self.reading(change, zone)
                // Every time of day within an hour and a half of the change, read from just before it to a day earlier.
                for delta in stride(from: -90, through: 90, by: 15) {
                    let minuteOfDay = ((localAtChange.minute + delta) % 1440 + 1440) % 1440
                    let time = try TimeOfDay(hour: minuteOfDay / 60, minute: minuteOfDay % 60)
                    for readAt in [-86_400.0, -7200, -3601, -1800, -1] {
                        let now = change.addingTimeInterval(readAt)
                        let next = time.nextOccurrence(after: now, in: zone)
                        #expect(next > now)
                        // Nothing between now and `next` shows the time (it is the first moment after now that does,
                        // or the jump over it); `next` shows it, or is the jump over it.
                        let shown = Self.reading(next, zone)
                        if shown.minute == minuteOfDay {
                            // The first showing on its day: a second earlier the clock did not show it that day.
                            let earlier = stride(from: next.timeIntervalSince1970 - 60, through: max(now.timeIntervalSince1970, next.timeIntervalSince1970 - 2 * 3600), by: -60)
                            for t in earlier where Double(t) > now.timeIntervalSince1970 {
                                let r = Self.reading(Date(timeIntervalSince1970: t), zone)
                                #expect(!(r.day == shown.day && r.minute == minuteOfDay), "\(time) shown before \(next) in \(zone.identifier)")
                            }
                        } else {
                            // Skipped: `next` is the change itself, and the time lies in the gap it jumped over.
                            #expect(jump > 0 && next == change, "\(time) after \(now) in \(zone.identifier): \(next)")
                        }
                        // A fall-back repeats the hour: once its first showing has passed, the next is the next day's.
                        if jump < 0 {
                            let first = time.firstInstant(onLocalDay: shown.day, in: zone)
                            #expect(next == first || next > first.addingTimeInterval(3600 * 12), "\(time) in \(zone.identifier)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 10_000)
    }

    @Test("known nights: New York's spring-forward and fall-back, Lord Howe's half hour, a zone offset by seconds")
    func knownNights() throws {
        let newYork = TimeZone(identifier: "America/New_York")!
        // 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z. 02:30 does not exist: it rings at 03:00 EDT.
        let springEve = Date(timeIntervalSince1970: 1_772_935_200)  // 2026-03-08 02:00Z = 21:00 EST on the 7th
        #expect(try TimeOfDay(hour: 2, minute: 30).nextOccurrence(after: springEve, in: newYork) == Date(timeIntervalSince1970: 1_772_953_200))
        #expect(try TimeOfDay(hour: 3, minute: 0).nextOccurrence(after: springEve, in: newYork) == Date(timeIntervalSince1970: 1_772_953_200))
        #expect(try TimeOfDay(hour: 1, minute: 59).nextOccurrence(after: springEve, in: newYork) == Date(timeIntervalSince1970: 1_772_953_140))
        // 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00Z. 01:30 shows at 05:30Z (EDT) and at 06:30Z (EST): the first.
        let fallEve = Date(timeIntervalSince1970: 1_793_494_800)  // 2026-11-01 01:00Z = 21:00 EDT on Oct 31
        let halfPastOne = try TimeOfDay(hour: 1, minute: 30)
        #expect(halfPastOne.nextOccurrence(after: fallEve, in: newYork) == Date(timeIntervalSince1970: 1_793_511_000))
        // Read between the two showings: the next is the next day's 01:30 EST.
        let between = Date(timeIntervalSince1970: 1_793_512_800)  // 06:00Z = 01:00 EST, after 01:30 EDT
        #expect(halfPastOne.nextOccurrence(after: between, in: newYork) == Date(timeIntervalSince1970: 1_793_601_000))
        #expect(Alarm.nextOccurrence(of: halfPastOne, repeating: .daily, after: between, in: newYork) == Date(timeIntervalSince1970: 1_793_601_000))
        // Lord Howe sets its clock back half an hour: 01:45 shows twice, 30 minutes apart; the first rings.
        let lordHowe = TimeZone(identifier: "Australia/Lord_Howe")!
        let change = Self.changes(lordHowe, count: 12).first { lordHowe.secondsFromGMT(for: $0) < lordHowe.secondsFromGMT(for: $0.addingTimeInterval(-1)) }!
        let repeated = try TimeOfDay(hour: 1, minute: 45)
        let first = change.addingTimeInterval(-15 * 60)
        #expect(repeated.nextOccurrence(after: change.addingTimeInterval(-3600), in: lordHowe) == first)
        #expect(CivilTime.instants(showing: CivilTime.localDays(of: first, in: lordHowe) * 86_400 + 105 * 60, in: lordHowe).count == 2)
        // A zone whose offset has seconds (Foundation's Calendar finds nothing there).
        let odd = TimeZone(secondsFromGMT: 17)!
        let now = Date(timeIntervalSince1970: 1_796_000_000)
        let next = try TimeOfDay(hour: 6, minute: 30).nextOccurrence(after: now, in: odd)
        #expect(next == Reference.byOffset(try TimeOfDay(hour: 6, minute: 30), after: now, in: odd))
        #expect(Self.reading(next, odd).minute == 390 && CivilTime(next, in: odd).second == 0)
    }

    @Test("weekdays of local dates: 1970-01-01 was a Thursday, and every seventh day is the same weekday")
    func weekdays() async {
        #expect(CivilTime.weekday(ofLocalDay: 0) == .thu)
        #expect(CivilTime.weekday(ofLocalDay: -1) == .wed)
        #expect(CivilTime.weekday(ofLocalDay: 3) == .sun)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = .gmt
        await propertyCheck(count: 1000, input: Gen.int(in: -200_000...200_000)) { days in
            let weekday = utc.component(.weekday, from: Date(timeIntervalSince1970: Double(days) * 86_400))
            #expect(CivilTime.weekday(ofLocalDay: days).rawValue == weekday)
        }
    }
}
