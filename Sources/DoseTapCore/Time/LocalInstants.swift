import Foundation

/// Local wall-clock readings and the instants that show them, from the zone's offsets and day arithmetic: when
/// an alarm rings next, where a night starts, the clock a forecast names (#29). `Calendar` gave them before;
/// its first use costs a one-shot command (`dosetap alarm list --json`, `status --format waybar`) a millisecond and
/// a half of run-time type lookups, a third of its whole start. `LocalInstantsTests` hold these to the rules
/// below and to `Calendar` on every ordinary day in many zones.
///
/// "Local seconds" count from 1970-01-01T00:00 on the local clock: `days × 86,400 + seconds of the day`. An
/// instant shows the local seconds `t + offset(t)`. A reading shows once on an ordinary day, twice in the hour
/// a fall-back repeats (the earlier showing comes first), and never in a spring-forward gap.
extension CivilTime {
    /// The local date of `instant` in `zone`, as days since 1970-01-01.
    public static func localDays(of instant: Date, in zone: TimeZone) -> Int {
        let c = CivilTime(instant, in: zone)
        return days(year: c.year, month: c.month, day: c.day)
    }

    /// The weekday of a local date (days since 1970-01-01, a Thursday).
    public static func weekday(ofLocalDay days: Int) -> Weekday {
        Weekday(rawValue: ((days % 7 + 7 + 4) % 7) + 1) ?? .thu
    }

    /// The zone's offset at the whole second `t` (seconds since 1970).
    static func offset(_ t: Int, _ zone: TimeZone) -> Int {
        zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))
    }

    /// The offsets the zone has within two days of `local`: no zone changes its offset twice within a week
    /// (`ZoneTransitionSpacingTests`), so these are every offset an instant showing `local` can have.
    static func nearbyOffsets(_ local: Int, _ zone: TimeZone) -> [Int] {
        let around = [offset(local - 172_800, zone), offset(local + 172_800, zone), offset(local - offset(local, zone), zone)]
        return Array(Set(around)).sorted()
    }

    /// Every instant (seconds since 1970) whose local clock in `zone` shows `local`, earliest first: one, two in a
    /// fall-back's repeated hour, none in a spring-forward gap.
    public static func instants(showing local: Int, in zone: TimeZone) -> [Int] {
        nearbyOffsets(local, zone).map { local - $0 }.filter { offset($0, zone) == local - $0 }.sorted()
    }

    /// The first instant showing `local`; in a gap, the first instant after it — the moment the clock jumps (an
    /// alarm at 02:30 on a spring-forward night rings at 03:00, `Calendar`'s `.nextTime`).
    public static func firstInstant(showing local: Int, in zone: TimeZone) -> Int {
        if let first = instants(showing: local, in: zone).first { return first }
        return gapEnd(local, zone)
    }

    /// The first instant showing `local`; in a gap, the instant as far past the gap's start as `local` is (02:30 on
    /// a spring-forward night is 03:30, as `Calendar.date(from:)` reads it).
    public static func instantPreservingTime(showing local: Int, in zone: TimeZone) -> Int {
        if let first = instants(showing: local, in: zone).first { return first }
        // Before the gap the offset is the smaller one: `local` at that offset lies past the jump.
        return local - (nearbyOffsets(local, zone).first ?? offset(local, zone))
    }

    /// The moment the clock jumps over `local` (the first instant whose local seconds exceed it).
    static func gapEnd(_ local: Int, _ zone: TimeZone) -> Int {
        let offsets = nearbyOffsets(local, zone)
        guard let small = offsets.first, let large = offsets.last, small < large else {
            // No gap after all (an offset changing twice within two days): the reading at the zone's offset there.
            return local - offset(local - offset(local, zone), zone)
        }
        // Before the jump, `t + offset(t)` is below `local`; after it, above. Bisect to the second.
        var below = local - large
        var above = local - small
        guard below + offset(below, zone) < local, above + offset(above, zone) > local else { return above }
        while above - below > 1 {
            let middle = below + (above - below) / 2
            if middle + offset(middle, zone) > local { above = middle } else { below = middle }
        }
        return above
    }
}

extension TimeOfDay {
    /// The local seconds of this time on a local date.
    func localSeconds(onLocalDay days: Int) -> Int {
        days * 86_400 + hour * 3600 + minute * 60
    }

    /// When local clocks in `zone` first show this time on the local date `days` (in a spring-forward gap: the
    /// moment after the gap; in a fall-back's repeated hour: its first showing).
    public func firstInstant(onLocalDay days: Int, in zone: TimeZone) -> Date {
        Date(timeIntervalSince1970: Double(CivilTime.firstInstant(showing: localSeconds(onLocalDay: days), in: zone)))
    }
}
