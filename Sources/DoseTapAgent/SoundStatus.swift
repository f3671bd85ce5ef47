import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// What the running agent found about playing the alarm's sound (`SoundCheck`), for the command line and
/// the dashboard: `sound-status.json` in the data directory, locked for as long as the agent runs (the same
/// rule as `wake-status.json`: the agent's environment — its DOSETAP_AUDIO_DEVICE, its session's sound
/// server — is the one that rings, not a shell's).
public struct SoundStatusFile: Sendable {
    public static let name = AgentRecord.soundName
    public let file: AgentStatusFile

    public init(dataDirectory: URL) {
        file = AgentStatusFile(dataDirectory: dataDirectory, name: Self.name)
    }

    /// The agent's side, or nil with the reason logged (the command line then checks for itself).
    public func hold(logger: Logger) -> AgentStatusFile.Holder? {
        do {
            return try file.hold()
        } catch {
            logger.notice("cannot record whether the alarm can be heard for the command line; it will check for itself",
                          metadata: ["error": "\(error)"])
            return nil
        }
    }

    static func encode(_ problem: SoundUnavailable?, pid: Int32, now: Date) -> String {
        var fields: [(String, JSON)] = [("pid", .int(Int(pid))), ("checkedAt", .string(now.rfc3339(in: TimeZone(identifier: "UTC")!))),
                                        ("canPlay", .bool(problem == nil))]
        if let problem { fields += [("reason", .string(problem.reason)), ("fix", .string(problem.fix))] }
        return JSON.object(fields).text + "\n"
    }

    /// The running agent's finding: `.some(nil)` it can play, `.some(problem)` it cannot, nil when no agent
    /// holds the file (or it is unreadable).
    public func readFromRunningAgent() -> SoundUnavailable?? {
        file.readFromRunningAgent().flatMap(Self.decode)
    }

    static func decode(_ data: Data) -> SoundUnavailable?? { AgentRecord.sound(Array(data)) }
}

/// Whether the alarm can be heard, as the command line and the dashboard tell it: the running agent's
/// finding, else this process's own check.
public enum SoundWarningCheck {
    public static func problem(dataDirectory: URL, own: @autoclosure () -> SoundUnavailable? = SoundCheck.current()) -> SoundUnavailable? {
        if let recorded = SoundStatusFile(dataDirectory: dataDirectory).readFromRunningAgent() { return recorded }
        return own()
    }
}

/// Everything that stands between an enabled alarm and its being heard, one line each: the wake warning
/// ("This machine may sleep through the alarm: …"), then the sound warning ("This machine cannot play the
/// alarm: …"), then the running agent's word that it cannot write its data ("DoseTap cannot write its data (the disk
/// is full): alarms still ring, doses cannot be recorded — …", #51).
public enum AlarmWarnings {
    public static func lines(dataDirectory: URL) -> [String] {
        [WakeCheck.problem(dataDirectory: dataDirectory)?.message, SoundWarningCheck.problem(dataDirectory: dataDirectory)?.message,
         AgentRecord.storeProblem(dataDirectory: dataDirectory.path)]
            .compactMap { $0 }
    }
}

/// Checks at start whether the alarm can be heard and says so in the log — "This machine cannot play the
/// alarm: <reason>. Fix: <fix>", as loudly as the wake warning — and records it for the command line. Checks
/// again when a sound card comes or goes (udev) and, after a problem, once a minute later (a session's sound
/// server often starts after the agent). Nothing runs in between: no wake-up on battery.
struct SoundWatchService: Service, CustomStringConvertible {
    var description: String { "SoundWatchService" }
    let check: @Sendable () -> SoundUnavailable?
    let status: AgentStatusFile.Holder?
    let udev: UdevClient?
    let clock: any Scheduling
    let logger: Logger
    /// After a problem at start, the one re-check this much later.
    static let recheckAfter: TimeInterval = 60

    func run() async throws {
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        var token: AnyObject?
        if let udev {
            do {
                token = try SoundHardware.watch(udev: udev) { continuation.yield() }
            } catch {
                logger.notice("sound cards are not watched: plugging one in is noticed at the next start", metadata: ["error": "\(error)"])
            }
        }
        let first = report(nil, first: true)
        let recheck = first == nil ? nil : Task { [clock] in
            if await clock.sleep(for: Self.recheckAfter) == .due { continuation.yield() }
        }
        await cancelWhenGracefulShutdown {
            var last = first
            for await _ in changes {
                last = report(last, first: false)
            }
        }
        recheck?.cancel()
        continuation.finish()
        withExtendedLifetime(token) {}
    }

    /// Checks, logs a change (the first finding always, a problem as an error), records; returns the finding.
    private func report(_ previous: SoundUnavailable?, first: Bool) -> SoundUnavailable? {
        let problem = check()
        // Recorded first: whoever reads the log line finds the command line already telling the same.
        status?.write(Array(SoundStatusFile.encode(problem, pid: getpid(), now: Date()).utf8))
        if let problem {
            if first || problem != previous { logger.error("\(DisplayText.escaped(problem.message, maxLength: 1000))") }
        } else if first || previous != nil {
            logger.info("the alarm can be heard on this machine")
        }
        return problem
    }
}
