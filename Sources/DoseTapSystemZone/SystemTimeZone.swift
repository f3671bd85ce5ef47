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

    static func agrees(_ zone: TimeZone, at instants: [Date], offsets: [Int]) -> Bool {
        zip(instants, offsets).allSatisfy { zone.secondsFromGMT(for: $0) == $1 }
    }

    static func resolve(tz: String?, now: Date = Date()) -> TimeZone {
        tzset()
        let instants = samples(from: now)
        let offsets = instants.map(systemOffset(at:))
        // Quick check at a few instants first (the common case: Foundation read the same zone).
        let quick = [0, 14, 195, 380, 560, instants.count - 1]
        let quickInstants = quick.map { instants[$0] }
        let quickOffsets = quick.map { offsets[$0] }

        // The zone TZ names, then Foundation's current zone (asked only when needed: it reads /etc/localtime).
        var candidates: [() -> TimeZone?] = [{ TimeZone.current }]
        if let tz {
            var name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
            if let range = name.range(of: "zoneinfo/") { name = String(name[range.upperBound...]) }
            candidates.insert({ TimeZone(identifier: name) }, at: 0)
        }
        for candidate in candidates {
            guard let zone = candidate(), agrees(zone, at: quickInstants, offsets: quickOffsets), agrees(zone, at: instants, offsets: offsets) else { continue }
            return zone
        }
        // No DST in two years: a fixed offset.
        if Set(offsets).count == 1, let fixed = TimeZone(secondsFromGMT: offsets[0]) {
            return fixed
        }
        // DST rules: the named zone whose offsets agree every day.
        for identifier in TimeZone.knownTimeZoneIdentifiers.sorted() {
            guard let zone = TimeZone(identifier: identifier),
                  agrees(zone, at: quickInstants, offsets: quickOffsets),
                  agrees(zone, at: instants, offsets: offsets) else { continue }
            return zone
        }
        // Rules no named zone has: the offset in force now (correct tonight; a later DST change is not followed).
        return TimeZone(secondsFromGMT: systemOffset(at: now)) ?? TimeZone(identifier: "UTC")!
    }
}
