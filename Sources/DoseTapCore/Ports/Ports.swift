import Foundation

/// Time, as the outside world gives it. Named `WallClock` (not `Clock`, as design.md says) so it does not
/// shadow the standard library's `Clock` protocol in every file that imports Core.
public protocol WallClock: Sendable {
    func now() -> Date
    var timeZone: TimeZone { get }
}

/// The machine's power supplies.
public protocol PowerSupplySource: Sendable {
    /// Every power supply as it is now. An unplugged supply is simply absent.
    func snapshot() throws -> [RawPowerSupply]
    /// A fresh read of one supply, or nil when it has gone.
    func read(name: String) -> RawPowerSupply?
    /// Hotplug and change notifications, delivered from the adapter's own queue. The stream ends when
    /// the consumer stops iterating it.
    func events() -> AsyncStream<PowerSupplyEvent>
}

public enum PowerSupplyEvent: Sendable, Equatable {
    case added(RawPowerSupply)
    case changed(RawPowerSupply)
    case removed(name: String)
}

/// The recorded battery history (bounded; the store keeps the last seven days).
public protocol BatteryHistoryStore: Sendable {
    func append(_ sample: BatterySample) throws
    func samples(since: Date) throws -> [BatterySample]
}

/// Tells the person something: the log today, desktop notifications, sound and vibration later.
public protocol Notifier: Sendable {
    func post(_ notification: DoseNotification)
    /// A night is first seen waiting for Dose 2, before any of its reminders is posted: the feedback
    /// settings of its reminders are fixed now (an edit applies to the next night).
    func nightScheduled(session: UUID)
}

extension Notifier {
    public func nightScheduled(session: UUID) {}
}

/// A vibration motor (evdev force feedback). `isSupported` is false on machines without one; playing
/// then does nothing — "Not supported on this device" is a state, not an error.
public protocol Haptics: Sendable {
    var isSupported: Bool { get }
    /// Plays a pattern to the end (or until the task is cancelled), then removes the effect.
    func play(_ pattern: HapticPattern) async throws
}

/// The machine's sounds.
public protocol SoundCatalog: Sendable {
    /// Every sound of the themes in `$XDG_DATA_DIRS/sounds` and `~/.local/share/sounds`, by event name.
    func list() throws -> [SoundInfo]
}

/// Plays a sound file through a real audio path. A new sound stops the one playing.
public protocol SoundPlayer: Sendable {
    /// Plays to the end, or until `stop()` or cancellation.
    func play(_ sound: SoundInfo) async throws
    /// Plays at `volume` (0…1 of full scale) where the player can; at full scale where it cannot.
    func play(_ sound: SoundInfo, volume: Double) async throws
    func stop()
}

extension SoundPlayer {
    public func play(_ sound: SoundInfo, volume: Double) async throws {
        try await play(sound)
    }
}

/// Why a `sleep(until:)` returned.
public enum WakeReason: Sendable, Equatable {
    /// The wall clock reached the deadline.
    case due
    /// The wall clock was set (an NTP step, a manual date change) before the deadline: plan again.
    case clockChanged
    /// The waiting task was cancelled.
    case cancelled
}

/// The scheduling port: every timer of the agent waits here, for a wall-clock instant. Tests use a fake
/// whose time they move; the machine's implementation (`TimerFDScheduler`) is a `timerfd` on
/// `CLOCK_REALTIME`, absolute and cancelled when the clock is set, so a reminder rings at its minute
/// even after the clock was stepped (every Raspberry Pi at boot: it has no RTC) or the machine slept.
public protocol Scheduling: WallClock {
    /// Suspends until the wall clock reads `deadline` (at once if it already has), or until the wall
    /// clock is set, or until the task is cancelled.
    func sleep(until deadline: Date) async -> WakeReason
}

extension Scheduling {
    /// Waits `seconds` of wall-clock time from now (a clock step shortens or lengthens it accordingly).
    public func sleep(for seconds: TimeInterval) async -> WakeReason {
        await sleep(until: now().addingTimeInterval(seconds))
    }
}

/// Runs a program without a shell and returns what it printed.
public protocol CommandRunner: Sendable {
    /// The standard output of `argv` (at most 64 KiB), or a one-line reason: it could not start, it failed
    /// (a non-zero exit), or it ran past `timeout` seconds and was killed (with everything it started).
    func output(of argv: [String], timeout: TimeInterval) async throws -> String
}

/// One outbound HTTP POST (#12: an ntfy push, a phone call), answered as the retry policy reads it.
public struct OutboundRequest: Sendable, Equatable {
    public var url: String
    public var headers: [String: String]
    public var body: [UInt8]
    /// `user:password` for HTTP basic authentication, or nil.
    public var basicAuth: (user: String, password: String)?

    public init(url: String, headers: [String: String], body: [UInt8], basicAuth: (user: String, password: String)? = nil) {
        self.url = url
        self.headers = headers
        self.body = body
        self.basicAuth = basicAuth
    }

    public static func == (a: OutboundRequest, b: OutboundRequest) -> Bool {
        a.url == b.url && a.headers == b.headers && a.body == b.body && a.basicAuth?.user == b.basicAuth?.user
            && a.basicAuth?.password == b.basicAuth?.password
    }
}

/// The outbound HTTP port: one attempt, no retries (`OutboundRetryPolicy` decides those). Throwing is not
/// part of it: a failed connection is `.noAnswer`. The caller cancels the task at the policy's timeout.
public protocol OutboundHTTP: Sendable {
    func post(_ request: OutboundRequest) async -> OutboundRetryPolicy.Attempt
}
