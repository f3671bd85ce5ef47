import CLinuxInput
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Glibc
import Logging
import Testing

private let keyVolumeUp = UInt16(KEY_VOLUMEUP)
private let keyEnter = UInt16(KEY_ENTER)
private let evKey = UInt16(EV_KEY)
private let evSyn = UInt16(EV_SYN)
private let evMsc = UInt16(EV_MSC)

private func record(_ us: Int64, _ type: UInt16, _ code: UInt16, _ value: Int32) -> InputEventRecord {
    InputEventRecord(seconds: us / 1_000_000, microseconds: us % 1_000_000, type: type, code: code, value: value)
}

private func date(_ us: Int64) -> Date { InputEventRecord.date(seconds: us / 1_000_000, microseconds: us % 1_000_000) }

/// What each recording must give: the exact signals, and the gestures `GestureRecognizer` makes of them.
struct HIDExpectation: Sendable, CustomStringConvertible {
    let name: String
    let edges: [Edge]
    let gestures: [(ButtonGesture, Int64)]
    var description: String { name }

    static let all: [HIDExpectation] = [
        HIDExpectation(name: "single",
                       edges: [.down(1732166703_512034), .up(1732166703_624011)],
                       gestures: [(.single, 1732166704_124011)]),       // released + 0.5 s without a second press
        HIDExpectation(name: "double",
                       edges: [.down(1732166741_204518), .up(1732166741_300521), .down(1732166741_474529), .up(1732166741_575758)],
                       gestures: [(.double, 1732166741_575758)]),       // at the second release
        HIDExpectation(name: "hold",
                       edges: [.down(1732166788_540207), .up(1732166790_143322)],
                       gestures: [(.hold, 1732166789_540207)]),         // down + 1 s, while still held
        HIDExpectation(name: "bouncy",
                       edges: [.down(1732166822_730466), .up(1732166822_737478), .down(1732166822_749496), .up(1732166822_872584)],
                       gestures: [(.single, 1732166823_372584)]),       // the 50 ms debounce eats the chatter
        HIDExpectation(name: "overlapping-keys",
                       edges: [.down(1732166860_118790), .up(1732166860_242891)],
                       gestures: [(.single, 1732166860_742891)]),       // two keys, one button
    ]
}

@Suite("HIDButton: key events → down/up (HIDKeyDecoder, HIDRemoteMerger)")
struct HIDButtonDecoderTests {
    @Test("value 1 → down, 0 → up, 2 (autorepeat) → nothing; EV_MSC and EV_SYN → nothing")
    func values() {
        var decoder = HIDKeyDecoder()
        #expect(decoder.feed(record(1_000_000, evMsc, 4, 0xC00E9)) == [])
        #expect(decoder.feed(record(1_000_000, evKey, keyVolumeUp, 1)) == [.down(at: date(1_000_000))])
        #expect(decoder.feed(record(1_000_000, evSyn, 0, 0)) == [])
        for i in 0..<30 {
            #expect(decoder.feed(record(1_250_000 + Int64(i) * 33_000, evKey, keyVolumeUp, 2)) == [])
        }
        #expect(decoder.isDown)
        #expect(decoder.feed(record(2_100_000, evKey, keyVolumeUp, 0)) == [.up(at: date(2_100_000))])
        #expect(!decoder.isDown)
    }

    @Test("overlapping keys are one press: down at the first, up at the last")
    func overlapping() {
        var decoder = HIDKeyDecoder()
        #expect(decoder.feed(record(10, evKey, keyEnter, 1)) == [.down(at: date(10))])
        #expect(decoder.feed(record(20, evKey, keyVolumeUp, 1)) == [])
        #expect(decoder.feed(record(30, evKey, keyEnter, 0)) == [])
        #expect(decoder.feed(record(40, evKey, keyVolumeUp, 0)) == [.up(at: date(40))])
    }

    @Test("an up without a down and a second down of a held key change nothing; any key code counts")
    func strays() {
        var decoder = HIDKeyDecoder()
        #expect(decoder.feed(record(10, evKey, keyVolumeUp, 0)) == [])
        #expect(decoder.feed(record(20, evKey, UInt16(BTN_LEFT), 1)) == [.down(at: date(20))])
        #expect(decoder.feed(record(30, evKey, UInt16(BTN_LEFT), 1)) == [])
        #expect(decoder.feed(record(40, evKey, UInt16(BTN_LEFT), 0)) == [.up(at: date(40))])
        #expect(decoder.feed(record(50, evKey, UInt16(BTN_LEFT), 0)) == [])
    }

    @Test("a key already down when the node was opened: its release is no press, the next press is")
    func heldAtOpen() {
        var decoder = HIDKeyDecoder(initiallyHeld: [keyVolumeUp])
        #expect(decoder.feed(record(10, evKey, keyVolumeUp, 2)) == [])
        #expect(decoder.feed(record(20, evKey, keyVolumeUp, 0)) == [])
        #expect(decoder.feed(record(30, evKey, keyVolumeUp, 1)) == [.down(at: date(30))])
        #expect(decoder.feed(record(40, evKey, keyVolumeUp, 0)) == [.up(at: date(40))])
    }

    @Test("SYN_DROPPED: everything up to the next SYN_REPORT is discarded and the held keys are re-read there")
    func dropped() {
        var decoder = HIDKeyDecoder()
        #expect(decoder.feed(record(10, evKey, keyVolumeUp, 1)) == [.down(at: date(10))])
        #expect(decoder.feed(record(20, evSyn, 3, 0)) == [])                  // SYN_DROPPED
        #expect(decoder.feed(record(30, evKey, keyVolumeUp, 0)) == [])        // lost in the overflow
        #expect(decoder.feed(record(40, evSyn, 0, 0), keyState: { [] }) == [.up(at: date(40))])
        // Dropped while up, the key is down at the report: a down there.
        #expect(decoder.feed(record(50, evSyn, 3, 0)) == [])
        #expect(decoder.feed(record(60, evSyn, 0, 0), keyState: { [keyEnter] }) == [.down(at: date(60))])
        // State unknown after a drop: everything counts as released.
        #expect(decoder.feed(record(70, evSyn, 3, 0)) == [])
        #expect(decoder.feed(record(80, evSyn, 0, 0), keyState: { nil }) == [.up(at: date(80))])
        #expect(!decoder.isDown)
    }

    @Test("two nodes of one remote are one button; removing the node that held it reports the interrupted press")
    func merger() {
        var merger = HIDRemoteMerger()
        let a = "FF:FF:3A:07:12:C4", b = "80:00:00:00:EE:E0"
        #expect(merger.feed(address: a, node: "event4", .down(at: date(1))) == .down(at: date(1)))
        #expect(merger.feed(address: a, node: "event5", .down(at: date(2))) == nil)
        #expect(merger.feed(address: b, node: "event3", .down(at: date(3))) == .down(at: date(3)), "another remote is its own button")
        #expect(merger.feed(address: a, node: "event4", .up(at: date(4))) == nil)
        #expect(merger.feed(address: a, node: "event5", .up(at: date(5))) == .up(at: date(5)))
        #expect(merger.feed(address: a, node: "event5", .up(at: date(6))) == nil, "an up nobody pressed")
        let bInterrupted = merger.remove(address: b, node: "event3")
        #expect(bInterrupted, "event3 was holding b down")
        #expect(!merger.isDown(b))
        #expect(merger.feed(address: a, node: "event4", .down(at: date(7))) == .down(at: date(7)))
        let event5Interrupted = merger.remove(address: a, node: "event5")
        #expect(!event5Interrupted, "event5 was not holding anything")
        let event4Interrupted = merger.remove(address: a, node: "event4")
        #expect(event4Interrupted)
    }

    @Test("addresses: sysfs, udev and user spellings normalise to AA:BB:CC:DD:EE:FF; garbage does not")
    func addresses() {
        #expect(HIDRemote.normalize(address: "ff:ff:3a:07:12:c4\n") == "FF:FF:3A:07:12:C4")
        #expect(HIDRemote.normalize(address: "\"ff:ff:3a:07:12:c4\"") == "FF:FF:3A:07:12:C4")
        #expect(HIDRemote.normalize(address: "FF-FF-3A-07-12-C4") == "FF:FF:3A:07:12:C4")
        #expect(HIDRemote.normalize(address: "") == nil)
        #expect(HIDRemote.normalize(address: "00:00:00:00:00:00") == nil)
        #expect(HIDRemote.normalize(address: "usb-0000:00:14.0-2/input0") == nil)
        #expect(HIDRemote.normalize(address: "ff:ff:3a:07:12") == nil)
        #expect(HIDRemote.normalize(address: "ff:ff:3a:07:12:c4:00") == nil)
        #expect(HIDRemote.normalize(address: "gg:ff:3a:07:12:c4") == nil)
    }
}

@Suite("HIDButton: the reader against the recorded streams (file-descriptor level)")
struct HIDButtonReaderTests {
    static let names = HIDExpectation.all.map(\.name)

    static func expectation(_ name: String) -> HIDExpectation { HIDExpectation.all.first { $0.name == name }! }

    /// Feeds a recording through a pipe into a reader and collects everything until it ends.
    static func run(_ recording: HIDRecording, io: RecordingHIDButtonIO,
                    chunk: Int? = nil) async throws -> (HIDButtonReader, [HIDButtonReader.Output]) {
        let pipe = try EventPipe()
        let (reader, stream) = try HIDButtonReader.stream(fd: pipe.readEnd, devnode: recording.device, io: io)
        let bytes = recording.bytes
        if let chunk {
            // Odd-sized writes with pauses: the reader sees records split across reads.
            var offset = 0
            while offset < bytes.count {
                pipe.write(Array(bytes[offset..<min(offset + chunk, bytes.count)]))
                offset += chunk
                try await Task.sleep(for: .milliseconds(1))
            }
        } else {
            pipe.write(bytes)
        }
        pipe.closeWriteEnd()
        return (reader, await collect(stream))
    }

    static func edges(_ outputs: [HIDButtonReader.Output]) -> [Edge] {
        outputs.compactMap { if case .signal(let s) = $0 { Edge(s) } else { nil } }
    }

    static func signals(_ outputs: [HIDButtonReader.Output]) -> [KeySignal] {
        outputs.compactMap { if case .signal(let s) = $0 { s } else { nil } }
    }

    @Test("each recording gives exactly its down/up signals with the kernel timestamps, then ends at end of file",
          arguments: names)
    func exactSignals(_ name: String) async throws {
        let recording = try HIDRecording.load(name)
        let expected = Self.expectation(name)
        let io = RecordingHIDButtonIO(grabErrno: 0)
        let (reader, outputs) = try await Self.run(recording, io: io)
        #expect(Self.edges(outputs) == expected.edges)
        #expect(outputs.last == .ended(.endOfStream, interruptedPress: false))
        #expect(outputs.filter { if case .ended = $0 { true } else { false } }.count == 1)
        #expect(reader.grabbed)
    }

    @Test("the held key's autorepeat (value 2, every 33 ms after 250 ms) creates no presses")
    func repeatsIgnored() async throws {
        let recording = try HIDRecording.load("hold")
        let repeats = recording.records.filter { $0.type == evKey && $0.value == 2 }
        #expect(repeats.count == 42)
        #expect(repeats.first.map { ($0.seconds * 1_000_000 + $0.microseconds) - 1732166788_540207 } == 250_000)
        let (_, outputs) = try await Self.run(recording, io: RecordingHIDButtonIO(grabErrno: 0))
        #expect(Self.edges(outputs) == [.down(1732166788_540207), .up(1732166790_143322)])
    }

    @Test("records split across reads decode the same", arguments: ["double", "hold"])
    func splitReads(_ name: String) async throws {
        let recording = try HIDRecording.load(name)
        let (_, outputs) = try await Self.run(recording, io: RecordingHIDButtonIO(grabErrno: 0), chunk: 7)
        #expect(Self.edges(outputs) == Self.expectation(name).edges)
    }

    @Test("through GestureRecognizer: single, double, hold, and the bouncy click as a single", arguments: names)
    func gestures(_ name: String) async throws {
        let (_, outputs) = try await Self.run(try HIDRecording.load(name), io: RecordingHIDButtonIO(grabErrno: 0))
        let gestures = recognize(Self.signals(outputs))
        let expected = Self.expectation(name).gestures
        #expect(gestures.map(\.gesture) == expected.map(\.0))
        #expect(gestures.map { micros($0.at) } == expected.map(\.1))
    }

    @Test("no-double mode: the double recording is two singles, each at its release")
    func noDouble() async throws {
        let (_, outputs) = try await Self.run(try HIDRecording.load("double"), io: RecordingHIDButtonIO(grabErrno: 0))
        let gestures = recognize(Self.signals(outputs), noDouble: true)
        #expect(gestures.map(\.gesture) == [.single, .single])
        #expect(gestures.map { micros($0.at) } == [1732166741_300521, 1732166741_575758])
    }

    @Test("EVIOCGRAB is the first thing tried; at the end the grab is released and the node closed, in that order")
    func grabLifecycle() async throws {
        let io = RecordingHIDButtonIO(grabErrno: 0)
        let (reader, outputs) = try await Self.run(try HIDRecording.load("single"), io: io)
        #expect(outputs.count == 3)
        let fd = reader.fd
        // The cancel handler runs on the reader's queue right after `.ended`: give it a moment.
        try await waitUntil { io.calls.last == .close(fd) }
        #expect(io.calls == [.grab(fd, true), .heldKeys(fd), .grab(fd, false), .close(fd)])
    }

    @Test("EVIOCGRAB on something that is not an evdev node (a pipe) fails: reported, not fatal, the keys are still read")
    func grabFailsOnPipe() async throws {
        let io = RecordingHIDButtonIO()   // real ioctl on the pipe
        let (reader, outputs) = try await Self.run(try HIDRecording.load("single"), io: io)
        #expect(reader.grabError == EvdevError("EVIOCGRAB", errno: ENOTTY))
        #expect(!reader.grabbed)
        #expect(reader.grabError?.description == "EVIOCGRAB failed: Inappropriate ioctl for device")
        #expect(Self.edges(outputs) == Self.expectation("single").edges)
        let fd = reader.fd
        try await waitUntil { io.calls.last == .close(fd) }
        #expect(!io.calls.contains(.grab(fd, false)), "nothing to release")
    }

    @Test("a grab held by another program (EBUSY) is reported the same way")
    func grabBusy() async throws {
        let (reader, outputs) = try await Self.run(try HIDRecording.load("single"), io: RecordingHIDButtonIO(grabErrno: EBUSY))
        #expect(reader.grabError?.errno == EBUSY)
        #expect(Self.edges(outputs).count == 2)
    }

    @Test("ENODEV (the remote went away) ends the stream cleanly after the last signal; released and closed")
    func enodev() async throws {
        let io = RecordingHIDButtonIO(grabErrno: 0, endErrno: ENODEV)
        let (reader, outputs) = try await Self.run(try HIDRecording.load("double"), io: io)
        #expect(Self.edges(outputs) == Self.expectation("double").edges)
        #expect(outputs.last == .ended(.deviceGone, interruptedPress: false))
        let fd = reader.fd
        try await waitUntil { io.calls.last == .close(fd) }
        #expect(io.calls.suffix(2) == [.grab(fd, false), .close(fd)])
    }

    @Test("ENODEV in the middle of a press: the press is flagged as interrupted, no up is invented")
    func enodevMidPress() async throws {
        let hold = try HIDRecording.load("hold")
        let cut = HIDRecording(name: "hold-cut", path: hold.path, device: hold.device,
                               records: Array(hold.records.prefix(20)))
        let (_, outputs) = try await Self.run(cut, io: RecordingHIDButtonIO(grabErrno: 0, endErrno: ENODEV))
        #expect(Self.edges(outputs) == [.down(1732166788_540207)])
        #expect(outputs.last == .ended(.deviceGone, interruptedPress: true))
    }

    @Test("another read error ends the stream with that error")
    func otherError() async throws {
        let (_, outputs) = try await Self.run(try HIDRecording.load("single"), io: RecordingHIDButtonIO(grabErrno: 0, endErrno: EIO))
        #expect(outputs.last == .ended(.readError(EvdevError("read", errno: EIO)), interruptedPress: false))
    }

    @Test("a key held when the node is opened (EVIOCGKEY): its release is not a press")
    func heldAtOpen() async throws {
        let recording = try HIDRecording.load("single")
        // Only the release half of the click.
        let release = HIDRecording(name: "release", path: recording.path, device: recording.device,
                                   records: Array(recording.records.suffix(3)))
        let (_, outputs) = try await Self.run(release, io: RecordingHIDButtonIO(grabErrno: 0, held: [keyVolumeUp]))
        #expect(Self.edges(outputs) == [])
    }

    @Test("stop(): `.ended(.stopped)` is the last output (the press it cut is flagged), the grab released, the node closed")
    func stop() async throws {
        let pipe = try EventPipe()
        let io = RecordingHIDButtonIO(grabErrno: 0)
        let (reader, stream) = try HIDButtonReader.stream(fd: pipe.readEnd, devnode: "/dev/input/event5", io: io)
        let hold = try HIDRecording.load("hold")
        let size = Int(dosetap_input_event_size())
        pipe.write(Array(hold.bytes.prefix(3 * size)))   // the down
        let collector = Task { await collect(stream) }
        try await Task.sleep(for: .milliseconds(50))
        reader.stop()
        try await waitUntil { io.calls.last == .close(pipe.readEnd) }
        pipe.closeWriteEnd()   // (writing more now would raise SIGPIPE: the read end is closed)
        let outputs = await collector.value
        #expect(outputs == [.signal(.down(at: date(1732166788_540207))), .ended(.stopped, interruptedPress: true)])
        #expect(io.calls == [.grab(pipe.readEnd, true), .heldKeys(pipe.readEnd), .grab(pipe.readEnd, false), .close(pipe.readEnd)])
        reader.stop()   // again: nothing happens
    }

    @Test("open(): a node that now belongs to another address is closed again, not read")
    func wrongDevice() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-hid-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let io = RecordingHIDButtonIO(grabErrno: 0, uniq: "aa:bb:cc:dd:ee:ff")
        let error = #expect(throws: HIDButtonError.self) {
            _ = try HIDButtonReader.open(devnode: path, expectedAddress: "FF:FF:3A:07:12:C4", io: io,
                                         queue: DispatchQueue(label: "test"), logger: Logger(label: "test")) { _ in }
        }
        #expect(error?.description == "HID remote \(path): now belongs to AA:BB:CC:DD:EE:FF, not FF:FF:3A:07:12:C4")
        #expect(io.calls.map(\.description) == ["open(\(path))", "EVIOCGUNIQ", "close"])
    }

    @Test("open(): a missing node is a one-line error that says the remote disconnected")
    func missingNode() {
        let error = #expect(throws: HIDButtonError.self) {
            _ = try HIDButtonReader.open(devnode: "/nonexistent/event42", queue: DispatchQueue(label: "test"),
                                         logger: Logger(label: "test")) { _ in }
        }
        #expect(error?.description == "HID remote /nonexistent/event42: open failed: No such file or directory (the remote disconnected)")
        #expect(error?.underlying?.errno == ENOENT)
    }
}

/// Polls `condition` every 5 ms for up to 2 s.
func waitUntil(_ what: String = "condition", sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(2)
    while !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("\(what) not met within 2 s", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
