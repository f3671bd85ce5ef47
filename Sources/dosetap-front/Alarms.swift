import DoseTapCore
import DoseTapPresenters
import DoseTapStoreFormat
import DoseTapSystemFiles
import Foundation

/// What the front answers, with what goes to standard error before it (the alarm warnings).
struct FrontReply {
    var out: String
    var err: [String] = []
}

/// The alarm screen and the battery behind it, read as the full program reads them (`AlarmUseCases.list`,
/// `BatteryUseCases`, `AlarmWarnings`): the same rows and SQL (DoseTapStoreFormat), the same machine reads
/// (DoseTapSystemFiles: the supplies from sysfs, UPower's configuration, the running agent's records, the wake
/// helper's CHECK) and the same pure code (`AlarmView.list`, `BatteryStatus.read`, `StatusGlance`). Whatever it
/// cannot read as the full program would — no running agent's record where the full program would check the
/// machine itself (ALSA, the RTC), a database error — is nil: the full program answers.
struct FrontAlarms {
    let data: FrontData
    let reader: SQLiteReader
    let now: Date
    let zone: TimeZone

    /// The alarms and the latest ring of each; nil when SQLite fails.
    func alarms() -> (alarms: [Alarm], latest: [Int: AlarmRing])? {
        var alarms: [Alarm] = []
        guard reader.query(AlarmRow.allSQL, row: { columns in
            if case .success(let alarm) = AlarmRow.decode(columns).alarm { alarms.append(alarm) }
            return true
        }) else { return nil }
        var rings: [[StoredValue]] = []
        // The full program reads the rings with `try?`: a failure is no ring, not an error.
        if !reader.query(AlarmRingRow.latestByAlarmSQL, row: { rings.append($0); return true }) { rings = [] }
        return (alarms, AlarmRingRow.latestByAlarm(rings))
    }

    /// What stands between an enabled alarm and its being heard, as the running agent found it: whether it can
    /// wake the machine (asked again of the wake helper when that is its way) and whether it can play the sound.
    /// nil when the full program would check the machine itself (no agent's record, or the helper does not answer).
    struct Findings {
        var wake: WakeUnavailable?
        var sound: SoundUnavailable?
        /// The running agent's word that it cannot write its data (#51).
        var store: String?

        /// `AlarmWarnings.lines`: the wake warning, the sound warning, then the data's.
        var lines: [String] { [wake?.message, sound?.message, store].compactMap { $0 } }
    }

    /// - Parameter sound: whether the sound finding is needed too (the alarm screen's warnings; the status bar's
    ///   glance needs only whether the machine can wake, for the forecast).
    func findings(sound needed: Bool) -> Findings? {
        guard let wake = AgentRecord.wake(dataDirectory: data.folder) else { return nil }
        let store = AgentRecord.storeProblem(dataDirectory: data.folder)
        var sound: SoundUnavailable?
        if needed {
            guard let found = AgentRecord.sound(dataDirectory: data.folder) else { return nil }
            sound = found
        }
        switch wake {
        case .success(.helper(let socket)):
            // `WakeCheck`: the helper may have stopped since the agent looked; if it does not answer, the full
            // program's own check of the machine decides.
            guard WakeHelperClient.ask(socket, "CHECK") == nil else { return nil }
            return Findings(wake: nil, sound: sound, store: store)
        case .success: return Findings(wake: nil, sound: sound, store: store)
        case .failure(let problem): return Findings(wake: problem, sound: sound, store: store)
        }
    }

    /// The battery as `BatteryUseCases.statusNow` reads it: `.some(nil)` when it cannot be read (the full program's
    /// `try?`), nil when the full program should answer (a database error reading the history or the learning).
    func battery(canWake: Bool) -> BatteryStatus?? {
        var learning: StoredValue?
        guard reader.query(SettingRow.valueSQL, texts: [SettingRow.nightLearningKey], row: { learning = $0.first; return true }) else { return nil }
        let night = NightOutlook.commandLine(learning: SettingRow.nightLearning(learning), canWake: canWake, timeZone: zone)
        let history = FrontHistory(reader: reader)
        let status = try? BatteryStatus.read(source: SysfsPowerSupplySource(), history: history, now: now,
                                             powerOff: UPowerConfigFiles.read().policy, night: night)
        guard !history.failed else { return nil }
        return .some(status)
    }

    /// `AlarmUseCases.list().alarms` with the findings used for the battery; nil when the full program should answer.
    func views() -> (views: [AlarmView], findings: Findings?)? {
        guard let (alarms, latest) = alarms() else { return nil }
        guard alarms.contains(where: \.enabled) else {
            return (AlarmView.list(alarms, latestRings: latest, now: now, in: zone, battery: { nil }), nil)
        }
        guard let findings = findings(sound: true), let status = battery(canWake: findings.wake == nil) else { return nil }
        return (AlarmView.list(alarms, latestRings: latest, now: now, in: zone, battery: { status }), findings)
    }

    /// `alarm list --json [--data-dir DIR]`.
    static func list(_ words: [String]) -> FrontReply? {
        guard let words = FrontWords(words, flags: ["--json"], options: ["--data-dir"]), words.flags.contains("--json"),
              let data = FrontData(dataDir: words.value("--data-dir")) else { return nil }
        // No database: no alarms (and nothing to warn about).
        guard data.exists else { return FrontReply(out: JSON.array([]).text) }
        guard let reader = data.open() else { return nil }
        let zone = SystemTimeZone.current
        let front = FrontAlarms(data: data, reader: reader, now: Date(), zone: zone)
        guard let (views, findings) = front.views() else { return nil }
        let warnings = findings?.lines.map { DisplayText.escaped($0, maxLength: 1000) } ?? []
        return FrontReply(out: JSON.array(views.map { $0.json(in: zone) }).text, err: warnings)
    }
}

/// The battery history for `BatteryStatus.read`, read on the front's connection. A failure is remembered: the full
/// program would then show no battery (its `try?`), which the front does not guess — it hands over.
final class FrontHistory: BatteryHistoryStore, @unchecked Sendable {
    private let reader: SQLiteReader
    private(set) var failed = false

    init(reader: SQLiteReader) { self.reader = reader }

    func append(_ sample: BatterySample) throws {
        throw StoreError("the one-shot front does not write")
    }

    func samples(since: Date) throws -> [BatterySample] {
        var samples: [BatterySample] = []
        guard reader.query(BatterySampleRow.systemSinceSQL, [since.timeIntervalSince1970], row: { columns in
            if let sample = BatterySampleRow.decode(columns) { samples.append(sample) }
            return true
        }) else {
            failed = true
            throw StoreError("the battery history could not be read")
        }
        return samples
    }
}

/// `status [--format text|json|waybar|i3blocks] [--data-dir DIR]` (not `--follow`): tonight and the next alarm at
/// a glance, as `StatusCommand.glance` makes it.
enum FrontStatus {
    static func answer(_ words: [String]) -> FrontReply? {
        guard let words = FrontWords(words, flags: [], options: ["--format", "--data-dir"]),
              let data = FrontData(dataDir: words.value("--data-dir")) else { return nil }
        guard let format = StatusGlance.Format(rawValue: words.value("--format") ?? "text") else { return nil }
        // The full program opens the database for writing to read the reminder's battery (creating it when it is
        // missing): only an existing one the front could also write is answered here.
        guard data.exists, access(data.folder, W_OK) == 0, access(data.file, W_OK) == 0, let reader = data.open() else { return nil }
        let now = Date()
        let zone = SystemTimeZone.current
        let front = FrontAlarms(data: data, reader: reader, now: now, zone: zone)
        guard let night = FrontDoseStatus.tonight(data, now: now, zone: zone, reader: reader) else { return nil }
        // The battery is read once, and only when something needs it: the reminder still ahead, or an enabled alarm.
        var findings: FrontAlarms.Findings??
        var status: BatteryStatus??
        func battery() -> BatteryStatus?? {
            if let status { return status }
            if findings == nil { findings = .some(front.findings(sound: false)) }
            guard let found = findings ?? nil else { return nil }
            status = front.battery(canWake: found.wake == nil)
            return status
        }
        var handOver = false
        let nudge = BatteryStatus.reminderNudge(for: night) {
            guard let read = battery() else { handOver = true; return nil }
            return read
        }
        guard !handOver, let (alarms, latest) = front.alarms() else { return nil }
        let views = AlarmView.list(alarms, latestRings: latest, now: now, in: zone) {
            guard let read = battery() else { handOver = true; return nil }
            return read
        }
        guard !handOver else { return nil }
        let glance = StatusGlance.make(night: night, nextAlarm: StatusGlance.nextAlarm(views), reminderNudge: nudge,
                                       storeProblem: AgentRecord.storeProblem(dataDirectory: data.folder))
        return FrontReply(out: glance.rendered(format))
    }
}
