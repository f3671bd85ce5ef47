import DoseTapCore
import Foundation
import Synchronization

/// A clock that stands still until a test moves it.
public final class FakeClock: WallClock {
    private let instant: Mutex<Date>
    public let timeZone: TimeZone

    public init(_ start: Date, timeZone: TimeZone = TimeZone(identifier: "UTC")!) {
        instant = Mutex(start)
        self.timeZone = timeZone
    }

    public func now() -> Date { instant.withLock { $0 } }
    public func advance(by seconds: TimeInterval) { instant.withLock { $0 = $0.addingTimeInterval(seconds) } }
    public func set(_ date: Date) { instant.withLock { $0 = date } }
}

/// Power supplies held in memory; tests change them and push events.
public final class FakePowerSupplySource: PowerSupplySource {
    private struct State {
        var supplies: [String: RawPowerSupply] = [:]
        var continuations: [AsyncStream<PowerSupplyEvent>.Continuation] = []
        var reads = 0
    }
    private let state: Mutex<State>

    public init(_ supplies: [RawPowerSupply] = []) {
        var initial = State()
        for s in supplies { initial.supplies[s.name] = s }
        state = Mutex(initial)
    }

    public func snapshot() throws -> [RawPowerSupply] {
        state.withLock { Array($0.supplies.values).sorted { $0.name < $1.name } }
    }

    public func read(name: String) -> RawPowerSupply? {
        state.withLock {
            $0.reads += 1
            return $0.supplies[name]
        }
    }

    /// How many single-supply reads (polls) happened.
    public var readCount: Int { state.withLock { $0.reads } }

    public func events() -> AsyncStream<PowerSupplyEvent> {
        let (stream, continuation) = AsyncStream<PowerSupplyEvent>.makeStream()
        state.withLock { $0.continuations.append(continuation) }
        return stream
    }

    /// Changes a supply and announces it, as a udev `change` would.
    public func change(_ supply: RawPowerSupply) {
        let continuations = state.withLock {
            $0.supplies[supply.name] = supply
            return $0.continuations
        }
        for c in continuations { c.yield(.changed(supply)) }
    }

    /// Changes a supply silently (the kernel updated sysfs without a uevent; only a poll sees it).
    public func changeSilently(_ supply: RawPowerSupply) {
        state.withLock { $0.supplies[supply.name] = supply }
    }

    public func remove(_ name: String) {
        let continuations = state.withLock {
            $0.supplies[name] = nil
            return $0.continuations
        }
        for c in continuations { c.yield(.removed(name: name)) }
    }
}

/// Battery history in memory.
public final class InMemoryBatteryHistory: BatteryHistoryStore {
    private let stored = Mutex<[BatterySample]>([])
    public init(_ samples: [BatterySample] = []) { stored.withLock { $0 = samples } }
    public func append(_ sample: BatterySample) throws { stored.withLock { $0.append(sample) } }
    public func samples(since: Date) throws -> [BatterySample] {
        stored.withLock { $0.filter { $0.at >= since }.sorted { $0.at < $1.at } }
    }
    public var all: [BatterySample] { stored.withLock { $0 } }
}

extension RawPowerSupply {
    /// A laptop battery reporting energy, for tests.
    public static func battery(_ name: String = "BAT0", status: String = "Discharging", capacity: Int? = nil,
                               energyNowWh: Double = 40, energyFullWh: Double = 50, powerW: Double? = 10) -> RawPowerSupply {
        var attributes: [String: String] = [
            "type": "Battery", "present": "1", "status": status,
            "energy_now": String(Int(energyNowWh * 1e6)), "energy_full": String(Int(energyFullWh * 1e6)),
            "voltage_now": "11900000",
        ]
        if let capacity { attributes["capacity"] = String(capacity) }
        if let powerW { attributes["power_now"] = String(Int(powerW * 1e6)) }
        return RawPowerSupply(name: name, attributes: attributes)
    }

    public static func mains(_ name: String = "AC", online: Bool) -> RawPowerSupply {
        RawPowerSupply(name: name, attributes: ["type": "Mains", "online": online ? "1" : "0"])
    }
}

/// "yyyy-MM-dd HH:mm:ss" read as a wall-clock time in `zone`.
public func localDate(_ text: String, _ zone: TimeZone) -> Date {
    let f = DateFormatter()
    f.locale = Locale(identifier: "en_US_POSIX")
    f.timeZone = zone
    f.dateFormat = "yyyy-MM-dd HH:mm:ss"
    return f.date(from: text)!
}

/// A vibration motor that records what it was asked to play.
public final class RecordingHaptics: Haptics {
    private let played = Mutex<[(HapticPattern, Date)]>([])
    public let isSupported: Bool
    public init(supported: Bool = true) { isSupported = supported }
    public func play(_ pattern: HapticPattern) async throws {
        guard isSupported else { return }
        played.withLock { $0.append((pattern, Date())) }
    }
    public var patterns: [HapticPattern] { played.withLock { $0.map(\.0) } }
    public var times: [Date] { played.withLock { $0.map(\.1) } }
}

/// Sounds held in memory.
public struct FixedSoundCatalog: SoundCatalog {
    public var sounds: [SoundInfo]
    public init(_ sounds: [SoundInfo]) { self.sounds = sounds }
    public func list() throws -> [SoundInfo] { sounds }
}

/// A player that records what it played.
public final class RecordingSoundPlayer: SoundPlayer {
    private let played = Mutex<[SoundInfo]>([])
    public init() {}
    public func play(_ sound: SoundInfo) async throws { played.withLock { $0.append(sound) } }
    public func stop() {}
    public var sounds: [SoundInfo] { played.withLock { $0 } }
}
