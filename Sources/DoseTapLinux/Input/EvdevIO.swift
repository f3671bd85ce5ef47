internal import CLinuxInput
import Glibc

/// A failed evdev system call: which one, and its errno.
public struct EvdevError: Error, Equatable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation) failed: \(String(cString: strerror(errno)))" }
}

/// The file-descriptor layer under `ForceFeedbackHaptics`: exactly the calls that reach the kernel.
///
/// `SystemEvdevIO` makes the real calls (through the `CLinuxInput` shims); tests pass a recording fake
/// and check what is opened, uploaded (`KernelForceFeedbackEffect`: the `struct ff_effect`, byte for byte
/// what `EVIOCSFF` receives),
/// written (`EV_FF` events), removed and closed.
public protocol EvdevIO: Sendable {
    /// `open(path, O_RDWR | O_CLOEXEC)`.
    func open(_ path: String) throws(EvdevError) -> Int32
    func close(_ fd: Int32)
    /// `EVIOCGBIT(EV_FF)`.
    func forceFeedbackCapabilities(_ fd: Int32) throws(EvdevError) -> ForceFeedbackCapabilities
    /// `EVIOCGEFFECTS`.
    func effectCount(_ fd: Int32) throws(EvdevError) -> Int
    /// `EVIOCSFF`: uploads (id -1) or updates the effect; the kernel's id is written back into `effect.id`.
    func upload(_ fd: Int32, _ effect: inout KernelForceFeedbackEffect) throws(EvdevError)
    /// `EVIOCRMFF`.
    func remove(_ fd: Int32, effectID: Int16) throws(EvdevError)
    /// `write(2)` of one `struct input_event`.
    func write(_ fd: Int32, type: UInt16, code: UInt16, value: Int32) throws(EvdevError)
}

/// The real calls.
public struct SystemEvdevIO: EvdevIO {
    public init() {}

    public func open(_ path: String) throws(EvdevError) -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw EvdevError("open", errno: Glibc.errno) }
        return fd
    }

    public func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    public func forceFeedbackCapabilities(_ fd: Int32) throws(EvdevError) -> ForceFeedbackCapabilities {
        let wordCount = (Int(FF_CNT) + UInt.bitWidth - 1) / UInt.bitWidth
        var words = [UInt](repeating: 0, count: wordCount)
        let rc = words.withUnsafeMutableBytes { buffer in
            dosetap_evdev_get_ff_bits(fd, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count)
        }
        guard rc >= 0 else { throw EvdevError("EVIOCGBIT(EV_FF)", errno: Glibc.errno) }
        return ForceFeedbackCapabilities(words: words)
    }

    public func effectCount(_ fd: Int32) throws(EvdevError) -> Int {
        var count: Int32 = 0
        guard dosetap_evdev_get_effect_count(fd, &count) >= 0 else {
            throw EvdevError("EVIOCGEFFECTS", errno: Glibc.errno)
        }
        return Int(count)
    }

    public func upload(_ fd: Int32, _ effect: inout KernelForceFeedbackEffect) throws(EvdevError) {
        guard dosetap_evdev_upload_effect(fd, &effect.raw) >= 0 else {
            throw EvdevError("EVIOCSFF", errno: Glibc.errno)
        }
    }

    public func remove(_ fd: Int32, effectID: Int16) throws(EvdevError) {
        guard dosetap_evdev_remove_effect(fd, Int32(effectID)) >= 0 else {
            throw EvdevError("EVIOCRMFF", errno: Glibc.errno)
        }
    }

    public func write(_ fd: Int32, type: UInt16, code: UInt16, value: Int32) throws(EvdevError) {
        guard dosetap_evdev_write_event(fd, type, code, value) >= 0 else {
            throw EvdevError("write(EV_FF)", errno: Glibc.errno)
        }
    }
}

/// A force-feedback effect as DoseTap builds it, and as it reads back out of a `struct ff_effect`.
public struct ForceFeedbackEffect: Sendable, Equatable, Hashable {
    public enum Kind: String, Sendable, Equatable, Hashable {
        case rumble, periodic, constant
    }

    public var kind: Kind
    public var id: Int16
    /// Both motors of an FF_RUMBLE effect (pwm-vibrator uses the strong one, gpio-vibrator only asks for non-zero).
    public var magnitude: UInt16
    public var lengthMilliseconds: UInt16
    public var delayMilliseconds: UInt16

    /// The sine period of an FF_PERIODIC effect.
    public static let periodMilliseconds: UInt16 = 50
    /// 90° ("left"); memoryless drivers split periodic and constant effects between motors by direction.
    public static let direction: UInt16 = 0x4000

    public init(kind: Kind, id: Int16 = -1, magnitude: UInt16, lengthMilliseconds: UInt16, delayMilliseconds: UInt16 = 0) {
        self.kind = kind
        self.id = id
        self.magnitude = magnitude
        self.lengthMilliseconds = lengthMilliseconds
        self.delayMilliseconds = delayMilliseconds
    }

    /// The signed level of periodic and constant effects: half the rumble scale (0…0x7FFF).
    var signedLevel: Int16 { Int16(magnitude >> 1) }

    /// The kernel struct `EVIOCSFF` receives.
    public var kernel: KernelForceFeedbackEffect { KernelForceFeedbackEffect(raw: raw) }

    /// The kernel struct `EVIOCSFF` receives, as C declares it.
    var raw: ff_effect {
        var effect = ff_effect()
        switch kind {
        case .rumble:
            dosetap_ff_effect_rumble(&effect, id, magnitude, magnitude, lengthMilliseconds, delayMilliseconds)
        case .periodic:
            dosetap_ff_effect_periodic(&effect, id, UInt16(FF_SINE), Self.periodMilliseconds, signedLevel,
                                       Self.direction, lengthMilliseconds, delayMilliseconds)
        case .constant:
            dosetap_ff_effect_constant(&effect, id, signedLevel, Self.direction, lengthMilliseconds, delayMilliseconds)
        }
        return effect
    }
}

/// A `struct ff_effect` exactly as `EVIOCSFF` receives it (and writes the kernel's id back into), without
/// its C type in the API: build it from a `ForceFeedbackEffect`, read it back with `fields`.
public struct KernelForceFeedbackEffect: Sendable {
    var raw: ff_effect

    init(raw: ff_effect) { self.raw = raw }

    /// The effect's id: -1 to upload a new one; the kernel's id after `EVIOCSFF`.
    public var id: Int16 {
        get { raw.id }
        set { raw.id = newValue }
    }

    /// What it holds, field by field.
    public var fields: RawForceFeedbackEffect { RawForceFeedbackEffect(raw) }

    /// Its bytes, as the ioctl passes them (48 on Linux).
    public var bytes: [UInt8] {
        withUnsafeBytes(of: raw) { Array($0) }
    }
}

/// What a `struct ff_effect` holds, read field by field (for logs and for tests of what was uploaded).
public struct RawForceFeedbackEffect: Sendable, Equatable, Hashable {
    public var type: UInt16
    public var id: Int16
    public var direction: UInt16
    public var lengthMilliseconds: UInt16
    public var delayMilliseconds: UInt16
    public var strongMagnitude: UInt16
    public var weakMagnitude: UInt16
    public var periodicWaveform: UInt16
    public var periodicPeriod: UInt16
    public var periodicMagnitude: Int16
    public var constantLevel: Int16

    init(_ effect: ff_effect) {
        var copy = effect
        type = effect.type
        id = effect.id
        direction = effect.direction
        lengthMilliseconds = effect.replay.length
        delayMilliseconds = effect.replay.delay
        strongMagnitude = dosetap_ff_effect_rumble_strong(&copy)
        weakMagnitude = dosetap_ff_effect_rumble_weak(&copy)
        periodicWaveform = dosetap_ff_effect_periodic_waveform(&copy)
        periodicPeriod = dosetap_ff_effect_periodic_period(&copy)
        periodicMagnitude = dosetap_ff_effect_periodic_magnitude(&copy)
        constantLevel = dosetap_ff_effect_constant_level(&copy)
    }
}
