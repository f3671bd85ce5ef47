import DoseTapApp
import DoseTapCore
import DoseTapHTTP
import DoseTapLinux
import DoseTapStore
import Foundation
import DoseTapVersion
import Logging
import ServiceLifecycle
import UnixSignals

/// `dosetap agent`: wires the adapters to the core and runs until SIGTERM.
public enum Agent {
    /// - Parameter faces: faces that run inside the agent (the web dashboard), as services of its group.
    public static func run(paths: DataPaths, logger: Logger, faces: [AgentFace] = []) async throws {
        // A SIGHUP (reload) that arrives while the agent is still starting must not kill it: ignore it until
        // the reload service takes over the signal.
        signal(SIGHUP, SIG_IGN)
        let agent = try await AgentWiring(paths: paths, logger: logger)
        // In the order the group starts them (it stops them in reverse).
        var services = agent.alarmServices()
        services += agent.alertServices()
        services += agent.batteryAndDoseServices()
        services += agent.notificationActions()
        services += agent.homeAssistant()
        services += agent.buttons()
        services += agent.sleepAndSound()
        services += agent.faces(faces)
        services += agent.housekeeping()
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        withExtendedLifetime(agent.watcher) {}
        agent.notifier.notify("STOPPING=1")
        logger.info("agent stopped")
    }
}

/// Home Assistant's service when `[home_assistant] enabled = true` and the household broker can carry it; nil
/// otherwise, with the reason logged as an error when it was asked for (never a silent half-feature).
func homeAssistantService(_ configuration: AgentConfiguration, broker: Result<HouseholdLink, HouseholdLink.Refused>?, identity: HouseholdIdentity,
                          database: DoseTapDatabase, doses: DoseUseCases, alarms: any RingAnswering,
                          battery: @escaping @Sendable () -> BatteryStatus?, events: EventBus, databaseChanges: AsyncStream<Void>?,
                          storeHealth: StoreHealth? = nil, logger: Logger) -> HomeAssistantService? {
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
                                    storeHealth: storeHealth, clock: TimerFDScheduler.shared, logger: logger)
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
