import Foundation

/// An instant's fields on the Gregorian calendar in a zone — year, month, day, hour, minute, second — from the
/// zone's offset at that instant and day arithmetic.
///
/// The same fields `Calendar(identifier: .gregorian).dateComponents` gives (CivilTimeTests hold them equal over
/// random instants in many zones), without a `Calendar`: its first use in a process costs a one-shot command a
/// millisecond and a half of run-time type lookups (#29), and the night's date, the clock texts and every instant
/// shown in JSON need nothing but this. (Proleptic Gregorian: Foundation switches to the Julian calendar before
/// 15 October 1582; no instant DoseTap stores or shows is that old.)
public struct CivilTime: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    /// The local fields of `instant` in `zone` (its whole second: a fraction is dropped, as Calendar does). A NaN
    /// instant reads as 1970-01-01T00:00:00 UTC and one beyond ±10¹³ s (about 300,000 years, infinities too) as
    /// that bound, rather than trapping.
    public init(_ instant: Date, in zone: TimeZone) {
        let bound = 1e13
        let raw = instant.timeIntervalSince1970
        let clamped = raw.isNaN ? 0 : Swift.min(Swift.max(raw, -bound), bound)
        let local = Int(clamped.rounded(.down)) + zone.secondsFromGMT(for: Date(timeIntervalSince1970: clamped))
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let seconds = local - days * 86_400
        (year, month, day) = Self.date(days: days)
        hour = seconds / 3600
        minute = seconds % 3600 / 60
        second = seconds % 60
    }

    /// The civil date `days` days after 1970-01-01 (negative: before). The proleptic Gregorian calendar repeats
    /// every 400 years (146,097 days); within an era, years are counted from 1 March so that the leap day is last.
    public static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468  // days from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0...146_096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from 1 March
        let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The days from 1970-01-01 to a civil date (month 1...12; a day past the month's end runs into the next).
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The days of a month (1...12) of a year: February's 29 in a leap year (every fourth, but not a century's
    /// unless the 400th).
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
