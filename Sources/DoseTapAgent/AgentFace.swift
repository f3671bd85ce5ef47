import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle

/// What the agent hands a face that runs inside it (the web dashboard, #14): the same use cases, the
/// event stream and the scheduling port as every other service — a face never opens the store itself.
public struct AgentContext: Sendable {
    public let paths: DataPaths
    public let configuration: AgentConfiguration
    public let database: DoseTapDatabase
    public let events: EventBus
    /// The dose use case of the agent (the battery nudge after Dose 1 included).
    public let doses: DoseUseCases
    public let alarms: AlarmUseCases
    /// The battery now with its drain (the same reading as the nudge after Dose 1), nil when unreadable.
    public let battery: @Sendable () -> BatteryStatus?
    /// The scheduling port: every timer of a face waits here.
    public let clock: any Scheduling
    public let logger: Logger
    /// A new stream of "the data folder changed" (another process wrote the database), or nil when the
    /// folder cannot be watched.
    public let databaseChanges: @Sendable () -> AsyncStream<Void>?
    /// A number that changes after every write to the data folder (this process's or another's), read now
    /// (`DirectoryWatcher.generation()`): what a face's cache of the store is keyed by; nil when the folder
    /// cannot be watched (then nothing may be cached).
    public var databaseGeneration: (@Sendable () -> Int)?
    /// The feedback settings with this machine's sounds and motor (the settings screens), nil without devices.
    public var feedback: SettingsUseCases?
    /// Hearing a sound before choosing it.
    public var soundPreview: SoundPreview?
    /// The added buttons (the same use cases as `dosetap button …`).
    public var buttons: ButtonUseCases?
    /// The usage alerts of every battery (`dosetap alert …`).
    public var usageAlerts: AlertUseCases?
    /// Stop or Snooze the alarm ringing here, as the buttons answer it (`RingAnswers`): the sound ends at once and the
    /// answer is saved, or kept in memory while the store cannot take it (#51); false when none rings.
    public var answerRing: (@Sendable (_ outcome: AlarmRingOutcome, _ by: AlarmRingEnder) -> Bool)?

    public init(paths: DataPaths, configuration: AgentConfiguration, database: DoseTapDatabase, events: EventBus,
                doses: DoseUseCases, alarms: AlarmUseCases, battery: @escaping @Sendable () -> BatteryStatus?,
                clock: any Scheduling, logger: Logger,
                databaseChanges: @escaping @Sendable () -> AsyncStream<Void>?) {
        self.paths = paths
        self.configuration = configuration
        self.database = database
        self.events = events
        self.doses = doses
        self.alarms = alarms
        self.battery = battery
        self.clock = clock
        self.logger = logger
        self.databaseChanges = databaseChanges
    }
}

/// A face that runs as services of the agent's ServiceGroup. It is built once the agent's use cases exist;
/// a face that cannot start (its socket is taken) throws a one-line error and the agent logs it and runs
/// without it.
public typealias AgentFace = @Sendable (AgentContext) throws -> [any Service]
