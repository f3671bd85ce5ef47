import Foundation

/// One night of the machine, as the agent saw it: when it was awake in the evening, and when it went to
/// sleep for the night. Minutes count real elapsed time from 18:00 local of the evening (`night`).
public struct NightRecord: Sendable, Equatable, Codable {
    /// The evening's local date, "yyyy-MM-dd" (a night belongs to the date it started, 18:00 boundary).
    public var night: String
    /// The first minute it was seen awake (0…720).
    public var awakeFrom: Int
    /// The last minute it was known awake (0…720; 720 is 06:00: awake through the night).
    public var awakeUntil: Int
    /// When the night's sleep began: the first suspend of at least two hours that started before 06:00.
    public var onset: Int?

    public init(night: String, awakeFrom: Int, awakeUntil: Int, onset: Int? = nil) {
        self.night = night
        self.awakeFrom = awakeFrom
        self.awakeUntil = awakeUntil
        self.onset = onset
    }

    /// When it fell asleep for the night: `onset`, or nil for "awake all night" (`.max`), or unknown
    /// (the agent stopped seeing the machine before 06:00 without a suspend: off, or not running).
    var sleptAt: Int? {
        if let onset { return onset }
        return awakeUntil >= SleepHabits.nightMinutes ? Int.max : nil
    }
}

/// What the forecast assumes the machine will do until the moment.
public enum SleepPlan: Sendable, Equatable {
    /// Awake until the moment, and why ("it cannot wake itself for the alarm", "not enough nights yet").
    case awake(because: String)
    /// Asleep from this instant (now or later) until the moment wakes it.
    case sleeps(from: Date, because: String)
}

/// What the agent knows of the machine tonight, beyond its history.
public struct NightConditions: Sendable, Equatable, Codable {
    /// The sleep guard's finding: false when the machine cannot wake itself for the alarm (then it must
    /// be forecast awake: a sleeping machine that cannot wake rings nothing, and a safe verdict would lull).
    public var canWake: Bool
    /// Programs holding a logind `sleep` inhibitor in block mode: the machine cannot suspend while they do.
    public var sleepBlockedBy: [String]
    /// logind's `HandleLidSwitch` (for the explanation), when read.
    public var lidSwitch: String?
    /// logind's `IdleAction` and `IdleActionUSec` in seconds, when read.
    public var idleAction: String?
    public var idleActionSeconds: Double?
    /// The machine is going to sleep now (`PrepareForSleep(true)`): the re-check forecasts asleep.
    public var goingToSleep: Bool

    public init(canWake: Bool = true, sleepBlockedBy: [String] = [], lidSwitch: String? = nil, idleAction: String? = nil,
                idleActionSeconds: Double? = nil, goingToSleep: Bool = false) {
        self.canWake = canWake
        self.sleepBlockedBy = sleepBlockedBy
        self.lidSwitch = lidSwitch
        self.idleAction = idleAction
        self.idleActionSeconds = idleActionSeconds
        self.goingToSleep = goingToSleep
    }
}

/// The machine's own history of evenings: did it suspend for the night, and when.
///
/// The plan for tonight (`plan`): among the recent nights on which the machine was awake at this time of
/// the evening, how long it then stayed awake; the forecast takes a late quantile (`quantile`, caution: a
/// machine that stays up late on one evening in five is planned awake that long), and a machine that
/// was awake all night on that many evenings — a Pi, a laptop left running — is planned awake. With fewer
/// than `minimumNights` such nights, awake: it has not shown yet that it sleeps. As the evening goes on
/// the plan is made again from the nights still awake at the new time, so a machine up later than usual
/// is forecast later, reading by reading.
public struct SleepHabits: Sendable, Equatable, Codable {
    /// 18:00 → 06:00: the part of a night in which its sleep begins.
    public static let nightMinutes = 12 * 60
    public static let minimumNights = 7
    public static let kept = 42
    public static let quantile = 0.8
    /// A suspend this long or longer, begun in the night, is the night's sleep.
    public static let nightSleep: TimeInterval = 2 * 3600

    public internal(set) var nights: [NightRecord] = []

    public init(nights: [NightRecord] = []) {
        self.nights = Array(nights.sorted { $0.night < $1.night }.suffix(Self.kept))
    }

    /// The machine was awake from `since` (when it was seen continuously awake since then) to `instant`.
    public mutating func awake(at instant: Date, since: Date? = nil, in zone: TimeZone) {
        let start = min(since ?? instant, instant)
        // A longer awake stretch than two days is clipped: only its last two nights matter here.
        let from = max(start, instant.addingTimeInterval(-2 * 86_400))
        var key = Self.nightStart(containing: from, in: zone)
        while key.start <= instant {
            let lo = max(0, Self.minutes(from.timeIntervalSince(key.start)))
            let hi = Self.minutes(instant.timeIntervalSince(key.start))
            if lo < Self.nightMinutes {
                update(key.name) { record in
                    record.awakeFrom = min(record.awakeFrom, lo)
                    record.awakeUntil = max(record.awakeUntil, min(hi, Self.nightMinutes))
                }
                    ?? insert(NightRecord(night: key.name, awakeFrom: lo, awakeUntil: min(hi, Self.nightMinutes)))
            }
            key = Self.nightStart(containing: key.start.addingTimeInterval(86_400 + 3600), in: zone)
        }
    }

    /// The machine slept from `start` to `end`: a night's sleep when long enough and begun in the night.
    public mutating func slept(from start: Date, hours: Double, in zone: TimeZone) {
        guard hours * 3600 >= Self.nightSleep else { return }
        let key = Self.nightStart(containing: start, in: zone)
        let at = Self.minutes(start.timeIntervalSince(key.start))
        guard at < Self.nightMinutes else { return }
        if update(key.name, { record in
            if record.onset == nil { record.onset = at }
            record.awakeFrom = min(record.awakeFrom, at)
        }) == nil {
            insert(NightRecord(night: key.name, awakeFrom: at, awakeUntil: at, onset: at))
        }
    }

    /// What the machine will most likely do from `now` until `moment` (caution: a late quantile).
    public func plan(now: Date, moment: Date, conditions: NightConditions, in zone: TimeZone) -> SleepPlan {
        if !conditions.canWake { return .awake(because: "it cannot wake itself for the alarm") }
        if let blocker = conditions.sleepBlockedBy.first {
            return .awake(because: "\(DisplayText.escaped(blocker, maxLength: 40)) keeps it from sleeping")
        }
        if conditions.goingToSleep { return .sleeps(from: now, because: "it is going to sleep now") }
        let tonight = Self.nightStart(containing: now, in: zone)
        let done = nights.filter { $0.night < tonight.name }.suffix(Self.kept)
        var base: Date
        var at: Int
        let elapsed = Self.minutes(now.timeIntervalSince(tonight.start))
        if elapsed < Self.nightMinutes {
            base = tonight.start
            at = elapsed
        } else {
            // Day: tonight is the evening to come; any night it was seen in counts.
            base = Self.nightStart(containing: tonight.start.addingTimeInterval(86_400 + 3600), in: zone).start
            at = 0
        }
        let waits: [Int] = done.compactMap { record in
            guard let slept = record.sleptAt else { return nil }
            if at == 0 { return slept == Int.max ? Int.max : max(0, slept) }
            guard record.awakeFrom <= at, slept > at else { return nil }
            return slept == Int.max ? Int.max : slept - at
        }
        guard waits.count >= Self.minimumNights else {
            return .awake(because: "\(waits.count) of the \(Self.minimumNights) nights needed to learn when it sleeps")
        }
        let sorted = waits.sorted()
        // More than `quantile` of the nights at or before it: with one evening in five awake all night, awake.
        let wait = sorted[min(sorted.count - 1, Int(Self.quantile * Double(sorted.count)))]
        if wait == Int.max { return .awake(because: "on some evenings like this it stayed awake all night") }
        let from = max(now, base.addingTimeInterval(Double(at + wait) * 60))
        if from >= moment { return .awake(because: "it is seldom asleep by then") }
        return .sleeps(from: from, because: "as on most evenings")
    }

    private mutating func update(_ name: String, _ body: (inout NightRecord) -> Void) -> Void? {
        guard let index = nights.lastIndex(where: { $0.night == name }) else { return nil }
        body(&nights[index])
        return ()
    }

    private mutating func insert(_ record: NightRecord) {
        nights.append(record)
        nights.sort { $0.night < $1.night }
        if nights.count > Self.kept { nights.removeFirst(nights.count - Self.kept) }
    }

    static func minutes(_ seconds: TimeInterval) -> Int {
        guard seconds.isFinite else { return 0 }
        return Int((seconds / 60).rounded(.down))
    }

    /// The evening a moment belongs to: 18:00 local of its date, or of the day before when earlier (day arithmetic
    /// on the zone's offsets, `LocalInstants.swift`: no `Calendar`, #29).
    static func nightStart(containing instant: Date, in zone: TimeZone) -> (name: String, start: Date) {
        let local = CivilTime(instant, in: zone)
        var day = CivilTime.days(year: local.year, month: local.month, day: local.day)
        if local.hour < 18 { day -= 1 }
        // A day the zone skipped whole (Samoa went from 29 to 31 December 2011) had no evening: the night is the one
        // of the day before, as the calendar says (a property test drew 31 December 00:00 in Apia).
        for _ in 0..<2 where CivilTime.instants(showing: day * 86_400 + 12 * 3600, in: zone).isEmpty
            && CivilTime.instants(showing: day * 86_400 + 18 * 3600, in: zone).isEmpty {
            day -= 1
        }
        let start = CivilTime.instantPreservingTime(showing: day * 86_400 + 18 * 3600, in: zone)
        let (year, month, date) = CivilTime.date(days: day)
        return ("\(year.zeroPadded(4))-\(month.zeroPadded(2))-\(date.zeroPadded(2))", Date(timeIntervalSince1970: Double(start)))
    }
}
