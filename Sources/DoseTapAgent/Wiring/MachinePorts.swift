import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation

/// The machine's adapters behind the application layer's ports, for the faces that read the machine
/// afresh (the command line, the dashboard's battery when no agent shares one): the composition root the
/// use cases do not reach into (#26).
public enum MachinePorts {
    /// The install's identity: its secret (`install-secret`, 0600, beside the database), created on first use.
    public static func installIdentity(dataDirectory: URL) throws -> InstallIdentity {
        do { return InstallIdentity(secret: try InstallSecret.loadOrCreate(dataDirectory: dataDirectory)) } catch {
            throw UseCaseError.unavailable(error.description)
        }
    }

    /// The power supplies now, read from sysfs as libudev reads them (`SysfsPowerSupplySource`: the one-shot front
    /// reads them the same way, #29); none when they cannot be listed.
    @Sendable public static func supplies() -> [PowerSupplyReading] {
        ((try? SysfsPowerSupplySource().snapshot()) ?? []).map(PowerSupplyReading.init(raw:))
    }

    /// The battery read afresh: the supplies from sysfs, the power-off level from UPower's configuration
    /// (`/etc/UPower`, or `DOSETAP_UPOWER_DIR`), and whether the machine can wake itself for the alarm (the
    /// running agent's finding in the data folder, else this process's own check of the RTC).
    public static func batteries(store: DataStore, clock: any WallClock) -> BatteryUseCases {
        BatteryUseCases(store: store, clock: clock, source: { SysfsPowerSupplySource() },
                        powerOff: { UPowerConfigFiles.read().policy },
                        canWake: { directory in
                            if let directory { return WakeCheck.problem(dataDirectory: directory) == nil }
                            if case .success = LinuxWakeAlarm().capability() { return true }
                            return false
                        })
    }

    /// The dose use case of a face that names a data folder, with the machine's battery for the nudge.
    public static func doses(store: DataStore, clock: any WallClock, events: EventBus? = nil) throws -> DoseUseCases {
        try DoseUseCases.open(store: store, clock: clock, battery: { batteries(store: $0, clock: clock) }, events: events)
    }
}
