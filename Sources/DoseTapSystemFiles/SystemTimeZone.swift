import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The zone the system really uses, as a Foundation `TimeZone` that can be stored by identifier.
///
/// Foundation understands `TZ` only as an IANA name: a POSIX string (`<+0330>-3:30`,
/// `CET-1CEST,M3.5.0,M10.5.0/3`), a leading colon (`:Europe/Paris`) or a path
/// (`/usr/share/zoneinfo/Asia/Tehran`) silently becomes UTC, and every time is then stored and shown
/// wrong. The C library reads all of them, so it is the reference: Foundation's answer is used when it
/// agrees with the C library's offsets; otherwise the zone is found whose offsets (and so DST rules)
/// agree with the C library's, day by day over two years; a zone without DST becomes a fixed offset
/// (`GMT+0330`, which round-trips through its identifier).
public enum SystemTimeZone {
    private static let cache = Mutex<[String: TimeZone]>([:])

    /// The system's zone now (`TZ`, else `/etc/localtime`).
    public static var current: TimeZone {
        // getenv, as the C library reads it (and without building Foundation's dictionary of every variable).
        let environment = getenv("TZ").map { String(cString: $0) }
        let key = environment ?? "\u{0}unset"
        if let known = cache.withLock({ $0[key] }) { return known }
        let zone = resolve(tz: environment)
        cache.withLock { $0[key] = zone }
        return zone
    }

    /// The C library's offset from UTC at an instant, in seconds east, for the process's `TZ`.
    static func systemOffset(at date: Date) -> Int {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return Int(parts.tm_gmtoff)
    }

    /// Instants to compare offsets at: every day for two years from the start of this year.
    /// (Noon UTC on 1 January from the C library's calendar: a Foundation `Calendar` here cost every one-shot
    /// command a start-up's worth of runtime type lookups, #29.)
    static func samples(from now: Date) -> [Date] {
        var seconds = time_t(now.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        var start = now
        if gmtime_r(&seconds, &parts) != nil {
            (parts.tm_mon, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec) = (0, 1, 12, 0, 0)
            start = Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
        }
        return (0..<731).map { start.addingTimeInterval(TimeInterval($0) * 86_400) } + [now]
    }

    /// Whether two offset functions (seconds east of UTC at the instant of an index of `samples`, 0..<count) agree
    /// at every index, compared the cheap way: every seventh index, and each index in between only where either
    /// function changes from one of those to the next (or in the last, partial, stretch). An offset changes at
    /// its zone's transitions — a few a year, months apart — so this is the day-by-day comparison for every zone
    /// whose offset does not change twice within a week (ZoneTransitionSpacingTests: none does), at about a fifth
    /// of the lookups: the check over two years was a sixth of a one-shot command's start (#29).
    static func agreeDaily(count: Int, _ a: (Int) -> Int, _ b: (Int) -> Int) -> Bool {
        guard count > 0 else { return true }
        var previous = (index: 0, a: a(0), b: b(0))
        guard previous.a == previous.b else { return false }
        while previous.index < count - 1 {
            let index = Swift.min(previous.index + 7, count - 1)
            let next = (index: index, a: a(index), b: b(index))
            guard next.a == next.b else { return false }
            if next.a != previous.a || next.b != previous.b || index - previous.index < 7 {
                for between in (previous.index + 1)..<index where a(between) != b(between) {
                    return false
                }
            }
            previous = next
        }
        return true
    }

    static func resolve(tz: String?, now: Date = Date()) -> TimeZone {
        tzset()
        let instants = samples(from: now)
        // The C library's offsets, each looked up once whichever candidates ask.
        var known: [Int?] = Array(repeating: nil, count: instants.count)
        func system(_ index: Int) -> Int {
            if let offset = known[index] { return offset }
            let offset = systemOffset(at: instants[index])
            known[index] = offset
            return offset
        }
        func matches(_ zone: TimeZone) -> Bool {
            // Quick check at a few instants first (most candidates of the last search fail there), then every day.
            let quick = [instants.count - 1, 0, 14, 195, 380, 560].filter { $0 < instants.count }
            return quick.allSatisfy { zone.secondsFromGMT(for: instants[$0]) == system($0) }
                && agreeDaily(count: instants.count, { zone.secondsFromGMT(for: instants[$0]) }, system)
        }

        // The zone TZ names, then Foundation's current zone (asked only when needed: it reads /etc/localtime).
        var candidates: [() -> TimeZone?] = [{ TimeZone.current }]
        if let tz {
            var name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
            if let range = name.range(of: "zoneinfo/") { name = String(name[range.upperBound...]) }
            candidates.insert({ TimeZone(identifier: name) }, at: 0)
        }
        for candidate in candidates {
            guard let zone = candidate(), matches(zone) else { continue }
            return zone
        }
        // No DST in two years (every day looked at): a fixed offset.
        let offsets = instants.indices.map(system)
        if Set(offsets).count == 1, let fixed = TimeZone(secondsFromGMT: offsets[0]) {
            return fixed
        }
        // DST rules: the named zone whose offsets agree every day.
        for identifier in TimeZone.knownTimeZoneIdentifiers.sorted() {
            guard let zone = TimeZone(identifier: identifier), matches(zone) else { continue }
            return zone
        }
        // Rules no named zone has: the offset in force now (correct tonight; a later DST change is not followed).
        return TimeZone(secondsFromGMT: systemOffset(at: now)) ?? TimeZone(identifier: "UTC")!
    }
}
