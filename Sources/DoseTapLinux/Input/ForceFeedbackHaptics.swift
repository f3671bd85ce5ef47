internal import CLinuxInput
import Dispatch
import DoseTapCore
import Glibc
import Logging

/// Why a vibration failed, in one line.
public struct HapticsError: Error, Equatable, CustomStringConvertible {
    public var device: String
    public var underlying: EvdevError

    public init(device: String, underlying: EvdevError) {
        self.device = device
        self.underlying = underlying
    }

    public var description: String {
        let what = "vibration motor \(device): \(underlying)"
        switch underlying.errno {
        case EACCES, EPERM:
            return what + " (install udev-rules/70-dosetap-vibra.rules or add the user to the input group)"
        case ENODEV, ENOENT, ENXIO:
            return what + " (the device went away)"
        default:
            return what
        }
    }
}

/// What `dosetap haptics test` can show about the motor.
public struct ForceFeedbackDeviceInfo: Sendable, Equatable {
    public var device: ForceFeedbackCandidate
    /// `EVIOCGBIT(EV_FF)` on the open device (authoritative; sysfs said the same at discovery).
    public var capabilities: ForceFeedbackCapabilities
    /// `EVIOCGEFFECTS`.
    public var effectSlots: Int
    /// The effect DoseTap uploads on this device.
    public var effectKind: ForceFeedbackEffect.Kind?
}

/// Sleeps for a duration; throws `CancellationError` when the task is cancelled.
public typealias HapticsSleep = @Sendable (Duration) async throws -> Void

/// Vibrates an evdev force-feedback motor (design §3.4).
///
/// For each `play`: open the device read-write, set `FF_GAIN` to the maximum when the device offers it,
/// upload one effect (FF_RUMBLE with both magnitudes from the pattern; FF_PERIODIC or FF_CONSTANT on
/// devices without rumble) whose replay length is the pulse's on-time, write `EV_FF` play for each pulse
/// and wait on + off; then `EVIOCRMFF` and close. The effect is updated in place (same id) when a pulse
/// has a different on-time. On cancellation (a stop) or an error it writes `EV_FF` stop, removes the
/// effect and closes — no effect is left behind. Cancellation is a stop, not an error: `play` returns.
///
/// No motor → `isSupported` is false and `play` returns at once ("Not supported on this device").
/// Every file-descriptor call runs on this type's own serial queue, through `EvdevIO`.
public final class ForceFeedbackHaptics: Haptics, Sendable {
    private let finder: any VibraDeviceFinder
    private let io: any EvdevIO
    private let sleep: HapticsSleep
    private let logger: Logger
    private let queue = DispatchQueue(label: "dosetap.evdev.ff")

    public init(finder: any VibraDeviceFinder, io: any EvdevIO = SystemEvdevIO(),
                sleep: @escaping HapticsSleep = ForceFeedbackHaptics.schedulerSleep,
                logger: Logger = Logger(label: "dosetap.haptics")) {
        self.finder = finder
        self.io = io
        self.sleep = sleep
        self.logger = logger
    }

    /// The pattern's gaps on the scheduling port (`TimerFDScheduler`), like every timer of the agent.
    public static let schedulerSleep: HapticsSleep = { duration in
        guard await TimerFDScheduler.shared.sleep(elapsing: duration) else { throw CancellationError() }
    }

    /// The machine's motor, found and followed through libudev.
    public convenience init(logger: Logger = Logger(label: "dosetap.haptics")) throws {
        self.init(finder: try UdevVibraFinder(logger: logger), logger: logger)
    }

    /// The machine's motor, found and followed through the process's shared udev client.
    public convenience init(udev: UdevClient, logger: Logger = Logger(label: "dosetap.haptics")) {
        self.init(finder: UdevVibraFinder(udev: udev, logger: logger), logger: logger)
    }

    public var isSupported: Bool { finder.current() != nil }

    /// The motor `play` would use now.
    public var device: ForceFeedbackCandidate? { finder.current() }

    /// Opens the motor and reads what it can do; nil when there is none.
    public func deviceInfo() async throws -> ForceFeedbackDeviceInfo? {
        guard let device = finder.current() else { return nil }
        let io = self.io
        return try await onQueue(device.devnode) { () throws(EvdevError) -> ForceFeedbackDeviceInfo in
            let fd = try io.open(device.devnode)
            defer { io.close(fd) }
            let caps = try io.forceFeedbackCapabilities(fd)
            let slots = try io.effectCount(fd)
            return ForceFeedbackDeviceInfo(device: device, capabilities: caps, effectSlots: slots,
                                           effectKind: caps.preferredEffect)
        }
    }

    public func play(_ pattern: HapticPattern) async throws {
        guard let device = finder.current() else { return }
        guard !pattern.pulses.isEmpty, !Task.isCancelled else { return }
        let path = device.devnode
        let io = self.io

        let fd = try await onQueue(path) { () throws(EvdevError) in try io.open(path) }
        var effect: ForceFeedbackEffect?
        var failure: (any Error)?
        do {
            let caps = try await onQueue(path) { () throws(EvdevError) in try io.forceFeedbackCapabilities(fd) }
            guard let kind = caps.preferredEffect else {
                throw HapticsError(device: path, underlying: EvdevError("force feedback (no rumble, periodic or constant effect)", errno: EOPNOTSUPP))
            }
            if caps.hasGain {
                try await onQueue(path) { () throws(EvdevError) in
                    try io.write(fd, type: UInt16(EV_FF), code: UInt16(FF_GAIN), value: 0xFFFF)
                }
            }
            for pulse in pattern.pulses {
                let on = Self.clampMilliseconds(pulse.onMilliseconds)
                let off = max(0, pulse.offMilliseconds)
                if on > 0 {
                    if effect?.lengthMilliseconds != on {
                        var next = ForceFeedbackEffect(kind: kind, id: effect?.id ?? -1, magnitude: pattern.magnitude,
                                                       lengthMilliseconds: on)
                        let spec = next
                        next.id = try await onQueue(path) { () throws(EvdevError) -> Int16 in
                            var raw = spec.kernel
                            try io.upload(fd, &raw)
                            return raw.id
                        }
                        effect = next
                    }
                    let id = effect!.id
                    try await onQueue(path) { () throws(EvdevError) in
                        try io.write(fd, type: UInt16(EV_FF), code: UInt16(bitPattern: id), value: 1)
                    }
                }
                try await sleep(.milliseconds(Int(on) + off))
            }
        } catch {
            failure = error
        }

        // Clean up on every path: stop (only after a cancel or an error), remove, close.
        let uploaded = effect?.id
        let stopFirst = failure != nil
        await onQueueNonThrowing { [logger] in
            if let id = uploaded {
                if stopFirst {
                    do { try io.write(fd, type: UInt16(EV_FF), code: UInt16(bitPattern: id), value: 0) } catch {
                        logger.debug("stopping the effect failed", metadata: ["device": "\(path)", "error": "\(error)"])
                    }
                }
                do { try io.remove(fd, effectID: id) } catch {
                    // ENODEV: the device and its effects are gone with it; nothing is leaked.
                    logger.debug("removing the effect failed", metadata: ["device": "\(path)", "error": "\(error)"])
                }
            }
            io.close(fd)
        }

        switch failure {
        case nil, is CancellationError: return
        case let error as HapticsError: throw error
        case let error as EvdevError: throw HapticsError(device: path, underlying: error)
        case let error?: throw error
        }
    }

    /// `replay.length` is 16 bits of milliseconds.
    static func clampMilliseconds(_ ms: Int) -> UInt16 {
        UInt16(clamping: max(0, ms))
    }

    /// Runs one file-descriptor operation on the queue; an `EvdevError` becomes a `HapticsError`.
    private func onQueue<T: Sendable>(_ path: String, _ body: @escaping @Sendable () throws(EvdevError) -> T) async throws -> T {
        let result: Result<T, EvdevError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(EvdevError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw HapticsError(device: path, underlying: error)
        }
    }

    private func onQueueNonThrowing(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                body()
                continuation.resume()
            }
        }
    }
}
