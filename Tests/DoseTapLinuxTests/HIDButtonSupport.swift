import CLinuxInput
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Glibc
import Synchronization
import Testing

/// The recorded evdev streams of `hw-fixtures/hid/*.events` (evemu format, as `umockdev-record
/// --evemu-events` writes them).
struct HIDRecording: Sendable, CustomStringConvertible {
    let name: String
    let path: String
    /// The node the recording belongs to ("# device /dev/input/event5").
    let device: String
    let records: [InputEventRecord]

    var description: String { name }

    static let directory = Fixtures.root.appendingPathComponent("hid")

    static func load(_ name: String) throws -> HIDRecording {
        let url = directory.appendingPathComponent(name + ".events")
        let text = try String(contentsOf: url, encoding: .utf8)
        var device: String?
        var records: [InputEventRecord] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("# device ") {
                device = String(line.dropFirst("# device ".count))
                continue
            }
            guard line.hasPrefix("E: ") else { continue }
            let fields = line.dropFirst(3).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 4 else { throw FixtureError("\(name): bad line \(line)") }
            let time = fields[0].split(separator: ".")
            guard time.count == 2, time[1].count == 6, let seconds = Int64(time[0]), let micros = Int64(time[1]),
                  let type = UInt16(fields[1], radix: 16), let code = UInt16(fields[2], radix: 16),
                  let value = Int32(fields[3]) else {
                throw FixtureError("\(name): bad line \(line)")
            }
            records.append(InputEventRecord(seconds: seconds, microseconds: micros, type: type, code: code, value: value))
        }
        guard let device else { throw FixtureError("\(name): no '# device' line") }
        return HIDRecording(name: name, path: url.path, device: device, records: records)
    }

    /// The records as `read(2)` returns them from an evdev node.
    var bytes: [UInt8] {
        let size = dosetap_input_event_size()
        var bytes = [UInt8](repeating: 0, count: size * records.count)
        bytes.withUnsafeMutableBytes { buffer in
            for (i, r) in records.enumerated() {
                dosetap_input_event_pack(buffer.baseAddress! + i * size, r.seconds, r.microseconds, r.type, r.code, r.value)
            }
        }
        return bytes
    }
}

/// Microseconds since 1970: timestamps compared exactly, without floating-point doubt.
func micros(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }

/// A signal as (kind, microseconds), for exact comparisons.
enum Edge: Equatable, CustomStringConvertible {
    case down(Int64), up(Int64), press(Int64)

    init(_ signal: KeySignal) {
        switch signal {
        case .down(let t): self = .down(micros(t))
        case .up(let t): self = .up(micros(t))
        case .press(let t): self = .press(micros(t))
        }
    }

    var description: String {
        switch self {
        case .down(let t): "down@\(t)"
        case .up(let t): "up@\(t)"
        case .press(let t): "press@\(t)"
        }
    }
}

/// A pipe standing in for an evdev node: the read end is non-blocking, the write end is ours.
struct EventPipe {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw FixtureError("pipe: \(String(cString: strerror(errno)))") }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; Issue.record("write to pipe: \(errno)"); return }
            offset += n
        }
    }

    func closeWriteEnd() { _ = Glibc.close(writeEnd) }
}

/// Real system calls on a pipe, recorded; optionally a refused EVIOCGRAB, known held keys, and ENODEV
/// (or another errno) instead of end of file.
final class RecordingHIDButtonIO: HIDButtonIO {
    enum Call: Equatable, CustomStringConvertible {
        case open(String), grab(Int32, Bool), uniq(Int32), heldKeys(Int32), close(Int32)
        var description: String {
            switch self {
            case .open(let p): "open(\(p))"
            case .grab(_, let on): "EVIOCGRAB(\(on ? 1 : 0))"
            case .uniq: "EVIOCGUNIQ"
            case .heldKeys: "EVIOCGKEY"
            case .close: "close"
            }
        }
    }

    let system = SystemHIDButtonIO()
    /// nil: EVIOCGRAB goes to the real fd (a pipe refuses it with ENOTTY). A value: pretend (0 = success).
    let grabErrno: Int32?
    let held: Set<UInt16>?
    let uniqValue: String?
    /// At end of file, fail the read with this errno instead.
    let endErrno: Int32?
    /// Once a descriptor has given this many bytes, its next read fails with ENODEV (the remote went
    /// away), whether or not more would come (a pseudo-terminal never reaches end of file).
    let goneAfterBytes: Int?
    private let log = Mutex<[Call]>([])
    private let consumed = Mutex<[Int32: Int]>([:])

    init(grabErrno: Int32? = nil, held: Set<UInt16>? = nil, uniq: String? = nil, endErrno: Int32? = nil,
         goneAfterBytes: Int? = nil) {
        self.grabErrno = grabErrno
        self.held = held
        self.uniqValue = uniq
        self.endErrno = endErrno
        self.goneAfterBytes = goneAfterBytes
    }

    var calls: [Call] { log.withLock { $0 } }
    private func record(_ call: Call) { log.withLock { $0.append(call) } }

    func open(_ path: String) throws(EvdevError) -> Int32 {
        record(.open(path))
        return try system.open(path)
    }

    func grab(_ fd: Int32, _ exclusive: Bool) throws(EvdevError) {
        record(.grab(fd, exclusive))
        guard let grabErrno else { return try system.grab(fd, exclusive) }
        if grabErrno != 0 { throw EvdevError(exclusive ? "EVIOCGRAB" : "EVIOCGRAB(0)", errno: grabErrno) }
    }

    func uniq(_ fd: Int32) -> String? {
        record(.uniq(fd))
        return uniqValue
    }

    func heldKeys(_ fd: Int32) -> Set<UInt16>? {
        record(.heldKeys(fd))
        return held
    }

    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(EvdevError) -> Int {
        if let goneAfterBytes, consumed.withLock({ $0[fd, default: 0] }) >= goneAfterBytes {
            throw EvdevError("read", errno: ENODEV)
        }
        let n = try system.read(fd, into: buffer)
        if n == 0, let endErrno { throw EvdevError("read", errno: endErrno) }
        consumed.withLock { $0[fd, default: 0] += n }
        return n
    }

    func close(_ fd: Int32) {
        record(.close(fd))
        system.close(fd)
    }
}

/// Everything a reader yields until it ends (or `timeout` passes: then whatever came, and an issue).
func collect(_ stream: AsyncStream<HIDButtonReader.Output>, timeout: Duration = .seconds(5),
             sourceLocation: SourceLocation = #_sourceLocation) async -> [HIDButtonReader.Output] {
    let collected = HIDLocked<[HIDButtonReader.Output]>([])
    let finished = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await output in stream { collected.withLock { $0.append(output) } }
            return true
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
    if !finished { Issue.record("the reader did not end within \(timeout)", sourceLocation: sourceLocation) }
    return collected.value
}

/// A value behind a lock, shareable between tasks.
final class HIDLocked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> R { mutex.withLock(body) }
    var value: Value { mutex.withLock { $0 } }
}

/// Drives a `GestureRecognizer` the way the agent does: each signal in time order, and `expire` at
/// every `deadline` that passes before the next signal (and after the last one).
func recognize(_ signals: [KeySignal], noDouble: Bool = false) -> [RecognizedGesture] {
    var recognizer = GestureRecognizer(noDouble: noDouble)
    var out: [RecognizedGesture] = []
    func runDeadlines(before limit: Date?) {
        var rounds = 0
        while let deadline = recognizer.deadline, limit.map({ deadline < $0 }) ?? true, rounds < 100 {
            out += recognizer.expire(at: deadline.addingTimeInterval(0.000_001))
            rounds += 1
        }
    }
    for signal in signals {
        let t: Date
        switch signal {
        case .down(let at), .up(let at), .press(let at): t = at
        }
        runDeadlines(before: t)
        out += recognizer.feed(signal)
    }
    runDeadlines(before: nil)
    return out
}
