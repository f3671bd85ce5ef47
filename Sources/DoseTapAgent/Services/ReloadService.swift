import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads `config.toml` on SIGHUP. A bad file is rejected with a log line; the old one stays.
struct ReloadService: Service, CustomStringConvertible {
    var description: String { "ReloadService" }
    let paths: DataPaths
    let configuration: ConfigurationHolder
    let monitor: BatteryMonitor
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            notifier.notify("RELOADING=1")
            do {
                let fresh = try AgentConfiguration.load(from: paths.configFile)
                configuration.replace(fresh)
                monitor.reevaluate()
                logger.info("configuration reloaded", metadata: ["alarm": "\(fresh.alarm.map(\.description) ?? "none")"])
            } catch {
                logger.error("configuration rejected, keeping the previous one", metadata: ["error": "\(error)"])
            }
            notifier.notify("READY=1")
        }
    }
}
