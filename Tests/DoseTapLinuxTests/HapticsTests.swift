import CLinuxInput
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Glibc
import Synchronization
import Testing

/// A fake evdev device at the file-descriptor level: records every call `ForceFeedbackHaptics` makes
/// (with the `struct ff_effect` exactly as `EVIOCSFF` would receive it), and the sleeps in between.
private final class RecordingEvdevIO: EvdevIO {
    enum Call: Equatable, CustomStringConvertible {
        case open(String)
        case capabilities(fd: Int32)
        case effectCount(fd: Int32)
        case upload(fd: Int32, RawForceFeedbackEffect)
        case remove(fd: Int32, id: Int16)
        case write(fd: Int32, type: UInt16, code: UInt16, value: Int32)
        case close(fd: Int32)
        case sleep(milliseconds: Int)

        var description: String {
            switch self {
            case .open(let p): "open(\(p))"
            case .capabilities: "EVIOCGBIT(EV_FF)"
            case .effectCount: "EVIOCGEFFECTS"
            case .upload(_, let e): "EVIOCSFF(type \(e.type), id \(e.id), length \(e.lengthMilliseconds))"
            case .remove(_, let id): "EVIOCRMFF(\(id))"
            case .write(_, let t, let c, let v): "write(\(t), \(c), \(v))"
            case .close: "close"
            case .sleep(let ms): "sleep(\(ms))"
            }
        }
    }

    struct State {
        var calls: [(Call, ContinuousClock.Instant)] = []
        var writes = 0
    }

    let fd: Int32 = 42
    let assignedID: Int16
    let capabilities: ForceFeedbackCapabilities
    let openErrno: Int32?
    let uploadErrno: Int32?
    /// The n-th write (1-based) fails with this errno.
    let failingWrite: (number: Int, errno: Int32)?
    let state = Mutex(State())

    init(capabilities: ForceFeedbackCapabilities = RecordingEvdevIO.rumbleAndGain, assignedID: Int16 = 3,
         openErrno: Int32? = nil, uploadErrno: Int32? = nil, failingWrite: (number: Int, errno: Int32)? = nil) {
        self.capabilities = capabilities
        self.assignedID = assignedID
        self.openErrno = openErrno
        self.uploadErrno = uploadErrno
        self.failingWrite = failingWrite
    }

    static let rumbleAndGain = ForceFeedbackCapabilities(codes: [Int(FF_RUMBLE), Int(FF_GAIN)])
    static let rumbleOnly = ForceFeedbackCapabilities(codes: [Int(FF_RUMBLE)])

    var calls: [Call] { state.withLock { $0.calls.map(\.0) } }
    var timedCalls: [(Call, ContinuousClock.Instant)] { state.withLock { $0.calls } }

    func record(_ call: Call) {
        state.withLock { $0.calls.append((call, .now)) }
    }

    func open(_ path: String) throws(EvdevError) -> Int32 {
        record(.open(path))
        if let openErrno { throw EvdevError("open", errno: openErrno) }
        return fd
    }

    func close(_ fd: Int32) { record(.close(fd: fd)) }

    func forceFeedbackCapabilities(_ fd: Int32) throws(EvdevError) -> ForceFeedbackCapabilities {
        record(.capabilities(fd: fd))
        return capabilities
    }

    func effectCount(_ fd: Int32) throws(EvdevError) -> Int {
        record(.effectCount(fd: fd))
        return 16
    }

    func upload(_ fd: Int32, _ effect: inout KernelForceFeedbackEffect) throws(EvdevError) {
        record(.upload(fd: fd, effect.fields))
        if let uploadErrno { throw EvdevError("EVIOCSFF", errno: uploadErrno) }
        if effect.id == -1 { effect.id = assignedID }
    }

    func remove(_ fd: Int32, effectID: Int16) throws(EvdevError) {
        record(.remove(fd: fd, id: effectID))
    }

    func write(_ fd: Int32, type: UInt16, code: UInt16, value: Int32) throws(EvdevError) {
        record(.write(fd: fd, type: type, code: code, value: value))
        let number = state.withLock { s in
            s.writes += 1
            return s.writes
        }
        if let failingWrite, failingWrite.number == number { throw EvdevError("write(EV_FF)", errno: failingWrite.errno) }
    }

    /// A sleeper that records the requested duration and returns at once.
    var instantSleep: HapticsSleep {
        { [self] duration in
            record(.sleep(milliseconds: Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)))
            try Task.checkCancellation()
        }
    }
}

private let motor = ForceFeedbackCandidate(sysname: "event5", devnode: "/dev/input/event5", name: "gpio-vibrator",
                                   capabilities: RecordingEvdevIO.rumbleAndGain, tagged: true, drivers: ["gpio-vibrator"])

private let evFF = UInt16(EV_FF)
private let ffGain = UInt16(FF_GAIN)

@Suite("Haptics: what ForceFeedbackHaptics uploads and writes")
struct HapticsPlaybackTests {
    @Test("each intensity: gain, one FF_RUMBLE upload, one play per pulse with its wait, then EVIOCRMFF of that id",
          arguments: HapticIntensity.allCases)
    func intensity(_ intensity: HapticIntensity) async throws {
        let io = RecordingEvdevIO()
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep)
        let pattern = intensity.pattern
        #expect(haptics.isSupported)
        try await haptics.play(pattern)

        let on = UInt16(pattern.pulses[0].onMilliseconds)
        var expected: [RecordingEvdevIO.Call] = [
            .open("/dev/input/event5"),
            .capabilities(fd: 42),
            .write(fd: 42, type: evFF, code: ffGain, value: 0xFFFF),
            .upload(fd: 42, ForceFeedbackEffect(kind: .rumble, id: -1, magnitude: pattern.magnitude,
                                                lengthMilliseconds: on).kernel.fields),
        ]
        for pulse in pattern.pulses {
            expected.append(.write(fd: 42, type: evFF, code: 3, value: 1))
            expected.append(.sleep(milliseconds: pulse.onMilliseconds + pulse.offMilliseconds))
        }
        expected += [.remove(fd: 42, id: 3), .close(fd: 42)]
        #expect(io.calls == expected)

        // The uploaded struct itself: FF_RUMBLE, new slot, both motors at the pattern's magnitude, replay = on-time.
        guard case .upload(_, let effect)? = io.calls.first(where: { if case .upload = $0 { true } else { false } }) else {
            Issue.record("nothing uploaded")
            return
        }
        #expect(effect.type == UInt16(FF_RUMBLE))
        #expect(effect.id == -1)
        #expect(effect.strongMagnitude == pattern.magnitude)
        #expect(effect.weakMagnitude == pattern.magnitude)
        #expect(effect.lengthMilliseconds == on)
        #expect(effect.delayMilliseconds == 0)
        // Stopping is only for cancel and errors: a pattern that ran out needs none.
        #expect(!io.calls.contains(.write(fd: 42, type: evFF, code: 3, value: 0)))
    }

    @Test("the three intensities differ in magnitude, pulse count and total duration")
    func intensitiesDiffer() async throws {
        var summaries: [(UInt16, Int, Int)] = []
        for intensity in HapticIntensity.allCases {
            let io = RecordingEvdevIO()
            try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep).play(intensity.pattern)
            let plays = io.calls.filter { $0 == .write(fd: 42, type: evFF, code: 3, value: 1) }.count
            let slept = io.calls.reduce(0) { if case .sleep(let ms) = $1 { $0 + ms } else { $0 } }
            let magnitude: UInt16 = io.calls.compactMap { call -> UInt16? in if case .upload(_, let e) = call { e.strongMagnitude } else { nil } }.first ?? 0
            summaries.append((magnitude, plays, slept))
        }
        #expect(summaries.map(\.0) == [0x5000, 0xA000, 0xFFFF])
        #expect(summaries.map(\.1) == [1, 2, 3])
        #expect(summaries.map(\.2) == [150, 800, 1650])
    }

    @Test("no FF_GAIN write when the device does not offer FF_GAIN")
    func noGain() async throws {
        let io = RecordingEvdevIO(capabilities: RecordingEvdevIO.rumbleOnly)
        try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep).play(HapticIntensity.light.pattern)
        #expect(io.calls == [
            .open("/dev/input/event5"), .capabilities(fd: 42),
            .upload(fd: 42, ForceFeedbackEffect(kind: .rumble, magnitude: 0x5000, lengthMilliseconds: 150).kernel.fields),
            .write(fd: 42, type: evFF, code: 3, value: 1), .sleep(milliseconds: 150),
            .remove(fd: 42, id: 3), .close(fd: 42),
        ])
    }

    @Test("real waits: each play write comes on + off after the previous one, the removal after the last pulse")
    func timing() async throws {
        let io = RecordingEvdevIO()
        let pattern = HapticIntensity.medium.pattern   // 2 × (250 on, 150 off)
        try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io).play(pattern)
        let timed = io.timedCalls
        let plays = timed.filter { $0.0 == .write(fd: 42, type: evFF, code: 3, value: 1) }.map(\.1)
        let removal = try #require(timed.first { $0.0 == .remove(fd: 42, id: 3) }?.1)
        let upload = try #require(timed.first { if case .upload = $0.0 { true } else { false } }?.1)
        try #require(plays.count == 2)
        #expect(upload < plays[0])
        #expect(plays[1] - plays[0] >= .milliseconds(400))
        #expect(removal - plays[1] >= .milliseconds(400))
        #expect(timed.last?.0 == .close(fd: 42))
    }

    @Test("cancelled midway: stop written, the uploaded id removed, closed, and play returns without error")
    func cancelled() async throws {
        let io = RecordingEvdevIO()
        let (reached, reachedContinuation) = AsyncStream<Void>.makeStream()
        let sleeps = Mutex(0)
        let sleeper: HapticsSleep = { duration in
            let n = sleeps.withLock { $0 += 1; return $0 }
            io.record(.sleep(milliseconds: Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)))
            if n == 2 {
                reachedContinuation.yield()
                try await Task.sleep(for: .seconds(60))
            }
        }
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: sleeper)
        let task = Task { try await haptics.play(HapticIntensity.strong.pattern) }
        for await _ in reached { break }
        task.cancel()
        try await task.value

        let calls = io.calls
        #expect(Array(calls.suffix(5)) == [
            .write(fd: 42, type: evFF, code: 3, value: 1), .sleep(milliseconds: 550),
            .write(fd: 42, type: evFF, code: 3, value: 0),
            .remove(fd: 42, id: 3), .close(fd: 42),
        ])
        #expect(calls.filter { $0 == .write(fd: 42, type: evFF, code: 3, value: 1) }.count == 2, "the third pulse never plays")
        #expect(calls.filter { if case .remove = $0 { true } else { false } } == [.remove(fd: 42, id: 3)])
    }

    @Test("a failing write (ENODEV mid-play): one-line error, and the effect is still removed and the device closed")
    func writeFails() async throws {
        // Writes: 1 = FF_GAIN, 2 = first play, 3 = second play (fails).
        let io = RecordingEvdevIO(failingWrite: (3, ENODEV))
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep)
        let error = try await #require(throws: HapticsError.self) {
            try await haptics.play(HapticIntensity.strong.pattern)
        }
        #expect(error.underlying.errno == ENODEV)
        #expect(error.description == "vibration motor /dev/input/event5: write(EV_FF) failed: No such device (the device went away)")
        #expect(!error.description.contains("\n"))
        #expect(Array(io.calls.suffix(4)) == [
            .write(fd: 42, type: evFF, code: 3, value: 1),     // the failed one
            .write(fd: 42, type: evFF, code: 3, value: 0),     // stop, tried anyway
            .remove(fd: 42, id: 3), .close(fd: 42),
        ])
    }

    @Test("permission denied on open: the error names the udev rule; nothing uploaded, nothing to close")
    func permissionDenied() async throws {
        let io = RecordingEvdevIO(openErrno: EACCES)
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep)
        let error = try await #require(throws: HapticsError.self) {
            try await haptics.play(HapticIntensity.light.pattern)
        }
        #expect(error.description == "vibration motor /dev/input/event5: open failed: Permission denied (install udev-rules/70-dosetap-vibra.rules or add the user to the input group)")
        #expect(io.calls == [.open("/dev/input/event5")])
    }

    @Test("upload refused (no free slot): error, no removal of an id that was never assigned, closed")
    func uploadFails() async throws {
        let io = RecordingEvdevIO(uploadErrno: ENOSPC)
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep)
        let error = try await #require(throws: HapticsError.self) {
            try await haptics.play(HapticIntensity.medium.pattern)
        }
        #expect(error.underlying == EvdevError("EVIOCSFF", errno: ENOSPC))
        #expect(!io.calls.contains { if case .remove = $0 { true } else { false } })
        #expect(!io.calls.contains { if case .write(_, _, _, let v) = $0 { v == 1 || v == 0 } else { false } })
        #expect(io.calls.last == .close(fd: 42))
    }

    @Test("pulses with different on-times update the same effect in place, and only that id is removed")
    func updateInPlace() async throws {
        let io = RecordingEvdevIO(assignedID: 7)
        let pattern = HapticPattern(intensity: .medium, magnitude: 0x8000, pulses: [
            .init(onMilliseconds: 100, offMilliseconds: 50), .init(onMilliseconds: 100, offMilliseconds: 50),
            .init(onMilliseconds: 300, offMilliseconds: 0),
        ])
        try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io, sleep: io.instantSleep).play(pattern)
        let uploads = io.calls.compactMap { if case .upload(_, let e) = $0 { e } else { nil } }
        #expect(uploads.map(\.id) == [-1, 7])
        #expect(uploads.map(\.lengthMilliseconds) == [100, 300])
        #expect(io.calls.filter { $0 == .write(fd: 42, type: evFF, code: 7, value: 1) }.count == 3)
        #expect(io.calls.filter { if case .remove = $0 { true } else { false } } == [.remove(fd: 42, id: 7)])
    }

    @Test("a device without FF_RUMBLE gets a periodic sine, one with only FF_CONSTANT a constant force")
    func otherEffectKinds() async throws {
        let periodicIO = RecordingEvdevIO(capabilities: ForceFeedbackCapabilities(codes: [Int(FF_PERIODIC), Int(FF_SINE)]))
        try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: periodicIO, sleep: periodicIO.instantSleep)
            .play(HapticIntensity.strong.pattern)
        let periodic = try #require(periodicIO.calls.compactMap { if case .upload(_, let e) = $0 { e } else { nil } }.first)
        #expect(periodic.type == UInt16(FF_PERIODIC))
        #expect(periodic.periodicWaveform == UInt16(FF_SINE))
        #expect(periodic.periodicMagnitude == 0x7FFF)
        #expect(periodic.periodicPeriod == 50)
        #expect(periodic.lengthMilliseconds == 400)

        let constantIO = RecordingEvdevIO(capabilities: ForceFeedbackCapabilities(codes: [Int(FF_CONSTANT)]))
        try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: constantIO, sleep: constantIO.instantSleep)
            .play(HapticIntensity.light.pattern)
        let constant = try #require(constantIO.calls.compactMap { if case .upload(_, let e) = $0 { e } else { nil } }.first)
        #expect(constant.type == UInt16(FF_CONSTANT))
        #expect(constant.constantLevel == 0x2800)
        #expect(constantIO.calls.last == .close(fd: 42))
    }

    @Test("no motor: not supported, and play returns without touching any device")
    func noDevice() async throws {
        let io = RecordingEvdevIO()
        let haptics = ForceFeedbackHaptics(finder: StaticVibraFinder(nil), io: io, sleep: io.instantSleep)
        #expect(!haptics.isSupported)
        try await haptics.play(HapticIntensity.strong.pattern)
        #expect(try await haptics.deviceInfo() == nil)
        #expect(io.calls.isEmpty)
    }

    @Test("deviceInfo reads the capabilities and the effect slots, then closes")
    func deviceInfo() async throws {
        let io = RecordingEvdevIO()
        let info = try #require(try await ForceFeedbackHaptics(finder: StaticVibraFinder(motor), io: io).deviceInfo())
        #expect(info.effectSlots == 16)
        #expect(info.effectKind == .rumble)
        #expect(info.capabilities.hasGain)
        #expect(io.calls == [.open("/dev/input/event5"), .capabilities(fd: 42), .effectCount(fd: 42), .close(fd: 42)])
    }
}

@Suite("Haptics: the C shims and the real file-descriptor layer")
struct HapticsSystemIOTests {
    @Test("struct ff_effect is 48 bytes and the rumble helper fills what EVIOCSFF reads")
    func effectLayout() {
        #expect(dosetap_ff_effect_size() == 48)
        #expect(MemoryLayout<ff_effect>.size == 48)
        let kernel = ForceFeedbackEffect(kind: .rumble, id: 4, magnitude: 0xA000, lengthMilliseconds: 250, delayMilliseconds: 10).kernel
        #expect(kernel.bytes.count == 48)
        // The bytes are the C struct's: read back through the C layout.
        let raw = kernel.bytes.withUnsafeBytes { $0.loadUnaligned(as: ff_effect.self) }
        #expect(raw.type == UInt16(FF_RUMBLE))
        #expect(raw.id == 4)
        #expect(raw.replay.length == 250)
        #expect(raw.replay.delay == 10)
        let decoded = kernel.fields
        #expect(decoded.type == UInt16(FF_RUMBLE))
        #expect(decoded.id == 4)
        #expect(decoded.strongMagnitude == 0xA000)
        #expect(decoded.weakMagnitude == 0xA000)
    }

    @Test("written events are whole struct input_event records with type, code and value in place")
    func writesInputEvents() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-evdev-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let io = SystemEvdevIO()
        let fd = try io.open(path)
        try io.write(fd, type: evFF, code: ffGain, value: 0xFFFF)
        try io.write(fd, type: evFF, code: 3, value: 1)
        io.close(fd)

        let bytes = try #require(FileManager.default.contents(atPath: path))
        let size = dosetap_input_event_size()
        #expect(bytes.count == 2 * size)
        func field<T: FixedWidthInteger>(_ record: Int, _ offsetFromEnd: Int, _: T.Type) -> T {
            bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: record * size + size - offsetFromEnd, as: T.self) }
        }
        // struct input_event ends with __u16 type, __u16 code, __s32 value.
        #expect(field(0, 8, UInt16.self) == evFF)
        #expect(field(0, 6, UInt16.self) == ffGain)
        #expect(field(0, 4, Int32.self) == 0xFFFF)
        #expect(field(1, 8, UInt16.self) == evFF)
        #expect(field(1, 6, UInt16.self) == 3)
        #expect(field(1, 4, Int32.self) == 1)
    }

    @Test("the ioctls reach the kernel: a regular file answers ENOTTY, a missing node ENOENT")
    func ioctlsReachTheKernel() throws {
        let io = SystemEvdevIO()
        #expect(throws: EvdevError("open", errno: ENOENT)) { _ = try io.open("/nonexistent/event99") }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-evdev-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = try io.open(path)
        defer { io.close(fd) }
        #expect(throws: EvdevError("EVIOCGBIT(EV_FF)", errno: ENOTTY)) { _ = try io.forceFeedbackCapabilities(fd) }
        #expect(throws: EvdevError("EVIOCGEFFECTS", errno: ENOTTY)) { _ = try io.effectCount(fd) }
        var effect = ForceFeedbackEffect(kind: .rumble, magnitude: 1, lengthMilliseconds: 1).kernel
        #expect(throws: EvdevError("EVIOCSFF", errno: ENOTTY)) { try io.upload(fd, &effect) }
        #expect(throws: EvdevError("EVIOCRMFF", errno: ENOTTY)) { try io.remove(fd, effectID: 0) }
        #expect(dosetap_evdev_grab(fd, 1) == -1 && errno == ENOTTY)
    }

    @Test("a node that is not an evdev device fails play with a one-line error")
    func notAnEvdevDevice() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-evdev-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fake = ForceFeedbackCandidate(sysname: "event9", devnode: path, capabilities: RecordingEvdevIO.rumbleOnly)
        let error = try await #require(throws: HapticsError.self) {
            try await ForceFeedbackHaptics(finder: StaticVibraFinder(fake)).play(HapticIntensity.light.pattern)
        }
        #expect(error.description == "vibration motor \(path): EVIOCGBIT(EV_FF) failed: Inappropriate ioctl for device")
    }
}

@Suite("Haptics: finding the motor")
struct HapticsDiscoveryTests {
    @Test("sysfs capabilities/ff: 64-bit and 32-bit renderings of the same bits")
    func parseSysfs() throws {
        // gpio-vibrator under ff-memless: FF_RUMBLE (80) and FF_GAIN (96).
        let wide = try #require(ForceFeedbackCapabilities(sysfs: "100010000 0\n", bitsPerWord: 64))
        let narrow = try #require(ForceFeedbackCapabilities(sysfs: "1 10000 0 0", bitsPerWord: 32))
        #expect(wide.codes == [Int(FF_RUMBLE), Int(FF_GAIN)])
        #expect(narrow == wide)
        #expect(wide.description == "rumble, gain")

        // A gamepad: rumble, periodic, square, triangle, sine, gain.
        let pad = try #require(ForceFeedbackCapabilities(sysfs: "107030000 0", bitsPerWord: 64))
        #expect(pad.codes == Set([FF_RUMBLE, FF_PERIODIC, FF_SQUARE, FF_TRIANGLE, FF_SINE, FF_GAIN].map(Int.init)))
        #expect(pad.preferredEffect == .rumble)

        #expect(ForceFeedbackCapabilities(sysfs: "0", bitsPerWord: 64)?.codes == [])
        #expect(ForceFeedbackCapabilities(sysfs: "", bitsPerWord: 64) == nil)
        #expect(ForceFeedbackCapabilities(sysfs: "zz 0", bitsPerWord: 64) == nil)
        #expect(ForceFeedbackCapabilities(sysfs: "100000000 0", bitsPerWord: 32) == nil, "a 33-bit word on a 32-bit kernel")
    }

    @Test("EVIOCGBIT words decode to the same codes as sysfs")
    func parseWords() {
        let words: [UInt] = [0, 0x1_0001_0000]
        #expect(ForceFeedbackCapabilities(words: words, bitsPerWord: 64).codes == [Int(FF_RUMBLE), Int(FF_GAIN)])
        #expect(ForceFeedbackCapabilities(words: [0, 0, 0x10000, 1], bitsPerWord: 32).codes == [Int(FF_RUMBLE), Int(FF_GAIN)])
    }

    static let gamepad = ForceFeedbackCandidate(sysname: "event2", devnode: "/dev/input/event2", name: "Xbox Wireless Controller",
                                                capabilities: ForceFeedbackCapabilities(sysfs: "107030000 0", bitsPerWord: 64)!,
                                                drivers: ["xpad", "usb"])
    static let vibra = ForceFeedbackCandidate(sysname: "event7", devnode: "/dev/input/event7", name: "gpio-vibrator",
                                              capabilities: ForceFeedbackCapabilities(sysfs: "100010000 0", bitsPerWord: 64)!,
                                              drivers: ["gpio-vibrator"])
    static let keyboard = ForceFeedbackCandidate(sysname: "event0", devnode: "/dev/input/event0", name: "AT keyboard",
                                                 capabilities: ForceFeedbackCapabilities(codes: []))
    static let gainOnly = ForceFeedbackCandidate(sysname: "event1", devnode: "/dev/input/event1",
                                                 capabilities: ForceFeedbackCapabilities(codes: [Int(FF_GAIN)]))

    @Test("ranking: our udev tag, then a known vibra driver, then rumble over periodic; non-motors never")
    func ranking() {
        var tagged = Self.vibra
        tagged.tagged = true
        #expect(VibraSelection.best([Self.gamepad, Self.vibra, Self.keyboard]) == Self.vibra, "known driver beats a gamepad")
        #expect(VibraSelection.best([Self.gamepad, Self.keyboard, Self.gainOnly]) == Self.gamepad, "a gamepad's rumble is better than nothing")
        #expect(VibraSelection.best([Self.keyboard, Self.gainOnly]) == nil)
        #expect(VibraSelection.best([]) == nil)

        var taggedPad = Self.gamepad
        taggedPad.tagged = true
        #expect(VibraSelection.best([Self.vibra, taggedPad]) == taggedPad, "the udev rule's tag wins")

        var periodicOnly = Self.gamepad
        periodicOnly.sysname = "event1"
        periodicOnly.devnode = "/dev/input/event1"
        periodicOnly.capabilities = ForceFeedbackCapabilities(codes: [Int(FF_PERIODIC), Int(FF_SINE)])
        #expect(VibraSelection.ranked([periodicOnly, Self.gamepad]) == [Self.gamepad, periodicOnly])
    }

    @Test("equal rank: the lowest event number, compared as a number")
    func tieBreak() {
        var a = Self.gamepad, b = Self.gamepad
        a.sysname = "event10"; a.devnode = "/dev/input/event10"
        b.sysname = "event9"; b.devnode = "/dev/input/event9"
        #expect(VibraSelection.best([a, b]) == b)
    }

    @Test("the candidate's description names the node, driver and capabilities")
    func candidateDescription() {
        var tagged = Self.vibra
        tagged.tagged = true
        #expect(tagged.description == "/dev/input/event7, \"gpio-vibrator\", driver gpio-vibrator, ff: rumble, gain, tagged DOSETAP_VIBRA")
    }
}

extension UdevFixtures {
    @Suite("Haptics: finding the motor through libudev under umockdev")
    struct VibraFixtureTests {
        @Test("a gpio-vibrator tagged by our rule is found beside a keyboard without force feedback")
        func finds() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("input/gpio-vibrator.umockdev"), encoding: .utf8))
            let finder = try UdevVibraFinder(watchHotplug: false)
            let found = finder.candidates()
            #expect(found.map(\.sysname) == ["event5"])
            let motor = try #require(found.first)
            #expect(motor.devnode == "/dev/input/event5")
            #expect(motor.tagged)
            #expect(motor.capabilities.hasRumble)
            #expect(motor.capabilities.hasGain)
            #expect(motor.name == "gpio-vibrator")
            #expect(ForceFeedbackHaptics(finder: finder).isSupported)
            withExtendedLifetime(testbed) {}
        }

        @Test("no force-feedback device: not supported")
        func none() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("power_supply/ac-online.umockdev"), encoding: .utf8))
            let finder = try UdevVibraFinder(watchHotplug: false)
            #expect(finder.candidates().isEmpty)
            #expect(!ForceFeedbackHaptics(finder: finder).isSupported)
            withExtendedLifetime(testbed) {}
        }
    }
}
