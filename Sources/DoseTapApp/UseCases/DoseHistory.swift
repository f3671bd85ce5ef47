import DoseTapCore
import DoseTapStore
import Foundation

extension DoseUseCases {
    /// The dose use case of a face that names a data folder (the command line): the database is created on
    /// first use, and the machine's battery (`battery`, given the opened store, so the agent's samples give
    /// the drain) gives the nudge.
    public static func open(store: DataStore, clock: any WallClock, battery: (DataStore) -> BatteryUseCases,
                            events: EventBus? = nil) throws -> DoseUseCases {
        let database = try store.open()
        let battery = battery(DataStore(database: database))
        return DoseUseCases(repository: DoseRepository(database: database), clock: clock,
                            battery: { battery.statusNow() }, events: events)
    }

    /// Tonight now.
    public func status() throws -> NightStatus {
        try repository.status(now: clock.now(), timeZone: clock.timeZone)
    }

    /// Whether a skip of Dose 2 would be taken now (so a face asks "Skip Dose 2?" first): Dose 1 is taken
    /// and Dose 2 neither taken nor skipped. Otherwise the skip is refused and the refusal says why.
    public func skipWouldRecord() -> Bool {
        let phase = (try? status().phase) ?? .idle
        return [.waiting, .open, .nearClose, .closed].contains(phase)
    }
}

/// The reads of the dose log (tonight, the history, the entries that cannot be read) and setting those
/// entries aside. A read never creates the database: no data is an empty night.
public struct DoseHistory: Sendable {
    private let store: DataStore
    private let clock: any WallClock

    public init(store: DataStore, clock: any WallClock) {
        self.store = store
        self.clock = clock
    }

    /// Tonight now; an empty night when there is no data yet.
    public func status() throws -> NightStatus {
        let now = clock.now()
        guard let database = try store.openForReading() else {
            return DoseLog(events: []).status(at: now, in: clock.timeZone)
        }
        return try DoseRepository(database: database).status(now: now, timeZone: clock.timeZone)
    }

    /// Which nights to export.
    public enum ExportRange: Sendable, Equatable {
        /// The last `days` nights, tonight included.
        case last(days: Int)
        case all
        /// From and to (inclusive), either open.
        case between(LocalDate?, LocalDate?)
    }

    public struct Export: Sendable, Equatable {
        /// The CSV document (header and one row per night, oldest first).
        public var csv: String
        /// Entries of the log that cannot be read, left out (the gap is to be said, never hidden).
        public var unreadable: [Int64]
    }

    /// The nights in `range` as CSV: Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped.
    public func export(_ range: ExportRange) throws -> Export {
        let now = clock.now()
        let today = LocalDate.night(of: now, in: clock.timeZone)
        let (start, end): (LocalDate?, LocalDate?) = switch range {
        case .last(let days): (today.adding(days: -(days - 1)), today)
        case .all: (nil, nil)
        case .between(let from, let to): (from, to)
        }
        var log = DoseLog(events: [])
        if let database = try store.openForReading() {
            log = try DoseRepository(database: database).wholeLog(now: now)
        }
        return Export(csv: CSVExport.document(log, from: start, to: end, today: today, now: now), unreadable: log.unreadable)
    }

    /// The entries of the dose log set aside because they are dated in the future, and those discarded; nil when
    /// there is no data at all.
    public func setAsideEntries() throws -> (setAside: [DoseEvent], discarded: [DoseEvent])? {
        guard let database = try store.openForReading() else { return nil }
        let log = try DoseRepository(database: database).wholeLog(now: clock.now())
        return (log.setAside, log.discarded)
    }

    /// The entries of the dose log that cannot be read; nil when there is no data at all.
    public func unreadableEntries() throws -> [DoseRepository.RawEntry]? {
        guard let database = try store.openForReading() else { return nil }
        return try DoseRepository(database: database).unreadableEntries()
    }

    /// Sets unreadable entries aside: they stay in the file, the rules stop counting them.
    public func ignoreUnreadable(_ seqs: [Int64]) throws {
        try DoseRepository(database: try store.open()).ignoreUnreadable(seqs, now: clock.now())
    }

    /// Tonight's night is scheduled and the reminder that plays `event` has not rung yet (a change of its
    /// feedback then applies from the next night: the agent fixed tonight's when it scheduled it).
    public func reminderPending(for event: FeedbackEvent) -> Bool {
        guard let kind = ReminderKind.allCases.first(where: { FeedbackEvent(reminder: $0) == event }),
              let database = try? store.openForReading() else { return false }
        let repository = DoseRepository(database: database)
        let now = clock.now()
        guard let session = try? repository.status(now: now, timeZone: clock.timeZone).session, session.isActive(at: now),
              let fired = try? repository.firedReminders(session: session.id) else { return false }
        return ReminderPlanner.reminders(for: session).contains { $0.kind == kind && $0.dueAt > now && !fired.contains($0) }
    }
}

/// Deleting the stored data: every table of `StoredTables.cleared`, named and counted before it goes.
public struct DataUseCases: Sendable {
    private let store: DataStore

    public init(store: DataStore) { self.store = store }

    /// What a clear would delete, in the database it would delete it from.
    public struct Contents: Sendable {
        public var path: String
        /// Every table a clear deletes, with its rows now, in the order the confirmation lists them.
        public var parts: [(table: ClearedTable, rows: Int)]
        fileprivate let database: DoseTapDatabase

        /// The rows of the dose log.
        public var doseEvents: Int { parts.first { $0.table.table == "dose_event" }?.rows ?? 0 }
    }

    /// What is stored; nil when there is no data (or it cannot be opened: nothing a clear could delete).
    public func contents() throws -> Contents? {
        guard let database = try? store.openIfPresent() else { return nil }
        return Contents(path: database.path, parts: try database.clearedCounts(), database: database)
    }

    /// Deletes everything `contents` counted (and whatever was added since). Errors: "could not delete: …".
    public func clear(_ contents: Contents) throws {
        do { try contents.database.clearAll() } catch { throw UseCaseError.unavailable("could not delete: \(error)") }
    }
}
