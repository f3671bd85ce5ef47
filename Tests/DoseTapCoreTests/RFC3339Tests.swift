import DoseTapCore
import DoseTapPresenters
import Foundation
import PropertyBased
import Testing

/// `Date.rfc3339(in:)` is written from the calendar's fields (#29: no ICU formatter in a one-shot command);
/// it must give exactly what `ISO8601DateFormatter` with `.withInternetDateTime` gave before.
@Suite("RFC 3339 text: the same as ISO8601DateFormatter")
struct RFC3339Tests {
    static func reference(_ date: Date, _ zone: TimeZone) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = zone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    static let zones = ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe",
                        "Pacific/Chatham", "America/St_Johns", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Africa/Casablanca"]
        .map { TimeZone(identifier: $0)! } + [TimeZone(secondsFromGMT: 0)!, TimeZone(secondsFromGMT: -12_600)!, TimeZone(secondsFromGMT: 50_400)!]

    @Test("known instants: Z for a zero offset, the sign and minutes of the others, the fraction dropped")
    func known() {
        let instant = Date(timeIntervalSince1970: 1_795_332_600.9994)  // 2026-11-22T07:30:00.9994Z
        #expect(instant.rfc3339(in: TimeZone(identifier: "UTC")!) == "2026-11-22T07:30:00Z")
        #expect(instant.rfc3339(in: TimeZone(identifier: "America/New_York")!) == "2026-11-22T02:30:00-05:00")
        #expect(instant.rfc3339(in: TimeZone(identifier: "Asia/Kathmandu")!) == "2026-11-22T13:15:00+05:45")
        #expect(instant.rfc3339(in: TimeZone(secondsFromGMT: -12_600)!) == "2026-11-22T04:00:00-03:30")
    }

    @Test("a fraction of 0.9995 s or more is the next second, as the formatter rounds to the millisecond first")
    func millisecondRounding() {
        let utc = TimeZone(identifier: "UTC")!
        for fraction in [0.0, 0.4, 0.5, 0.9, 0.999, 0.9994, 0.9995, 0.9996, 0.99999] {
            let date = Date(timeIntervalSince1970: 1_795_332_600 + fraction)
            #expect(date.rfc3339(in: utc) == Self.reference(date, utc), "\(fraction)")
        }
        #expect(Date(timeIntervalSince1970: 1_795_332_600.9996).rfc3339(in: utc) == "2026-11-22T07:30:01Z")
        // ...and that next second may be the next day, in another offset.
        let newYork = TimeZone(identifier: "America/New_York")!
        let beforeChange = Date(timeIntervalSince1970: 1_793_512_799.9997)
        #expect(beforeChange.rfc3339(in: newYork) == Self.reference(beforeChange, newYork))
    }

    @Test("at every DST change of New York in 2026 (both sides of each second)")
    func dstEdges() {
        let zone = TimeZone(identifier: "America/New_York")!
        for edge in [1_772_953_200.0, 1_793_512_800.0] {  // 2026-03-08 07:00Z, 2026-11-01 06:00Z
            for delta in [-1.0, -0.5, 0, 0.5, 1] {
                let date = Date(timeIntervalSince1970: edge + delta)
                #expect(date.rfc3339(in: zone) == Self.reference(date, zone))
            }
        }
    }

    @Test("any instant from 1970 to 2200 in any of the zones: the formatter's text")
    func anyInstant() async {
        await propertyCheck(count: 2000, input: Gen.double(in: 0...7_258_118_400), Gen.int(in: 0...(Self.zones.count - 1))) { seconds, z in
            let date = Date(timeIntervalSince1970: seconds)
            #expect(date.rfc3339(in: Self.zones[z]) == Self.reference(date, Self.zones[z]))
        }
    }
}
