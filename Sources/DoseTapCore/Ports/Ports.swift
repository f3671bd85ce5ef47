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
    func stop()
}
