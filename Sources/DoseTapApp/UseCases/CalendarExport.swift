import DoseTapCore
import DoseTapCrypto
import DoseTapStore
import Foundation

/// What this install is to the outside: the per-install secret (`install-secret`, 0600, beside the
/// database, read by `MachinePorts.installIdentity`) and the stable values derived from it.
public struct InstallIdentity: Sendable {
    private let secret: [UInt8]

    public init(secret: [UInt8]) { self.secret = secret }

    /// 16 hex digits that name this install in a calendar's UIDs (and say nothing else).
    public var calendarID: String { KeyedHash.hex(key: secret, domain: "ics-uid", value: "", bytes: 8) }

    /// A stable short hash (8 hex digits) of `value` in `domain`, for an anonymised log.
    public func shortHash(domain: String, value: String) -> String {
        KeyedHash.hex(key: secret, domain: "log-" + domain, value: value, bytes: 4)
    }
}

/// `dosetap export ics`: the coming alarms and the dose window as an RFC 5545 calendar, for a phone's or
/// a helper's calendar app (docs/exports.md).
///
/// - Alarms: every occurrence of every enabled alarm from now to `days` days ahead (a `once` alarm once),
///   DST-true as the agent rings them (`Alarm.nextOccurrence`), ten minutes long (how long it rings), with a
///   display alarm at the start.
/// - The dose window: tonight's when Dose 1 is taken and Dose 2 is still to come — the real window, 150 to
///   240 minutes after Dose 1, with display alarms at its opening, at the reminder and at 15 minutes left.
///   Otherwise (no Dose 1 yet tonight, or tonight is done) the **planned** window of the next night that
///   is not over: the window as it would be if Dose 1 is taken at the bedtime of `dosetap setup`, with a
///   display alarm at bedtime (Dose 1) and at the reminder. Both carry the night's date in their UID, so a
///   calendar that imports the file again replaces the planned window with the real one. Without setup
///   there is no planned window (a note says so).
/// - UIDs: `alarm-<id>-<occurrence in UTC>-<install>@dosetap`, `dose-window-<night>-<install>@dosetap`;
///   `<install>` is derived from the per-install secret: the same export twice gives the same UIDs.
public struct CalendarExport: Sendable {
    public static let days: ClosedRange<Int> = 1...366
    public static let defaultDays = 7

    private let store: DataStore
    private let clock: any WallClock
    private let identity: InstallIdentity

    public init(store: DataStore, identity: InstallIdentity, clock: any WallClock) {
        self.store = store
        self.identity = identity
        self.clock = clock
    }

    public struct Export: Sendable, Equatable {
        public var ics: String
        public var events: [ICalendar.Event]
        /// What the person should know (no setup, an unreadable log): one line each, for stderr.
        public var notes: [String]
    }

    public func export(days: Int) throws -> Export {
        guard Self.days.contains(days) else { throw UseCaseError("--days must be from \(Self.days.lowerBound) to \(Self.days.upperBound) (got \(days))") }
        let now = clock.now()
        let zone = clock.timeZone
        let end = now.addingTimeInterval(TimeInterval(days) * 86_400)
        var events: [ICalendar.Event] = []
        var notes: [String] = []
        let database = try store.openForReading()

        // The alarms.
        var alarms: [Alarm] = []
        if let database {
            let loaded = try AlarmRepository(database: database).load()
            alarms = loaded.alarms
            if !loaded.unusable.isEmpty {
                notes.append("\(loaded.unusable.count) alarm\(loaded.unusable.count == 1 ? "" : "s") cannot be read and \(loaded.unusable.count == 1 ? "is" : "are") left out (see dosetap alarm list)")
            }
        }
        for alarm in alarms.sorted(by: { $0.id < $1.id }) where alarm.enabled {
            var after = now
            while let at = alarm.nextOccurrence(after: after, in: zone), at < end {
                events.append(alarmEvent(alarm, at: at, zone: zone))
                if alarm.repetition == .once { break }
                after = at
            }
        }

        // The dose window.
        let settings = database.flatMap { try? SettingsRepository(database: $0).load() } ?? .defaults
        var status: NightStatus?
        if let database {
            do { status = try DoseRepository(database: database).status(now: now, timeZone: zone) } catch {
                notes.append("tonight's dose window is left out: \(error)")
            }
        } else {
            status = DoseLog(events: []).status(at: now, in: zone)
        }
        if let status {
            if let session = status.session, [.waiting, .open, .nearClose].contains(status.phase) {
                events.append(windowEvent(session, zone: zone))
            } else if settings.configured, let bedtime = try? TimeOfDay(parsing: settings.bedtime) {
                let done = status.session?.nightDate
                var planned = bedtime.nextOccurrence(after: now.addingTimeInterval(-DoseRules.windowCloses), in: zone)
                if LocalDate.night(of: planned, in: zone) == done {
                    planned = bedtime.nextOccurrence(after: planned.addingTimeInterval(60), in: zone)
                }
                events.append(plannedEvent(dose1: planned, bedtime: bedtime, target: settings.dose2TargetMinutes, zone: zone))
            } else if !settings.configured {
                notes.append("no night is set up yet (dosetap setup): the calendar has no planned dose window")
            }
        }
        events.sort { ($0.start, $0.uid) < ($1.start, $1.uid) }
        return Export(ics: ICalendar.document(events, timeZone: zone, stamp: now), events: events, notes: notes)
    }

    // MARK: Events

    private func uid(_ parts: String...) -> String {
        (parts + [identity.calendarID]).joined(separator: "-") + "@dosetap"
    }

    private func alarmEvent(_ alarm: Alarm, at: Date, zone: TimeZone) -> ICalendar.Event {
        let clock = ClockText(timeZone: zone)
        return ICalendar.Event(
            uid: uid("alarm", String(alarm.id), ICalendar.utc(at)),
            start: at, end: at.addingTimeInterval(AlarmRingRules.ringDuration),
            summary: "Alarm: \(alarm.label)",
            description: "DoseTap alarm \(alarm.id) at \(clock.time(at)) (\(alarm.repetition)). It rings for up to 10 minutes; stop it with a button, the notification or dosetap alarm stop.",
            reminders: [ICalendar.Reminder(offset: 0, text: "Alarm \(clock.time(at)): \(alarm.label)")])
    }

    private func windowEvent(_ session: NightSession, zone: TimeZone) -> ICalendar.Event {
        let clock = ClockText(timeZone: zone)
        let opens = session.windowOpensAt
        return ICalendar.Event(
            uid: uid("dose-window", session.nightDate.description),
            start: opens, end: session.windowClosesAt,
            summary: "Dose 2 window",
            description: "Dose 1 was taken at \(clock.time(session.dose1.at)). Take Dose 2 from \(clock.time(opens)) to before \(clock.time(session.windowClosesAt)) (150 to 240 minutes after Dose 1); reminder at \(clock.time(session.reminderAt)).",
            reminders: [
                ICalendar.Reminder(offset: 0, text: "Dose window now open"),
                ICalendar.Reminder(offset: session.reminderAt.timeIntervalSince(opens), text: "Time for Dose 2"),
                ICalendar.Reminder(offset: DoseRules.nearClose - DoseRules.windowOpens, text: "URGENT: 15 min to take Dose 2"),
            ])
    }

    private func plannedEvent(dose1: Date, bedtime: TimeOfDay, target: Int, zone: TimeZone) -> ICalendar.Event {
        let clock = ClockText(timeZone: zone)
        let opens = dose1.addingTimeInterval(DoseRules.windowOpens)
        let closes = dose1.addingTimeInterval(DoseRules.windowCloses)
        let reminder = dose1.addingTimeInterval(TimeInterval(target) * 60)
        return ICalendar.Event(
            uid: uid("dose-window", LocalDate.night(of: dose1, in: zone).description),
            start: opens, end: closes,
            summary: "Dose 2 window (planned)",
            description: "Planned from the bedtime of dosetap setup (\(bedtime)): with Dose 1 at \(clock.time(dose1)), Dose 2 is due from \(clock.time(opens)) to before \(clock.time(closes)). The real window is 150 to 240 minutes after the real Dose 1; export again after Dose 1 for its times.",
            reminders: [
                ICalendar.Reminder(offset: -DoseRules.windowOpens, text: "Bedtime \(bedtime): Dose 1"),
                ICalendar.Reminder(offset: reminder.timeIntervalSince(opens), text: "Time for Dose 2 (if Dose 1 was at \(clock.time(dose1)))"),
            ])
    }
}
