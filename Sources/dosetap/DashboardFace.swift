import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapWeb
import Foundation

/// The dashboard plugged into the agent: the composition root builds it from the agent's context (its use
/// cases, its event bus, its battery) and runs its listeners as services of the agent's group. The
/// dashboard itself knows only the application layer (#26).
enum DashboardFace {
    /// The face for `Agent.run(faces:)`.
    static let face: AgentFace = { context in
        let secret: WebSecret
        do {
            secret = try WebSecret.loadOrCreate(dataDirectory: context.paths.dataDirectory)
        } catch {
            throw WebFace.StartError(description: "web dashboard disabled: \(error)")
        }
        let dataDirectory = context.paths.dataDirectory
        let samples = BatterySampleRepository(database: context.database)
        let buttons = context.buttons.map { useCases in
            WebButtons(useCases: useCases,
                       scan: { try await ButtonUseCases.scan(seconds: $0, with: BlueZButtonScanner()) },
                       levels: { (try? samples.latestLevels()) ?? [:] },
                       pairFlic2: { address, seconds in
                           let paired = try await Flic2Pairer.pair(address: address, seconds: seconds, logger: context.logger) { _ in }
                           let volts = String(format: "%.2f", Double(paired.info.batteryMillivolts) / 1000)
                           let serial = DisplayText.escaped(String(decoding: paired.info.serialNumber, as: UTF8.self))
                           return WebButtons.Flic2Paired(
                               pairing: paired.pairing.hex, ownName: String(validating: paired.info.name, as: UTF8.self),
                               summary: "Verified a genuine Flic 2 (serial \(serial), battery \(volts) V, "
                                   + "\(Flic2Battery.percent(millivolts: paired.info.batteryMillivolts)) %)")
                       })
        }
        let dashboard = WebDashboard(doses: context.doses, events: context.events, clock: context.clock, secret: secret,
                                     logger: context.logger, databaseChanges: context.databaseChanges, alarms: context.alarms,
                                     alarmWarnings: { AlarmWarnings.lines(dataDirectory: dataDirectory) },
                                     batteries: batteries(context),
                                     sounds: context.feedback.map { WebSounds(settings: $0, preview: context.soundPreview) },
                                     buttons: buttons, redeemedCodes: dataDirectory,
                                     household: AlarmUseCases.Household(device: context.configuration.device,
                                                                        hasBroker: context.configuration.mqtt != nil),
                                     usageAlerts: context.usageAlerts,
                                     rateLimit: RateLimiter(burst: context.configuration.webRateBurst,
                                                            refuseAbove: context.configuration.webRateRefuseAbove),
                                     storeGeneration: context.databaseGeneration, answerRing: context.answerRing)
        // The caps follow the descriptor limit in force (the agent raised its soft limit to the hard one at start).
        let limits = WebLimits.forDescriptors(DescriptorLimit.current()?.soft ?? 1024)
        context.logger.info("web dashboard connection limits", metadata: [
            "tcp": "\(limits.tcpConnections)", "perClient": "\(limits.tcpPerClient)", "unix": "\(limits.unixConnections)",
            "headerTimeoutSeconds": "\(limits.headerTimeout)",
        ])
        var all = try WebFace.services(dashboard: dashboard, listen: context.configuration.webListen, socketPath: WebFace.socketPath(),
                               logger: context.logger, limits: limits)
        all.append(WebDashboard.Recorder(dashboard: dashboard))
        return all
    }

    static func batteries(_ context: AgentContext) -> WebBatteries {
        let repository = BatterySampleRepository(database: context.database)
        return WebBatteries(
            now: context.battery,
            samples: { (try? repository.samples(since: $0)) ?? [] },
            others: { ((try? repository.latestLevels()) ?? [:]).map { (source: $0.key, level: $0.value.level, at: $0.value.at) } })
    }

}
