import DoseTapCore
import Foundation
import Synchronization

/// A clock that stands still until a test moves it; also the fake scheduling port: `set`/`advance` are
/// time passing (sleepers whose deadline is reached wake with `.due`), `step` is the wall clock being set
/// (every sleeper wakes: `.due` when its deadline is reached, else `.clockChanged`).
public final class FakeClock: Scheduling {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<WakeReason, Never>
    }
    private struct State {
        var now: Date
        var sleepers: [UUID: Sleeper] = [:]
        var waitingForSleepers: [(Int, CheckedContinuation<Void, Never>)] = []
    }
    private let state: Mutex<State>
    public let timeZone: TimeZone

    public init(_ start: Date, timeZone: TimeZone = TimeZone(identifier: "UTC")!) {
        state = Mutex(State(now: start))
        self.timeZone = timeZone
    }

    public func now() -> Date { state.withLock { $0.now } }
    public func advance(by seconds: TimeInterval) { move(to: now().addingTimeInterval(seconds), stepped: false) }
    public func set(_ date: Date) { move(to: date, stepped: false) }
    /// The wall clock is set (forward or back), as `clock_settime` or an NTP step would.
    public func step(to date: Date) { move(to: date, stepped: true) }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The instants the sleepers wait for, earliest first.
    public var deadlines: [Date] { state.withLock { $0.sleepers.values.map(\.deadline).sorted() } }

    /// Returns once at least `count` tasks sleep on this clock (a test waits for a service to settle,
    /// without sleeping for real).
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.sleepers.count >= count { return true }
                s.waitingForSleepers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func sleep(until deadline: Date) async -> WakeReason {
        let id = UUID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WakeReason, Never>) in
                let (immediate, waiters) = state.withLock { s -> (WakeReason?, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (.cancelled, []) }
                    if deadline <= s.now { return (.due, []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    let count = s.sleepers.count
                    let ready = s.waitingForSleepers.filter { $0.0 <= count }.map(\.1)
                    s.waitingForSleepers.removeAll { $0.0 <= count }
                    return (nil, ready)
                }
                if let immediate { continuation.resume(returning: immediate) }
                for waiter in waiters { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(returning: .cancelled)
        }
    }

    private func move(to date: Date, stepped: Bool) {
        let woken = state.withLock { s -> [(CheckedContinuation<WakeReason, Never>, WakeReason)] in
            s.now = date
            var out: [(CheckedContinuation<WakeReason, Never>, WakeReason)] = []
            for (id, sleeper) in s.sleepers {
                if sleeper.deadline <= date {
                    out.append((sleeper.continuation, .due))
                    s.sleepers.removeValue(forKey: id)
                } else if stepped {
                    out.append((sleeper.continuation, .clockChanged))
                    s.sleepers.removeValue(forKey: id)
                }
            }
            return out
        }
        for (continuation, reason) in woken { continuation.resume(returning: reason) }
    }
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
    private let played = Mutex<[(sound: SoundInfo, volume: Double, at: Date)]>([])
    private let stops = Mutex(0)
    public init() {}
    public func play(_ sound: SoundInfo) async throws { try await play(sound, volume: 1) }
    public func play(_ sound: SoundInfo, volume: Double) async throws {
        played.withLock { $0.append((sound, volume, Date())) }
    }
    public func stop() { stops.withLock { $0 += 1 } }
    public var sounds: [SoundInfo] { played.withLock { $0.map(\.sound) } }
    /// The volume of each play, in order.
    public var volumes: [Double] { played.withLock { $0.map(\.volume) } }
    /// When each play started (real time).
    public var times: [Date] { played.withLock { $0.map(\.at) } }
    public var stopCount: Int { stops.withLock { $0 } }
}
