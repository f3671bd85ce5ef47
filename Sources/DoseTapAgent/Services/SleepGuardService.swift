import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle

/// Makes sure the machine wakes from suspend for the next alarm and dose reminder (#11, "Waking to ring").
///
/// It holds a logind delay inhibitor lock; on `PrepareForSleep(true)` it arms the wake-up (the
/// `WakeAlarm` port) `wakeLead` before `nextWake()` and logs it, then releases the lock so the machine may sleep; on
/// `PrepareForSleep(false)` (resumed) it takes the lock again. When no way to wake the machine exists it
/// says so — "This machine may sleep through the alarm: …" — at start (when there is something to wake
/// for) and at every sleep. Without a system bus or logind it logs one clear line and keeps running.
public final class SleepGuardService: Service, Sendable, CustomStringConvertible {
    public var description: String { "SleepGuardService" }

    /// Why DoseTap holds the lock, as `systemd-inhibit --list` shows it.
    public static let why = "Arming the wake-up for the next alarm or dose reminder"
    /// A wake-up closer than this is armed this far ahead (an RTC refuses a time that has passed).
    static let minimumLead: TimeInterval = 2
    /// The machine is woken this long before the alarm or reminder, so that it has resumed — devices, sound,
    /// the agent's timers — when the minute comes: an RTC wake plus a resume takes seconds (measured in the VM
    /// tier: a ring armed for its very second rang late by the resume's length).
    public static let wakeLead: TimeInterval = 30

    private let connect: @Sendable () throws -> DBusConnection
    private let wake: any WakeAlarm
    private let nextWake: @Sendable () -> Date?
    private let status: WakeStatusFile.Recorder?
    private let clock: any WallClock
    private let logger: Logger
    private let night: NightWatch?
    private let beforeSleep: @Sendable () async -> Void

    /// - Parameters:
    ///   - connect: the system bus (the agent: `DBusConnection(bus: .system)`; tests: a private bus).
    ///   - nextWake: when the machine must next be awake (`Agent.nextWake`), or nil for nothing.
    ///   - status: where the finding is recorded for the command line (`WakeStatusFile`).
    ///   - night: what the battery forecast learns of the machine's nights: the level on both sides of every
    ///     suspend, whether the machine can wake itself, and logind's facts (lid, idle action, inhibitors).
    ///   - beforeSleep: the re-check at `PrepareForSleep(true)`, awaited before the lock is released (the
    ///     agent's: every alarm forecast asleep, and the nudge shown and sounded when one is at risk even so).
    public init(connect: @escaping @Sendable () throws -> DBusConnection, wake: any WakeAlarm, nextWake: @escaping @Sendable () -> Date?,
                status: WakeStatusFile.Recorder? = nil, clock: any WallClock, logger: Logger, night: NightWatch? = nil,
                beforeSleep: @escaping @Sendable () async -> Void = {}) {
        self.night = night
        self.beforeSleep = beforeSleep
        self.connect = connect
        self.wake = wake
        self.nextWake = nextWake
        self.status = status
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        let capability = wake.capability()
        status?.record(capability, now: clock.now())
        if case .success = capability { night?.update(canWake: true) } else { night?.update(canWake: false) }
        switch capability {
        case .success(let method):
            logger.info("wake from suspend: \(method)")
        case .failure(let problem):
            if nextWake() != nil { logger.warning("\(problem.message)") }
        }
        let connection: DBusConnection
        let sleeps: AsyncStream<Bool>
        let logind: LogindClient
        do {
            connection = try connect()
            logind = LogindClient(connection: connection, logger: logger)
            sleeps = try await logind.prepareForSleep()
        } catch {
            logger.notice("no system bus: DoseTap cannot arm a wake-up before the machine suspends (it keeps running; keep the machine awake at night)",
                          metadata: ["error": "\(DisplayText.escaped("\(error)", maxLength: 1000))"])
            try? await gracefulShutdown()
            return
        }
        var lock = await takeLock(logind)
        await readConditions(logind, canWake: capability)
        await withGracefulShutdownHandler {
            for await sleeping in sleeps {
                if sleeping {
                    night?.willSleep(at: clock.now())
                    await beforeSleep()
                    prepareForSleep()
                    lock?.release()
                    lock = nil
                    logger.debug("sleep inhibitor released")
                } else {
                    logger.info("resumed from suspend")
                    night?.resumed(at: clock.now())
                    lock?.release()
                    lock = await takeLock(logind)
                    let capability = wake.capability()
                    status?.record(capability, now: clock.now())
                    await readConditions(logind, canWake: capability)
                }
            }
        } onGracefulShutdown: {
            connection.close()
        }
        lock?.release()
    }

    /// logind's facts for the battery forecast: the lid switch, the idle action, who blocks sleep.
    private func readConditions(_ logind: LogindClient, canWake: Result<WakeMethod, WakeUnavailable>) async {
        guard let night else { return }
        var conditions = await logind.sleepConditions()
        if case .success = canWake { conditions.canWake = true } else { conditions.canWake = false }
        night.update(conditions: conditions)
        if !conditions.sleepBlockedBy.isEmpty {
            logger.info("sleep is blocked: the battery forecast assumes this machine stays awake",
                        metadata: ["by": "\(conditions.sleepBlockedBy.joined(separator: ","))"])
        }
    }

    private func takeLock(_ logind: LogindClient) async -> InhibitorLock? {
        do {
            let lock = try await logind.inhibitSleep(why: Self.why)
            logger.debug("sleep inhibitor taken")
            return lock
        } catch {
            logger.notice("cannot take logind's sleep inhibitor: the wake-up is armed only if DoseTap hears PrepareForSleep in time",
                          metadata: ["error": "\(DisplayText.escaped("\(error)", maxLength: 1000))"])
            return nil
        }
    }

    /// The machine is about to suspend: arm the wake-up for the next alarm or reminder (or clear it).
    func prepareForSleep() {
        let now = clock.now()
        guard let target = nextWake() else {
            wake.disarm()
            logger.info("going to sleep: nothing to wake for")
            return
        }
        let at = max(target.addingTimeInterval(-Self.wakeLead), now.addingTimeInterval(Self.minimumLead))
        do {
            let method = try wake.arm(at: at)
            // A way that appeared since the start (the wake helper installed later) is what the CLI reports now.
            status?.record(.success(method), now: now)
            night?.update(canWake: true)
            logger.notice("going to sleep: wake-up armed for \(at.rfc3339(in: clock.timeZone)) through \(method), for \(target.rfc3339(in: clock.timeZone))")
        } catch let problem as WakeUnavailable {
            status?.record(.failure(problem), now: now)
            night?.update(canWake: false)
            logger.warning("\(problem.message)")
        } catch {
            logger.error("going to sleep: cannot arm the wake-up for \(at.rfc3339(in: clock.timeZone))",
                         metadata: ["error": "\(DisplayText.escaped("\(error)", maxLength: 1000))"])
        }
    }
}
