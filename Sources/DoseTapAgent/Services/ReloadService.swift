import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads `config.toml` on SIGHUP. A bad file is rejected with a log line; the old one stays.
/// The agent traps SIGHUP (`signals`) before it starts its services, so a reload asked for as soon as the
/// agent said READY=1 (`systemctl reload` right after start) waits for this service instead of being lost.
struct ReloadService: Service, CustomStringConvertible {
    var description: String { "ReloadService" }
    let paths: DataPaths
    let configuration: ConfigurationHolder
    let monitor: BatteryMonitor
    let notifier: SystemdNotifier
    let logger: Logger
    let signals: UnixSignalsSequence
    /// Told `.configurationReloaded` after a good reload (the usage alerts' command sources follow it).
    var events: EventBus? = nil

    func run() async throws {
        for await _ in signals.cancelOnGracefulShutdown() {
            notifier.notify("RELOADING=1")
            do {
                let fresh = try AgentConfiguration.load(from: paths.configFile)
                configuration.replace(fresh)
                monitor.reevaluate()
                events?.publish(.configurationReloaded)
                logger.info("configuration reloaded", metadata: ["alarm": "\(fresh.alarm.map(\.description) ?? "none")"])
            } catch {
                logger.error("configuration rejected, keeping the previous one", metadata: ["error": "\(error)"])
            }
            notifier.notify("READY=1")
        }
    }
}
