import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import ServiceLifecycle

/// Pings systemd's watchdog at half its timeout, on the scheduling port. A wall-clock step wakes it at once:
/// it pings and plans again, so setting the clock back can never starve the watchdog into a restart.
struct WatchdogService: Service, CustomStringConvertible {
    var description: String { "WatchdogService" }
    let notifier: SystemdNotifier
    let interval: Duration
    let clock: any Scheduling

    func run() async throws {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        // Shutdown cancels the sleep: the normal end.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                notifier.notify("WATCHDOG=1")
                if await clock.sleep(for: seconds) == .cancelled { return }
            }
        }
    }
}
