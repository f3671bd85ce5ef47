import DoseTapCore
import DoseTapHTTP
import DoseTapLinux
import DoseTapStore
import Foundation
import DoseTapVersion
import Logging
import ServiceLifecycle
import UnixSignals

/// The system clock and time zone.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
    public var timeZone: TimeZone { SystemTimeZone.current }
}

/// `dosetap agent`: wires the adapters to the core and runs until SIGTERM.
public enum Agent {
    /// - Parameter faces: faces that run inside the agent (the web dashboard), as services of its group.
    public static func run(paths: DataPaths, logger: Logger, faces: [AgentFace] = []) async throws {
        // A SIGHUP (reload) that arrives while the agent is still starting must not kill it: ignore it until
        // the reload service takes over the signal.
        signal(SIGHUP, SIG_IGN)
        // The files mapped now (the executable and its libraries) are those whose clean pages are given back
        // after the agent's larger pieces of work (PageReleaseService); DOSETAP_RELEASE_PAGES=0 keeps them (for
        // measurements). It was off by default while the loop could deadlock on a lock it held itself — jobs of
        // the global executor then ran isolated to the loop, and a release's few ms made that likely; they run
        // on the generic executor now (EpollLoop, docs/performance.md).
        let pages = ProcessInfo.processInfo.environment["DOSETAP_RELEASE_PAGES"] == "0" ? nil : ResidentPages()
        let configuration = ConfigurationHolder(try AgentConfiguration.load(from: paths.configFile))
        let database = try DoseTapDatabase(directory: paths.dataDirectory)
        // One libudev client for the power supplies, the HID remotes and the vibration motor.
        let udev = try UdevClient(logger: logger)
        let source = UdevPowerSupplySource(udev: udev, logger: logger)
        let notifier = SystemdNotifier()
        // The first line of a started agent says what runs, for a bug report: version, commit, build date. (A
        // configuration or data directory that cannot be used stops it before, with its one-line error.)
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
        // SIGHUP is trapped from here on (ReloadService reads it), before READY=1 can be sent.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // What happened, for every subscriber (the scheduler, the battery nudge; MQTT and the dashboard later).
        let events = EventBus()
        // The level at which the machine stops itself (UPower's PercentageAction) counts as empty (#11).
        let upower = UPowerConfigFiles.read()
        for note in upower.notes { logger.notice("UPower configuration: \(note)") }
        logger.info("power-off level", metadata: [
            "percent": "\(PowerOffPolicy.percentText(upower.policy.percentage))",
            "byTimeLeftSeconds": "\(upower.policy.timeLeftSeconds.map { "\(Int($0))" } ?? "no")",
            "action": "\(upower.policy.action?.rawValue ?? "no UPower configuration")",
        ])
        // What this machine's nights taught the forecast (#24): its drain asleep, when it sleeps, whether it can wake.
        let nightRepository = NightLearningRepository(database: database)
        let learned: NightLearning
        do {
            learned = try nightRepository.load()
        } catch {
            logger.error("cannot read what was learned of this machine's nights; starting afresh", metadata: ["error": "\(error)"])
            learned = NightLearning()
        }
        let night = NightWatch(learning: learned, save: { try nightRepository.save($0) },
                               battery: { (try? source.snapshot()).map { PowerState(raw: $0) } }, logger: logger)
        let history = BatterySampleRepository(database: database)
        let readBattery: @Sendable () -> BatteryStatus? = {
            try? BatteryStatus.read(source: source, history: history, now: Date(), powerOff: upower.policy, night: night.outlook())
        }
        let monitor = BatteryMonitor(
            source: source, history: history, clock: TimerFDScheduler.shared,
            configuration: configuration, logger: logger, events: events, powerOff: upower.policy, night: night,
            onReady: {
                logger.info("agent ready")
                if notifier.notify("READY=1\nSTATUS=Watching the battery") {
                    logger.debug("told systemd we are ready")
                }
            })
        let watcher: DirectoryWatcher?
        do {
            watcher = try DirectoryWatcher(directory: paths.dataDirectory.path)
        } catch {
            logger.error("cannot watch the database; changes made by the command line are seen within 5 minutes",
                         metadata: ["error": "\(error)"])
            watcher = nil
        }
        // config.toml's `[alarm] time` becomes a daily alarm labelled `config`, once (docs/configuration.md).
        if let time = configuration.current.alarm {
            do {
                let alarms = AlarmUseCases(store: DataStore(database: database), battery: { nil })
                if let imported = try alarms.importConfigAlarm(time) {
                    logger.notice("config.toml's [alarm] time is now alarm \(imported.alarm.id) (daily, label config): manage it with dosetap alarm")
                }
            } catch {
                logger.error("cannot import config.toml's [alarm] time as an alarm", metadata: ["error": "\(error)"])
            }
        }
        let devices = try makeFeedbackDevices(logger: logger, desktop: true, udev: udev)
        let repository = DoseRepository(database: database)
        let doses = DoseUseCases(repository: repository, clock: SystemClock(),
                                 battery: readBattery,
                                 events: events)
        let feedback = FeedbackNotifier(devices: devices, settings: SettingsRepository(database: database), clock: SystemClock(),
                                        logger: logger)
        let scheduler = DoseScheduler(repository: repository, clock: TimerFDScheduler.shared, notifier: feedback, logger: logger,
                                      databaseChanges: watcher?.changes(), events: events,
                                      onNightScheduled: { feedback.prepare(session: $0.id) })
        logger.info("feedback", metadata: [
            "haptics": "\(devices.haptics.isSupported ? "vibration motor found" : "Not supported on this device")",
            "desktopNotifications": "\(devices.desktop == nil ? "log only" : "session bus")",
        ])
        // Alarms: they ring here until Stop or Snooze (the CLI, the notification, any button) or ten minutes.
        let store = DataStore(database: database)
        let alarmUseCases = AlarmUseCases(store: store, clock: SystemClock(),
                                          battery: readBattery,
                                          events: events)
        let ringer = AlarmRinger(devices: devices, settings: SettingsRepository(database: database), clock: TimerFDScheduler.shared,
                                 logger: logger)
        let alarms = AlarmService(store: store, alarms: alarmUseCases, ringer: ringer, clock: TimerFDScheduler.shared,
                                  logger: logger, events: events, databaseChanges: watcher?.changes())
        // The household (#12): backups of our alarms, and the others' backups ringing here.
        let identity = HouseholdIdentity(name: configuration.current.householdName, device: configuration.current.device)
        let broker = householdLink(configuration.current.mqtt, identity: identity, logger: logger)
        let household = HouseholdService(
            identity: identity, database: database, broker: broker,
            delivery: BackupDelivery(http: AsyncHTTPOutbound(), clock: TimerFDScheduler.shared, wording: .init(household: identity.name),
                                     pushTokenFile: configuration.current.pushTokenFile, pushServer: configuration.current.pushServer,
                                     phone: configuration.current.phone, logger: logger),
            ringer: ringer, clock: TimerFDScheduler.shared, logger: logger, events: events, databaseChanges: watcher?.changes(),
            stopPrimary: { id in alarms.currentRing?.alarmID == id && alarms.stop(by: .household) },
            statusFile: try? AgentStatusFile(dataDirectory: paths.dataDirectory, name: HouseholdStatus.fileName).hold())
        let ringing = RingingAlarms([alarms, household])
        // Usage alerts for every battery (#13): readings in, `usage-alert` out.
        let usageAlerts = AlertUseCases(store: store, clock: SystemClock(), supplies: { ((try? source.snapshot()) ?? []).map(PowerSupplyReading.init(raw:)) },
                                        events: events, commands: configuration.current.alertCommands.map(\.name))
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: alarms),
            .init(service: household),
            .init(service: AlertService(database: database, events: events, clock: TimerFDScheduler.shared, logger: logger,
                                        commands: { configuration.current.alertCommands },
                                        runner: SubprocessCommandRunner(clock: TimerFDScheduler.shared),
                                        deliver: AlertService.feedbackDelivery(feedback))),
            // The overnight re-check of every enabled alarm (battery-nudge when an alarm's risk grows).
            .init(service: AlarmRiskMonitor(events: events, database: database, clock: SystemClock(), logger: logger, feedback: feedback)),
            .init(service: DoseInputFeedback(events: events, feedback: feedback)),
            .init(service: monitor),
            .init(service: scheduler),
            .init(service: ReloadService(paths: paths, configuration: configuration, monitor: monitor,
                                         notifier: notifier, logger: logger, signals: hangups, events: events)),
        ]
        if let desktop = devices.desktop {
            services.append(.init(service: NotificationActions(desktop: desktop, feedback: feedback, doses: doses, logger: logger,
                                                               ringer: ringer, alarms: ringing, usageAlerts: usageAlerts)))
        }
        // Home Assistant (#16 §4) on the household's broker connection: its last will is the entities' availability.
        if let homeAssistant = homeAssistantService(
            configuration.current, broker: broker, identity: identity, database: database, doses: doses, alarms: ringing,
            battery: readBattery,
            events: events, databaseChanges: watcher?.changes(), logger: logger) {
            services.append(.init(service: homeAssistant))
        }
        // Buttons: BlueZ on the system bus. Without it (no bluetoothd, a container) the rest still runs.
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
        if bluez != nil || hid != nil {
            services.append(.init(service: ButtonService(
                bluez: bluez, hid: hid, buttons: ButtonRepository(database: database),
                doses: doses, samples: history, events: events,
                clock: TimerFDScheduler.shared, logger: logger, databaseChanges: watcher?.changes(), alarms: ringing)))
        }
        // Waking from suspend for the next alarm or reminder (docs/alarms.md); its finding is recorded for the CLI.
        services.append(.init(service: SleepGuardService(
            connect: { try DBusConnection(bus: .system, logger: logger) }, wake: LinuxWakeAlarm(),
            nextWake: nextWake(alarms: AlarmRepository(database: database), doses: repository, clock: SystemClock(), logger: logger),
            status: WakeStatusFile(dataDirectory: paths.dataDirectory).hold(logger: logger), clock: SystemClock(), logger: logger,
            night: night,
            beforeSleep: recheckBeforeSleep(alarms: { try AlarmRepository(database: database).load().alarms },
                                      battery: { (try? BatteryStatus.read(source: source, history: history, now: Date(), powerOff: upower.policy,
                                                                           night: night.outlook(goingToSleep: true))) },
                                      clock: TimerFDScheduler.shared, logger: logger) { step in
                await feedback.play(.batteryNudge, title: step.nudge.header, body: AlarmRiskMonitor.body(step))
            })))
        // Whether the alarm can be heard here (#32): said in the log at start, recorded for the CLI and the dashboard.
        services.append(.init(service: SoundWatchService(
            check: { SoundCheck.current(udev: udev) }, status: SoundStatusFile(dataDirectory: paths.dataDirectory).hold(logger: logger),
            udev: udev, clock: TimerFDScheduler.shared, logger: logger)))
        var context = AgentContext(paths: paths, configuration: configuration.current, database: database, events: events,
                                   doses: doses, alarms: alarmUseCases,
                                   battery: readBattery,
                                   clock: TimerFDScheduler.shared, logger: logger,
                                   databaseChanges: { watcher?.changes() })
        if let watcher {
            context.databaseGeneration = { watcher.generation() }
        }
        // The settings screens list the sound themes on every request: from a listing at most 2 s old.
        var screenDevices = devices
        screenDevices.catalog = RecentSoundCatalog(devices.catalog)
        context.feedback = SettingsUseCases(settings: SettingsRepository(database: database), devices: screenDevices,
                                            history: DoseHistory(store: store), events: events, logger: logger,
                                            alarmRinging: { ringing.isRinging })
        context.soundPreview = SoundPreview(devices: devices)
        context.buttons = ButtonUseCases(store: store, events: events)
        context.usageAlerts = usageAlerts
        for face in faces {
            do {
                services += try face(context).map { .init(service: $0) }
            } catch {
                logger.error("\(error)")
            }
        }
        if let pages {
            let meter = FileResidentMeter()
            services.append(.init(service: PageReleaseService(
                clock: TimerFDScheduler.shared, policy: .init(environment: ProcessInfo.processInfo.environment), idle: { EpollLoop.shared.whenIdle($0) },
                fileResidentKB: { meter?.kilobytes() }, release: PageReleaseService.releasing(pages, logger: logger))))
        }
        if let interval = notifier.watchdogInterval {
            services.append(.init(service: WatchdogService(notifier: notifier, interval: interval, clock: TimerFDScheduler.shared)))
        }
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        withExtendedLifetime(watcher) {}
        notifier.notify("STOPPING=1")
        logger.info("agent stopped")
    }
}

/// Home Assistant's service when `[home_assistant] enabled = true` and the household broker can carry it; nil
/// otherwise, with the reason logged as an error when it was asked for (never a silent half-feature).
func homeAssistantService(_ configuration: AgentConfiguration, broker: Result<HouseholdLink, HouseholdLink.Refused>?, identity: HouseholdIdentity,
                          database: DoseTapDatabase, doses: DoseUseCases, alarms: any RingingAlarmControl,
                          battery: @escaping @Sendable () -> BatteryStatus?, events: EventBus, databaseChanges: AsyncStream<Void>?,
                          logger: Logger) -> HomeAssistantService? {
    let settings = configuration.homeAssistant
    guard settings.enabled else { return nil }
    switch broker {
    case nil:
        logger.error("Home Assistant is off: [home_assistant] needs the household broker, and config.toml has no [mqtt] section")
        return nil
    case .failure(let refused):
        logger.error("Home Assistant is off: the household broker is off (\(refused.reason))", metadata: ["broker": "\(refused.url)"])
        return nil
    case .success(let link):
        if settings.buttons.contains(.take) || settings.buttons.contains(.snooze) {
            logger.notice("Home Assistant can record doses: anyone who may publish on \(HouseholdTopic.homeAssistantRoot(household: identity.topic))\(identity.device)/command/ can press Take or Snooze")
        }
        return HomeAssistantService(settings: settings, identity: identity, client: link.client, database: database, doses: doses,
                                    alarms: alarms, battery: battery, events: events, databaseChanges: databaseChanges,
                                    clock: TimerFDScheduler.shared, logger: logger)
    }
}

/// The household broker of `[mqtt]`, or nil: none configured, or one that cannot be used as configured (an
/// unreadable password, a CA file that TLS refuses) — then device backups are off, with the reason logged,
/// never a connection with less security than asked for.
func householdLink(_ settings: MQTTSettings?, identity: HouseholdIdentity, logger: Logger) -> Result<HouseholdLink, HouseholdLink.Refused>? {
    guard let settings else { return nil }
    do {
        guard let url = URL(string: settings.url), let host = url.host else { throw MQTTError("mqtt.url has no host") }
        let tls = url.scheme == "mqtts"
        var password: String?
        if let file = settings.passwordFile {
            switch readSecret(file) {
            case .success(let value): password = value
            case .failure(let error): throw MQTTError("mqtt.password_file: \(error)")
            }
        }
        let will = MQTTClient.Will(topic: HouseholdTopic.peer(device: identity.device).topic(household: identity.topic),
                                   payload: HouseholdMessage.encode(PeerMessage.offline))
        let client = try MQTTClient(clientID: "dosetap-\(identity.device)", username: settings.username, password: password, will: will,
                                    logger: logger)
        if tls || settings.caFile != nil { try client.useTLS(caFile: settings.caFile) }
        return .success(HouseholdLink(client: client, host: host, port: url.port ?? (tls ? 8883 : 1883), url: settings.url,
                                      anonymous: settings.username == nil))
    } catch {
        logger.error("the household broker is off: \(error)", metadata: ["broker": "\(settings.url)"])
        return .failure(HouseholdLink.Refused(url: settings.url, reason: "\(error)"))
    }
}

/// The sleep guard's re-check at `PrepareForSleep(true)` (`SleepRecheck`), as the closure it awaits.
func recheckBeforeSleep(alarms: @escaping @Sendable () throws -> [Alarm], battery: @escaping @Sendable () -> BatteryStatus?,
                        clock: any Scheduling, logger: Logger,
                        play: @escaping @Sendable (AlarmRiskTracker.Step) async -> Void) -> @Sendable () async -> Void {
    let recheck = SleepRecheck(alarms: alarms, battery: battery, clock: clock, logger: logger, play: play)
    return { await recheck.run() }
}
