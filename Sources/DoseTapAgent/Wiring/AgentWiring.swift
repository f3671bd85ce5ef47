import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import DoseTapLinux
import DoseTapStore
import DoseTapVersion
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// The agent's parts, built once in `init` (the configuration, the store, udev, the event bus, the one battery
/// use case, the feedback devices, the alarms and the household), and the services of each area as a named
/// step of `Agent.run`.
final class AgentWiring: Sendable {
    typealias Services = [ServiceGroupConfiguration.ServiceConfiguration]

    let paths: DataPaths
    let logger: Logger
    let configuration: ConfigurationHolder
    let database: DoseTapDatabase
    let store: DataStore
    let udev: UdevClient
    let source: UdevPowerSupplySource
    let notifier: SystemdNotifier
    let hangups: UnixSignalsSequence
    /// What happened, for every subscriber (the scheduler, the battery nudge, Home Assistant, the dashboard).
    let events = EventBus()
    /// The level at which the machine stops itself (UPower's PercentageAction) counts as empty (#11).
    let powerOff: PowerOffPolicy
    let night: NightWatch
    let history: BatterySampleRepository
    /// The battery as every part of the agent reads it: one use case, one power-off level, one night (#26).
    let battery: BatteryUseCases
    let watcher: DirectoryWatcher?
    let pages: ResidentPages?
    let devices: FeedbackDevices
    let feedback: FeedbackNotifier
    /// The overnight re-check of every enabled alarm (battery-nudge by the deadline, #52); the sleep guard tells it
    /// of a suspend.
    let risk: AlarmRiskMonitor
    let doseRepository: DoseRepository
    let doses: DoseUseCases
    let alarmUseCases: AlarmUseCases
    let ringer: AlarmBell
    let alarms: AlarmService
    let identity: HouseholdIdentity
    let broker: Result<HouseholdLink, HouseholdLink.Refused>?
    let household: HouseholdService
    let ringing: RingAnswers
    let usageAlerts: AlertUseCases
    /// Whether the data can be written, for every service that writes in the background (#51).
    let storeHealth: StoreHealth

    init(paths: DataPaths, logger: Logger) async throws {
        self.paths = paths
        self.logger = logger
        // The files mapped now (the executable and its libraries) are those whose clean pages are given back
        // after the agent's larger pieces of work (PageReleaseService); DOSETAP_RELEASE_PAGES=0 keeps them (for
        // measurements). It was off by default while the loop could deadlock on a lock it held itself — jobs of
        // the global executor then ran isolated to the loop, and a release's few ms made that likely; they run
        // on the generic executor now (EpollLoop, docs/performance.md).
        pages = ProcessInfo.processInfo.environment["DOSETAP_RELEASE_PAGES"] == "0" ? nil : ResidentPages()
        configuration = ConfigurationHolder(try AgentConfiguration.load(from: paths.configFile))
        // Started on a store it cannot write (locked, full, read-only): read-only until it can be written (#51).
        database = try DoseTapDatabase.openForAgent(directory: paths.dataDirectory)
        store = DataStore(database: database)
        storeHealth = StoreHealth(folder: paths.dataDirectory.path, logger: logger,
                                  record: StoreHealth.record(dataDirectory: paths.dataDirectory, logger: logger), events: events)
        if let problem = database.writeProblem {
            storeHealth.failed(problem, doing: "opening the data at start (running on what it can read)", at: Date())
        }
        // One libudev client for the power supplies, the HID remotes and the vibration motor.
        udev = try UdevClient(logger: logger)
        source = UdevPowerSupplySource(udev: udev, logger: logger)
        notifier = SystemdNotifier()
        Self.logStart(database: database, paths: paths, logger: logger)
        // SIGHUP is trapped from here on (ReloadService reads it), before READY=1 can be sent.
        hangups = await UnixSignalsSequence(trapping: .sighup)
        powerOff = Self.readPowerOff(logger: logger)
        night = Self.nightWatch(database: database, source: source, logger: logger)
        history = BatterySampleRepository(database: database)
        let night = self.night
        battery = BatteryUseCases(source: source, history: history, powerOff: powerOff, clock: SystemClock(),
                                  night: { night.outlook(goingToSleep: $0) })
        watcher = Self.watchDatabase(paths: paths, database: database, logger: logger)
        Self.importConfigAlarm(configuration.current, store: store, logger: logger)
        devices = try makeFeedbackDevices(logger: logger, desktop: true, udev: udev)
        feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: database), clock: SystemClock(), logger: logger)
        let configuration = self.configuration
        risk = AlarmRiskMonitor(events: events, database: database, clock: TimerFDScheduler.shared, logger: logger, feedback: feedback,
                                guardMode: { configuration.current.sleepGuard },
                                guardian: .logind(connect: { try DBusConnection(bus: .system, logger: logger) }, wake: LinuxWakeAlarm(),
                                                  desktop: devices.desktop, logger: logger))
        logger.info("feedback", metadata: [
            "haptics": "\(devices.haptics.isSupported ? "vibration motor found" : "Not supported on this device")",
            "desktopNotifications": "\(devices.desktop == nil ? "log only" : "session bus")",
        ])
        doseRepository = DoseRepository(database: database)
        let battery = self.battery
        doses = DoseUseCases(repository: doseRepository, clock: SystemClock(), battery: { battery.statusNow() }, events: events)
        // Alarms: they ring here until Stop or Snooze (the CLI, the notification, any button) or ten minutes.
        alarmUseCases = AlarmUseCases(store: store, clock: SystemClock(), battery: { battery.statusNow() }, events: events,
                                      answerPatience: .brief)
        ringer = AlarmBell(devices: devices, settings: SettingsRepository(database: database), clock: TimerFDScheduler.shared, logger: logger)
        let ringer = self.ringer
        storeHealth.announce { title, body in await ringer.announce(title: title, body: body) }
        alarms = AlarmService(store: store, alarms: alarmUseCases, ringer: ringer, clock: TimerFDScheduler.shared,
                              logger: logger, events: events, databaseChanges: watcher?.changes(), health: storeHealth,
                              kept: KeptFile(name: "alarms", database: database.path))
        // The household (#12): backups of our alarms, and the others' backups ringing here.
        let settings = configuration.current
        identity = HouseholdIdentity(name: settings.householdName, device: settings.device)
        broker = householdLink(settings.mqtt, identity: identity, logger: logger)
        let alarms = self.alarms, alarmUseCases = self.alarmUseCases, ringLogger = logger
        household = HouseholdService(
            identity: identity, database: database, broker: broker.map { $0.map { $0 as any HouseholdBroker } },
            delivery: BackupDelivery(http: AsyncHTTPOutbound(), clock: TimerFDScheduler.shared, wording: .init(household: identity.name),
                                     pushTokenFile: settings.pushTokenFile, pushServer: settings.pushServer,
                                     phone: settings.phone, logger: logger),
            ringer: ringer, clock: TimerFDScheduler.shared, logger: logger, events: events, databaseChanges: watcher?.changes(),
            // This machine's own alarm, stopped by the household: the one use case that ends a ring.
            ownAlarms: RingAnswers(alarms: alarmUseCases, holders: [alarms], logger: ringLogger),
            statusFile: try? AgentStatusFile(dataDirectory: paths.dataDirectory, name: HouseholdStatus.fileName).hold(), health: storeHealth,
            kept: KeptFile(name: "household", database: database.path))
        ringing = RingAnswers(alarms: alarmUseCases, holders: [alarms, household], logger: logger)
        // Usage alerts for every battery (#13): readings in, `usage-alert` out.
        let source = self.source
        usageAlerts = AlertUseCases(store: store, clock: SystemClock(), supplies: { ((try? source.snapshot()) ?? []).map(PowerSupplyReading.init(raw:)) },
                                    events: events, commands: settings.alertCommands.map(\.name))
    }

    // MARK: - The steps of Agent.run

    /// The primary alarms and the household's backups.
    func alarmServices() -> Services {
        let database = self.database
        return [.init(service: alarms), .init(service: household),
                // While the store cannot be written: whether it can be again, on the back-off (#51).
                .init(service: StoreCheckService(health: storeHealth, check: { try database.checkWritable() }, clock: TimerFDScheduler.shared))]
    }

    /// Usage alerts: commands run on their intervals, alerts delivered as feedback.
    func alertServices() -> Services {
        let configuration = self.configuration
        return [.init(service: AlertService(database: database, events: events, clock: TimerFDScheduler.shared, logger: logger,
                                            commands: { configuration.current.alertCommands },
                                            runner: SubprocessCommandRunner(clock: TimerFDScheduler.shared),
                                            deliver: AlertService.feedbackDelivery(feedback)))]
    }

    /// The battery monitor and the overnight re-check; the dose reminders and the feedback of a dose input; reload.
    func batteryAndDoseServices() -> Services {
        let notifier = self.notifier
        let logger = self.logger
        let feedback = self.feedback
        let pages = self.pages
        let risk = self.risk
        let monitor = BatteryMonitor(
            source: source, history: history, clock: TimerFDScheduler.shared,
            configuration: configuration, logger: logger, events: events, powerOff: powerOff, night: night,
            onReady: {
                logger.info("agent ready")
                if notifier.notify("READY=1\nSTATUS=Watching the battery") {
                    logger.debug("told systemd we are ready")
                }
            },
            beforeSample: {
                guard let pages else { return }
                let kb = pages.warm()
                logger.trace("read back the last sample's pages", metadata: ["kB": "\(kb)", "keptKB": "\(pages.keptKB)"])
            }, health: storeHealth)
        let scheduler = DoseScheduler(repository: doseRepository, clock: TimerFDScheduler.shared, notifier: feedback, logger: logger,
                                      databaseChanges: watcher?.changes(), events: events, health: storeHealth,
                                      kept: KeptFile(name: "reminders", database: database.path))
        return [
            // The overnight re-check of every enabled alarm (battery-nudge when an alarm's risk grows).
            .init(service: risk),
            .init(service: DoseInputFeedback(events: events, feedback: feedback)),
            .init(service: monitor),
            .init(service: scheduler),
            .init(service: ReloadService(paths: paths, configuration: configuration, monitor: monitor,
                                         notifier: notifier, logger: logger, signals: hangups, events: events)),
        ]
    }

    /// The desktop notification's buttons (Take, Snooze, Stop), when there is a session bus.
    func notificationActions() -> Services {
        guard let desktop = devices.desktop else { return [] }
        return [.init(service: NotificationActions(desktop: desktop, feedback: feedback, doses: doses, logger: logger,
                                                   ringer: ringer, alarms: ringing, usageAlerts: usageAlerts))]
    }

    /// Home Assistant (#16 §4) on the household's broker connection: its last will is the entities' availability.
    func homeAssistant() -> Services {
        let battery = self.battery
        guard let service = homeAssistantService(
            configuration.current, broker: broker, identity: identity, database: database, doses: doses, alarms: ringing,
            battery: { battery.statusNow() }, events: events, databaseChanges: watcher?.changes(), storeHealth: storeHealth,
            logger: logger) else { return [] }
        return [.init(service: service)]
    }

    /// Buttons: BlueZ on the system bus and HID remotes through udev. Without either (no bluetoothd, a container)
    /// the rest still runs.
    func buttons() -> Services {
        let hid: HIDButtonSource?
        do {
            hid = try HIDButtonSource(udev: udev, logger: logger)
        } catch {
            logger.notice("no udev: HID remotes are unavailable", metadata: ["error": "\(error)"])
            hid = nil
        }
        let bluez: BlueZClient?
        do {
            bluez = BlueZClient(connection: try DBusConnection(bus: .system, logger: logger), logger: logger)
        } catch {
            logger.notice("no system bus: BLE buttons through BlueZ are unavailable", metadata: ["error": "\(error)"])
            bluez = nil
        }
        guard bluez != nil || hid != nil else { return [] }
        return [.init(service: ButtonService(
            sources: ButtonSources.machine(bluez: bluez, hid: hid, clock: TimerFDScheduler.shared, logger: logger,
                                           store: ButtonRepository(database: database)),
            buttons: ButtonRepository(database: database),
            doses: doses, samples: history, events: events,
            clock: TimerFDScheduler.shared, logger: logger, databaseChanges: watcher?.changes(), alarms: ringing))]
    }

    /// Waking from suspend for the next alarm or reminder (docs/alarms.md), and whether the alarm can be heard
    /// here (#32): each finding said in the log and recorded for the command line and the dashboard.
    func sleepAndSound() -> Services {
        let logger = self.logger
        let database = self.database
        let feedback = self.feedback
        let battery = self.battery
        let udev = self.udev
        let risk = self.risk
        let recheck = recheckBeforeSleep(alarms: { try AlarmRepository(database: database).load().alarms },
                                         battery: { battery.statusGoingToSleep() },
                                         clock: TimerFDScheduler.shared, logger: logger) { step in
            await feedback.play(.batteryNudge, title: step.nudge.header, body: AlarmRiskMonitor.body(step))
        }
        return [
            .init(service: SleepGuardService(
                connect: { try DBusConnection(bus: .system, logger: logger) }, wake: LinuxWakeAlarm(),
                nextWake: Agent.nextWake(alarms: AlarmRepository(database: database), doses: doseRepository, clock: SystemClock(), logger: logger),
                status: WakeStatusFile(dataDirectory: paths.dataDirectory).hold(logger: logger), clock: SystemClock(), logger: logger,
                night: night,
                beforeSleep: {
                    // Asleep, the machine keeps its deadline: the re-check's timer waits for the next reading.
                    risk.suspending()
                    await recheck()
                })),
            .init(service: SoundWatchService(
                check: { SoundCheck.current(udev: udev) }, status: SoundStatusFile(dataDirectory: paths.dataDirectory).hold(logger: logger),
                udev: udev, clock: TimerFDScheduler.shared, logger: logger)),
        ]
    }

    /// The faces that run inside the agent (the dashboard), given the same use cases as every other part.
    func faces(_ faces: [AgentFace]) -> Services {
        let battery = self.battery
        let watcher = self.watcher
        var context = AgentContext(paths: paths, configuration: configuration.current, database: database, events: events,
                                   doses: doses, alarms: alarmUseCases, battery: { battery.statusNow() },
                                   clock: TimerFDScheduler.shared, logger: logger,
                                   databaseChanges: { watcher?.changes() })
        if let watcher {
            context.databaseGeneration = { watcher.generation() }
        }
        // The settings screens list the sound themes on every request: from a listing at most 2 s old.
        var screenChannels = devices.channels
        screenChannels.catalog = RecentSoundCatalog(devices.catalog)
        let ringing = self.ringing
        context.feedback = SettingsUseCases(settings: SettingsRepository(database: database), devices: screenChannels,
                                            history: DoseHistory(store: store, clock: SystemClock()), events: events, logger: logger,
                                            alarmRinging: { ringing.isRinging })
        context.soundPreview = SoundPreview(devices: devices.channels)
        context.buttons = ButtonUseCases(store: store, events: events)
        context.usageAlerts = usageAlerts
        context.answerRing = { outcome, by in outcome == .snoozed ? ringing.snooze(by: by) : ringing.stop(by: by) }
        var services: Services = []
        for face in faces {
            do {
                services += try face(context).map { .init(service: $0) }
            } catch {
                logger.error("\(error)")
            }
        }
        return services
    }

    /// Giving back clean pages after larger pieces of work, and systemd's watchdog.
    func housekeeping() -> Services {
        var services: Services = []
        if let pages {
            let meter = FileResidentMeter()
            services.append(.init(service: PageReleaseService(
                clock: TimerFDScheduler.shared, policy: .init(environment: ProcessInfo.processInfo.environment), idle: { EpollLoop.shared.whenIdle($0) },
                fileResidentKB: { meter?.kilobytes() }, release: PageReleaseService.releasing(pages, logger: logger))))
        }
        if let interval = notifier.watchdogInterval {
            services.append(.init(service: WatchdogService(notifier: notifier, interval: interval, clock: TimerFDScheduler.shared)))
        }
        return services
    }

    // MARK: - Parts of init

    /// The first line of a started agent says what runs, for a bug report: version, commit, build date. (A
    /// configuration or data directory that cannot be used stops it before, with its one-line error.)
    private static func logStart(database: DoseTapDatabase, paths: DataPaths, logger: Logger) {
        logger.info("agent starting: dosetap \(DoseTapVersion.description)", metadata: [
            "database": "\(database.path)", "config": "\(paths.configFile.path)",
            "pid": "\(ProcessInfo.processInfo.processIdentifier)",
        ])
        // systemd's soft limit of 1,024 descriptors is the one accept() and the alarm's player run into: raise it
        // to the hard limit, so the dashboard's capped connections (docs/web.md) leave room for ringing (#25).
        if let files = DescriptorLimit.raiseSoftToHard() {
            logger.info("open-file limit", metadata: ["soft": "\(files.soft)", "hard": "\(files.hard)"])
            if files.soft < 1024 {
                logger.notice("the open-file limit is low (\(files.soft)): the dashboard takes fewer connections; raise LimitNOFILE")
            }
        }
    }

    /// UPower's power-off level, logged with where it came from.
    private static func readPowerOff(logger: Logger) -> PowerOffPolicy {
        let upower = UPowerConfigFiles.read()
        for note in upower.notes { logger.notice("UPower configuration: \(note)") }
        logger.info("power-off level", metadata: [
            "percent": "\(PowerOffPolicy.percentText(upower.policy.percentage))",
            "byTimeLeftSeconds": "\(upower.policy.timeLeftSeconds.map { "\(Int($0))" } ?? "no")",
            "action": "\(upower.policy.action?.rawValue ?? "no UPower configuration")",
        ])
        return upower.policy
    }

    /// What this machine's nights taught the forecast (#24): its drain asleep, when it sleeps, whether it can wake.
    private static func nightWatch(database: DoseTapDatabase, source: UdevPowerSupplySource, logger: Logger) -> NightWatch {
        let repository = NightLearningRepository(database: database)
        let learned: NightLearning
        do {
            learned = try repository.load()
        } catch {
            logger.error("cannot read what was learned of this machine's nights; starting afresh", metadata: ["error": "\(error)"])
            learned = NightLearning()
        }
        return NightWatch(learning: learned, save: { try repository.save($0) },
                          battery: { (try? source.snapshot()).map { PowerState(raw: $0) } }, logger: logger)
    }

    /// The data folder's watcher, whose subscribers are not woken by the agent's own battery samples
    /// (`DatabaseChangeGate`).
    static func watchDatabase(paths: DataPaths, database: DoseTapDatabase, logger: Logger) -> DirectoryWatcher? {
        let gate = DatabaseChangeGate(database: database)
        do {
            return try DirectoryWatcher(directory: paths.dataDirectory.path, signalling: { gate.wakes(changed: $0) })
        } catch {
            logger.error("cannot watch the database; changes made by the command line are seen within 5 minutes",
                         metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// config.toml's `[alarm] time` becomes a daily alarm labelled `config`, once (docs/configuration.md).
    private static func importConfigAlarm(_ settings: AgentConfiguration, store: DataStore, logger: Logger) {
        guard let time = settings.alarm else { return }
        do {
            if let imported = try AlarmUseCases(store: store, clock: SystemClock(), battery: { nil }).importConfigAlarm(time) {
                logger.notice("config.toml's [alarm] time is now alarm \(imported.alarm.id) (daily, label config): manage it with dosetap alarm")
            }
        } catch {
            logger.error("cannot import config.toml's [alarm] time as an alarm", metadata: ["error": "\(error)"])
        }
    }
}
