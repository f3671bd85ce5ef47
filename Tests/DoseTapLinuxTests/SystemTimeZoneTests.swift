@testable import DoseTapSystemFiles
import Foundation
import PropertyBased
import Testing

/// SystemTimeZone compares a candidate zone's offsets with the C library's at every day of two years; since #29 it
/// looks at every seventh day and only at the days of a week in which either offset changes. These hold that to
/// the plain day-by-day comparison.
@Suite("SystemTimeZone: the day-by-day agreement, looked at weekly")
struct SystemTimeZoneTests {
    /// An offset function that is `base` and changes by `step` at each of `changes` (an index where the new offset
    /// starts).
    static func steps(_ changes: [Int], base: Int = -18_000, step: Int = 3600) -> (Int) -> Int {
        { index in base + step * changes.filter { $0 <= index }.count }
    }

    static func dayByDay(_ count: Int, _ a: (Int) -> Int, _ b: (Int) -> Int) -> Bool {
        (0..<count).allSatisfy { a($0) == b($0) }
    }

    @Test("the same transitions agree; a transition a day early or late, or a day apart in the middle, does not")
    func transitions() {
        let dst = Self.steps([67, 305, 431, 669])  // New York's four changes in two years, roughly
        #expect(SystemTimeZone.agreeDaily(count: 732, dst, dst))
        for moved in [66, 68, 63, 70] {  // inside the week of the change, and at its ends
            #expect(!SystemTimeZone.agreeDaily(count: 732, dst, Self.steps([moved, 305, 431, 669])), "\(moved)")
        }
        // The last change moved to the partial last stretch, or the offsets differing only at `now` (the last index).
        #expect(!SystemTimeZone.agreeDaily(count: 732, dst, Self.steps([67, 305, 431, 729])))
        #expect(!SystemTimeZone.agreeDaily(count: 732, dst, { $0 == 731 ? 0 : dst($0) }))
        // One function changes within a week, the other not: looked at day by day, so found.
        #expect(!SystemTimeZone.agreeDaily(count: 732, Self.steps([]), Self.steps([100, 110], step: 1800)))
        // Different offsets everywhere, or only at the first index.
        #expect(!SystemTimeZone.agreeDaily(count: 732, Self.steps([], base: 0), Self.steps([], base: 3600)))
        #expect(!SystemTimeZone.agreeDaily(count: 732, dst, { $0 == 0 ? 7 : dst($0) }))
    }

    @Test("short and empty spans", arguments: [0, 1, 2, 7, 8, 14, 15])
    func shortSpans(count: Int) {
        let a = Self.steps([3])
        #expect(SystemTimeZone.agreeDaily(count: count, a, a))
        #expect(SystemTimeZone.agreeDaily(count: count, a, Self.steps([4])) == Self.dayByDay(count, a, Self.steps([4])))
        #expect(SystemTimeZone.agreeDaily(count: count, a, Self.steps([count - 1])) == Self.dayByDay(count, a, Self.steps([count - 1])))
    }

    @Test("random transitions at least a week apart, one of them moved by up to ten days: as day by day")
    func randomTransitions() async {
        await propertyCheck(count: 2000, input: Gen.int(in: 0...120), Gen.int(in: 7...250).array(of: 0...8),
                            Gen.int(in: 0...8), Gen.int(in: -10...10)) { first, gaps, which, shift in
            let changes = gaps.reduce(into: [first]) { $0.append($0.last! + $1) }.filter { $0 < 732 }
            var other = changes
            if which < other.count { other[which] += shift }
            let a = Self.steps(changes), b = Self.steps(other.sorted())
            #expect(SystemTimeZone.agreeDaily(count: 732, a, b) == Self.dayByDay(732, a, b), "\(changes) \(other)")
        }
    }
}

/// What makes the weekly look the day-by-day one: no zone's offset changes and changes back within a week. Held
/// against every zone Foundation knows (its tz data, the one SystemTimeZone compares), over the two years
/// SystemTimeZone samples, and the two after.
@Suite("time zones: no offset changes twice within a week")
struct ZoneTransitionSpacingTests {
    @Test("every known zone, noon UTC each day from 1 January this year, four years")
    func transitionsAreAWeekApart() {
        let start = SystemTimeZone.samples(from: Date())[0]
        var crowded: [String] = []
        for identifier in TimeZone.knownTimeZoneIdentifiers {
            guard let zone = TimeZone(identifier: identifier) else { continue }
            var lastChange: Int?
            var previous = zone.secondsFromGMT(for: start)
            for day in 1..<(4 * 366) {
                let offset = zone.secondsFromGMT(for: start.addingTimeInterval(TimeInterval(day) * 86_400))
                guard offset != previous else { continue }
                if let last = lastChange, day - last < 7 { crowded.append("\(identifier): days \(last) and \(day)") }
                lastChange = day
                previous = offset
            }
        }
        #expect(TimeZone.knownTimeZoneIdentifiers.count > 300)
        #expect(crowded.isEmpty, "\(crowded)")
    }
}
