import DoseTapCore
import DoseTapStore
import Foundation

/// Setting, changing and listing alarms (#11), for the command line and later the web page.
public struct AlarmUseCases: Sendable {
    private let store: DataStore
    private let answerPatience: WritePatience
    private let clock: any WallClock
    private let battery: @Sendable () -> BatteryStatus?
    private let events: EventBus?
    private let sounds: (@Sendable () -> Set<String>)?

    /// - Parameters:
    ///   - battery: the battery now and its drain, or nil where none can be read (no nudge then).
    ///   - sounds: the names of this machine's sounds, to check an alarm's own sound (`dosetap sounds list`);
    ///     without it no sound can be chosen.
    /// - Parameter answerPatience: how long a Stop or Snooze waits for another process's write lock. The agent's
    ///   is brief: its faces then end the ring in memory (`RingAnswers`) instead of ringing on while they wait (#51).
    public init(store: DataStore, clock: any WallClock, battery: @escaping @Sendable () -> BatteryStatus?,
                events: EventBus? = nil, sounds: (@Sendable () -> Set<String>)? = nil, answerPatience: WritePatience = .standard) {
        self.answerPatience = answerPatience
        self.store = store
        self.clock = clock
        self.battery = battery
        self.events = events
        self.sounds = sounds
    }

    /// What a change may set; nil leaves a field as it is.
    public struct Fields: Sendable {
        public var time: String?
        public var label: String?
        public var repetition: String?
        public var enabled: Bool?
        /// A sound of this machine, or "default" for the `alarm` event's.
        public var sound: String?
        /// light, medium, strong, or "default" for the `alarm` event's.
        public var haptics: String?
        public init(time: String? = nil, label: String? = nil, repetition: String? = nil, enabled: Bool? = nil,
                    sound: String? = nil, haptics: String? = nil) {
            self.time = time
            self.label = label
            self.repetition = repetition
            self.enabled = enabled
            self.sound = sound
            self.haptics = haptics
        }
    }

    /// "default" (the `alarm` event's feedback) as the word a person types.
    public static let defaultWord = "default"

    /// Adds an alarm (enabled unless told otherwise; label "Alarm", repeat once by default).
    public func add(_ fields: Fields) throws -> AlarmView {
        guard let time = fields.time else { throw UseCaseError("an alarm needs a time (HH:MM)") }
        var alarm = try Alarm(id: 0, time: try parse(time), label: try label(fields.label ?? "Alarm"),
                              repetition: try repetition(fields.repetition ?? "once"), enabled: fields.enabled ?? true)
        if let text = fields.sound { alarm.sound = try sound(text) }
        if let text = fields.haptics { alarm.haptics = try haptics(text) }
        let repository = AlarmRepository(database: try store.open())
        return view(try save { try repository.add(alarm, now: clock.now()) })
    }

    /// Changes the given fields of alarm `id`.
    public func edit(id: Int, _ fields: Fields) throws -> AlarmView {
        let repository = AlarmRepository(database: try store.open())
        guard var alarm = try repository.find(id: id) else { throw unknown(id) }
        if let time = fields.time { alarm.time = try parse(time) }
        if let text = fields.label { alarm.label = try label(text) }
        if let text = fields.repetition { alarm.repetition = try repetition(text) }
        if let enabled = fields.enabled { alarm.enabled = enabled }
        if let text = fields.sound { alarm.sound = try sound(text) }
        if let text = fields.haptics { alarm.haptics = try haptics(text) }
        let before = try repository.find(id: id)
        // Turned on, or a new time or repeat: only occurrences from now on ring, and a snooze is void.
        let rearmed = alarm.enabled && (before?.enabled != true || before?.time != alarm.time || before?.repetition != alarm.repetition)
        let changed = alarm
        _ = try save { try repository.update(changed, rearmedAt: rearmed ? clock.now() : nil) }
        return view(alarm)
    }

    /// Turns alarm `id` on or off.
    public func setEnabled(id: Int, _ enabled: Bool) throws -> AlarmView {
        try edit(id: id, Fields(enabled: enabled))
    }

    /// Removes alarm `id`; returns what it was.
    @discardableResult
    public func remove(id: Int) throws -> Alarm {
        let repository = AlarmRepository(database: try store.open())
        guard let alarm = try repository.find(id: id) else { throw unknown(id) }
        _ = try save {
            try repository.remove(id: id)
            try AlarmBackupRepository(database: repository.database).removeAll(alarmID: id)
        }
        return alarm
    }

    // MARK: Backups (#12)

    /// An alarm's backups as every face shows them.
    public struct BackupsView: Sendable, Equatable {
        public var alarm: Alarm
        public var enabled: Bool
        public var targets: [BackupTarget]
        /// A word for the person (a device target without a broker), or nil.
        public var note: String?
    }

    /// Where the household stands, for the backup rules: this machine's name and whether a broker is set.
    public struct Household: Sendable, Equatable {
        public var device: String
        public var hasBroker: Bool
        public init(device: String, hasBroker: Bool) {
            self.device = device
            self.hasBroker = hasBroker
        }
    }

    /// The backup list of alarm `id`.
    public func backups(id: Int) throws -> BackupsView {
        let database = try store.open()
        guard let alarm = try AlarmRepository(database: database).find(id: id) else { throw unknown(id) }
        let stored = try AlarmBackupRepository(database: database).backups(alarmID: id)
        return BackupsView(alarm: alarm, enabled: stored.enabled, targets: stored.targets, note: nil)
    }

    /// What `alarm backup ID …` may change.
    public enum BackupChange: Sendable, Equatable {
        case on, off
        case add(String)
        case move(String, to: Int)
        case remove(String)
    }

    /// Changes alarm `id`'s backups. The primary device is never its own backup; a target is in a list once;
    /// `move --to N` counts from 1.
    public func changeBackups(id: Int, _ change: BackupChange, household: Household) throws -> BackupsView {
        let database = try store.open()
        guard let alarm = try AlarmRepository(database: database).find(id: id) else { throw unknown(id) }
        let repository = AlarmBackupRepository(database: database)
        var stored = try repository.backups(alarmID: id)
        var note: String?
        func target(_ text: String) throws -> BackupTarget {
            do { return try BackupTarget(parsing: text) } catch { throw UseCaseError(error.description) }
        }
        switch change {
        case .on, .off:
            stored.enabled = change == .on
            _ = try save { try repository.setEnabled(alarmID: id, stored.enabled) }
        case .add(let text):
            let new = try target(text)
            if case .device(let name) = new, name == household.device {
                throw UseCaseError("\(name) is this machine: it rings the alarm itself; a backup is another device")
            }
            guard !stored.targets.contains(new) else { throw UseCaseError("\(new) is already a backup of alarm \(id)") }
            stored.targets.append(new)
            let targets = stored.targets
            _ = try save { try repository.setTargets(alarmID: id, targets) }
            if case .device = new, !household.hasBroker {
                note = "device targets need the household broker: set [mqtt] url in config.toml (docs/configuration.md)"
            }
        case .move(let text, let position):
            let moved = try target(text)
            guard let index = stored.targets.firstIndex(of: moved) else { throw UseCaseError("\(moved) is not a backup of alarm \(id)") }
            guard (1...stored.targets.count).contains(position) else {
                throw UseCaseError("--to \(position): a position from 1 to \(stored.targets.count)")
            }
            stored.targets.remove(at: index)
            stored.targets.insert(moved, at: position - 1)
            let targets = stored.targets
            _ = try save { try repository.setTargets(alarmID: id, targets) }
        case .remove(let text):
            let gone = try target(text)
            guard stored.targets.contains(gone) else { throw UseCaseError("\(gone) is not a backup of alarm \(id)") }
            stored.targets.removeAll { $0 == gone }
            let targets = stored.targets
            _ = try save { try repository.setTargets(alarmID: id, targets) }
        }
        return BackupsView(alarm: alarm, enabled: stored.enabled, targets: stored.targets, note: note)
    }

    /// `alarm preview ID`: when each backup would fire for the alarm's next occurrence.
    public func preview(id: Int) throws -> (occurrence: Date, slots: [(at: Date, target: BackupTarget)]) {
        let view = try backups(id: id)
        guard let next = view.alarm.nextOccurrence(after: clock.now(), in: clock.timeZone) else {
            throw UseCaseError.refused("alarm \(id) is off: turn it on to preview its backups (dosetap alarm on \(id))")
        }
        return (next, BackupSchedule.slots(view.targets, occurrence: next))
    }

    /// What `stop` and `snooze` answer: the alarm that rang and, for a snooze, when it rings again.
    public struct RingAnswer: Sendable, Equatable {
        public var alarm: Alarm?
        public var ring: AlarmRing
        /// For a backup alarm of the household (#12): the device whose alarm it is.
        public var backupOf: String?

        public init(alarm: Alarm?, ring: AlarmRing, backupOf: String?) {
            self.alarm = alarm
            self.ring = ring
            self.backupOf = backupOf
        }
    }

    /// Stops the alarm ringing now (`dosetap alarm stop`, a notification's Stop, a button's single press).
    public func stopRinging(by ender: AlarmRingEnder) throws -> RingAnswer {
        try endRinging(.stopped, by: ender)
    }

    /// Snoozes the alarm ringing now: it rings again nine minutes later (unlimited).
    public func snoozeRinging(by ender: AlarmRingEnder) throws -> RingAnswer {
        try endRinging(.snoozed, by: ender)
    }

    private func endRinging(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder) throws -> RingAnswer {
        let nothing = UseCaseError.refused("no alarm is ringing")
        guard let database = try store.openIfPresent() else { throw nothing }
        let rings = AlarmRingRepository(database: database)
        let now = clock.now()
        // A row left `ringing` by an agent that died is not a ring: past its ten minutes it cannot be answered.
        guard let ringing = try rings.ringing(), let givesUp = ringing.givesUpAt, givesUp > now else {
            return try endBackupRinging(outcome, by: ender, database: database, now: now)
        }
        let ended: AlarmRing?
        do {
            ended = try rings.end(ringID: ringing.id, outcome: outcome, by: ender, at: now,
                                  snoozeUntil: now.addingTimeInterval(AlarmRingRules.snoozeInterval), patience: answerPatience)
        } catch {
            throw UseCaseError.unavailable("could not save the alarm: \(error)")
        }
        guard let ended else { throw nothing }
        // The service holding the ring ends its sound and publishes `.alarmEnded` (once, whoever answered).
        return RingAnswer(alarm: try AlarmRepository(database: database).find(id: ended.alarmID), ring: ended, backupOf: nil)
    }

    /// A backup alarm of the household ringing here (#12): the agent tells the household (a Stop resolves the
    /// cascade everywhere; a Snooze fires this machine again nine minutes later).
    private func endBackupRinging(_ outcome: AlarmRingOutcome, by ender: AlarmRingEnder, database: DoseTapDatabase, now: Date) throws -> RingAnswer {
        let nothing = UseCaseError.refused("no alarm is ringing")
        let backups = HouseholdRepository(database: database)
        guard let ringing = try backups.ringing(), ringing.givesUpAt > now else { throw nothing }
        let ended: HouseholdRepository.BackupRing?
        do {
            ended = try backups.endRing(id: ringing.id, outcome: outcome, by: ender, at: now, patience: answerPatience)
        } catch {
            throw UseCaseError.unavailable("could not save the alarm: \(error)")
        }
        guard let ended else { throw nothing }
        let occurrence = ended.slot.occurrence
        let time = try? TimeOfDay(parsing: ended.time)
        let alarm = time.flatMap { try? Alarm(id: occurrence.alarmID, time: $0, label: (try? Alarm.validLabel(ended.label)) ?? "Alarm") }
        let ring = AlarmRing(id: -ended.id, alarmID: occurrence.alarmID, kind: .scheduled, dueAt: ended.slot.date, startedAt: ended.startedAt,
                             endedAt: now, outcome: outcome, endedBy: ender,
                             snoozeUntil: outcome == .snoozed ? now.addingTimeInterval(BackupCascade.snoozePause) : nil)
        return RingAnswer(alarm: alarm, ring: ring, backupOf: occurrence.owner)
    }

    /// `[alarm] time` of config.toml, from before alarms could be set: on the agent's first start with it
    /// it becomes a daily alarm labelled `config`, once — removing or editing that alarm sticks, and a
    /// later change of `[alarm] time` is not imported again (manage alarms with `dosetap alarm`).
    /// Returns the new alarm, or nil when the import had already happened.
    public func importConfigAlarm(_ time: TimeOfDay) throws -> AlarmView? {
        let alarm = try Alarm(id: 0, time: time, label: "config", repetition: .daily)
        let database = try store.open()
        guard let stored = try AlarmRepository(database: database).importOnce(alarm, source: "config.toml [alarm] time", now: clock.now())
        else { return nil }
        events?.publish(.settingsChanged)
        return view(stored)
    }

    /// The alarm screen: every alarm with its next occurrence and, when at risk, its nudge; and the rows
    /// that cannot be read (by id, with the reason).
    public func list() throws -> (alarms: [AlarmView], unusable: [AlarmRepository.UnusableAlarm]) {
        guard let database = try store.openForReading() else { return ([], []) }
        let loaded = try AlarmRepository(database: database).load()
        let latest = (try? AlarmRingRepository(database: database).latestByAlarm()) ?? [:]
        return (AlarmView.list(loaded.alarms, latestRings: latest, now: clock.now(), in: clock.timeZone, battery: battery), loaded.unusable)
    }

    func view(_ alarm: Alarm) -> AlarmView {
        view(alarm, status: alarm.enabled ? battery() : nil)
    }

    func view(_ alarm: Alarm, status: BatteryStatus?) -> AlarmView {
        AlarmView.make(alarm, status: status, now: clock.now(), in: clock.timeZone)
    }

    /// Runs one change on the database already opened, then tells subscribers.
    private func save<T>(_ body: () throws -> T) throws -> T {
        do {
            let result = try body()
            events?.publish(.settingsChanged)
            return result
        } catch let error as UseCaseError {
            throw error
        } catch {
            throw UseCaseError.unavailable("could not save the alarm: \(error)")
        }
    }

    private func parse(_ text: String) throws -> TimeOfDay {
        do { return try TimeOfDay(parsing: text) } catch { throw UseCaseError(error.description) }
    }

    private func label(_ text: String) throws -> String {
        do { return try Alarm.validLabel(text) } catch { throw UseCaseError(error.description) }
    }

    /// nil for "default"; else a sound this machine has.
    private func sound(_ text: String) throws -> String? {
        if text == Self.defaultWord { return nil }
        guard let known = sounds?(), known.contains(text) else {
            throw UseCaseError("unknown sound '\(DisplayText.escaped(text, maxLength: 80))': see dosetap sounds list (or default)")
        }
        return text
    }

    /// nil for "default"; else light, medium or strong.
    private func haptics(_ text: String) throws -> HapticIntensity? {
        if text == Self.defaultWord { return nil }
        guard let intensity = HapticIntensity(rawValue: text) else {
            throw UseCaseError("invalid intensity '\(DisplayText.escaped(text, maxLength: 80))': use light, medium, strong or default")
        }
        return intensity
    }

    private func repetition(_ text: String) throws -> AlarmRepeat {
        do { return try AlarmRepeat(parsing: text) } catch { throw UseCaseError(error.description) }
    }

    private func unknown(_ id: Int) -> UseCaseError {
        UseCaseError.notFound("no alarm \(id): see dosetap alarm list")
    }
}
