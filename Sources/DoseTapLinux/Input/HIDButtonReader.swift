import CLinuxInput
import Dispatch
import DoseTapCore
import Foundation
import Glibc
import Logging

/// Reads one evdev node of a HID remote: grabs it (`EVIOCGRAB`, so a shutter's KEY_VOLUMEUP or
/// KEY_ENTER does not also reach the desktop), reads `struct input_event` records with a
/// `DispatchSource` on `queue`, and turns them into `.down`/`.up` with the kernel's timestamps
/// (`HIDKeyDecoder`: EV_KEY only, autorepeat ignored).
///
/// The node ends by itself on ENODEV (the remote went away), on end of file and on any other read
/// error (one log line), or from outside with `stop()`. Either way exactly one `.ended` output is the
/// last one, then the grab is released and the descriptor closed.
///
/// Every output is delivered on `queue`; all mutable state lives there.
public final class HIDButtonReader: @unchecked Sendable {
    public enum Output: Sendable, Equatable {
        case signal(ButtonSignal)
        /// The last output. `interruptedPress`: the button was down, and no `.up` will follow.
        case ended(HIDDisconnectReason, interruptedPress: Bool)
    }

    public let devnode: String
    public let fd: Int32
    /// Why `EVIOCGRAB` failed, or nil when the node is ours alone.
    public let grabError: EvdevError?
    public var grabbed: Bool { grabError == nil }

    private let io: any HIDButtonIO
    private let queue: DispatchQueue
    private let logger: Logger
    private let deliver: @Sendable (Output) -> Void
    private let recordSize = dosetap_input_event_size()
    private let buffer: UnsafeMutableRawBufferPointer
    // Touched only on `queue`.
    private var source: DispatchSourceRead?
    private var decoder: HIDKeyDecoder
    private var carried = 0
    private var finished = false

    /// Records read per read(2); evdev hands out whole records only.
    static let recordsPerRead = 64

    /// Opens `devnode` (`O_RDONLY | O_NONBLOCK | O_CLOEXEC`) and starts reading it. When the node
    /// reports a unique id (`EVIOCGUNIQ`) that is not `expectedAddress`, the node number was reused by
    /// another device between discovery and open: it is closed again and nothing is read.
    public static func open(devnode: String, expectedAddress: String? = nil, io: any HIDButtonIO = SystemHIDButtonIO(),
                            queue: DispatchQueue, logger: Logger,
                            deliver: @escaping @Sendable (Output) -> Void) throws(HIDButtonError) -> HIDButtonReader {
        let fd: Int32
        do {
            fd = try io.open(devnode)
        } catch {
            var hint = ""
            if error.errno == EACCES || error.errno == EPERM {
                hint = " (install udev-rules/71-dosetap-hid-buttons.rules, or add the user to the input group)"
            } else if error.errno == ENOENT || error.errno == ENODEV || error.errno == ENXIO {
                hint = " (the remote disconnected)"
            }
            throw HIDButtonError("HID remote \(devnode): \(error)\(hint)", underlying: error)
        }
        if let expectedAddress, let uniq = io.uniq(fd), let actual = HIDRemote.normalize(address: uniq),
           actual != expectedAddress {
            io.close(fd)
            throw HIDButtonError("HID remote \(devnode): now belongs to \(actual), not \(expectedAddress)")
        }
        return HIDButtonReader(fd: fd, devnode: devnode, io: io, queue: queue, logger: logger, deliver: deliver)
    }

    /// Adopts an open descriptor (an evdev node; in tests also a pipe or a pseudo-terminal): makes it
    /// non-blocking, tries `EVIOCGRAB` (a failure is logged and kept in `grabError`, never fatal),
    /// notes the keys already down (`EVIOCGKEY`; their release is not a press), and starts reading.
    /// The reader owns `fd` from here on and closes it when it ends.
    public init(fd: Int32, devnode: String, io: any HIDButtonIO = SystemHIDButtonIO(), queue: DispatchQueue,
                logger: Logger, deliver: @escaping @Sendable (Output) -> Void) {
        self.fd = fd
        self.devnode = devnode
        self.io = io
        self.queue = queue
        self.logger = logger
        self.deliver = deliver
        buffer = .allocate(byteCount: recordSize * Self.recordsPerRead, alignment: 16)

        let flags = fcntl(fd, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }

        var grabError: EvdevError?
        do {
            try io.grab(fd, true)
        } catch {
            grabError = error
            if error.errno == EBUSY {
                logger.warning("HID remote \(devnode): another program has grabbed it (EVIOCGRAB: busy); DoseTap may not see its keys")
            } else {
                logger.warning("HID remote \(devnode): \(error); its keys also reach the desktop")
            }
        }
        self.grabError = grabError
        decoder = HIDKeyDecoder(initiallyHeld: io.heldKeys(fd) ?? [])

        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in readAvailable() }
        source.setCancelHandler { [io, fd, grabbed = grabError == nil] in
            if grabbed { try? io.grab(fd, false) }
            io.close(fd)
        }
        self.source = source
        source.resume()
    }

    deinit {
        buffer.deallocate()
    }

    /// Ends reading (`.ended(.stopped, …)` is the last output), releases the grab and closes the node.
    /// From any thread; a no-op once the reader has ended.
    public func stop() {
        queue.async { [self] in stopOnQueue() }
    }

    /// `stop()` for callers already on `queue`.
    func stopOnQueue() {
        finish(.stopped)
    }

    private func finish(_ reason: HIDDisconnectReason) {
        guard !finished else { return }
        finished = true
        source?.cancel()
        source = nil
        deliver(.ended(reason, interruptedPress: decoder.isDown))
    }

    /// The button is down right now (on `queue`).
    var isDown: Bool { decoder.isDown }

    private func readAvailable() {
        while !finished {
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer[carried...])
            let count: Int
            do {
                count = try io.read(fd, into: room)
            } catch {
                switch error.errno {
                case EAGAIN, EWOULDBLOCK:
                    return
                case ENODEV:
                    end(.deviceGone)
                default:
                    end(.readError(error))
                }
                return
            }
            if count == 0 {
                end(.endOfStream)
                return
            }
            let total = carried + count
            let whole = total / recordSize * recordSize
            var offset = 0
            while offset < whole {
                let record = decode(buffer.baseAddress! + offset)
                offset += recordSize
                let signals = decoder.feed(record) { [io, fd] in io.heldKeys(fd) }
                for signal in signals { deliver(.signal(signal)) }
            }
            // A pipe or a pseudo-terminal may split a record; evdev never does.
            carried = total - whole
            if carried > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + whole, byteCount: carried) }
        }
    }

    private func decode(_ pointer: UnsafeRawPointer) -> InputEventRecord {
        var type: UInt16 = 0, code: UInt16 = 0, value: Int32 = 0, seconds: Int64 = 0, microseconds: Int64 = 0
        dosetap_input_event_unpack(pointer, &type, &code, &value, &seconds, &microseconds)
        return InputEventRecord(seconds: seconds, microseconds: microseconds, type: type, code: code, value: value)
    }

    /// The node ended by itself: one log line, then `finish`.
    private func end(_ reason: HIDDisconnectReason) {
        guard !finished else { return }
        let dropped = decoder.isDown ? " (a press in progress is dropped)" : ""
        switch reason {
        case .deviceGone, .endOfStream:
            logger.info("HID remote \(devnode): \(reason); stopped reading\(dropped)")
        default:
            logger.warning("HID remote \(devnode): \(reason); stopped reading\(dropped)")
        }
        finish(reason)
    }

    /// A reader whose outputs arrive as a stream (finished after `.ended`), read on a queue of its own.
    /// Ending the stream (the consumer stops iterating) stops the reader.
    public static func stream(fd: Int32, devnode: String, io: any HIDButtonIO = SystemHIDButtonIO(),
                              logger: Logger = Logger(label: "dosetap.hid")) -> (HIDButtonReader, AsyncStream<Output>) {
        let (stream, continuation) = AsyncStream<Output>.makeStream()
        let queue = DispatchQueue(label: "dosetap.hid.\(devnode)")
        let reader = HIDButtonReader(fd: fd, devnode: devnode, io: io, queue: queue, logger: logger) { output in
            continuation.yield(output)
            if case .ended = output { continuation.finish() }
        }
        continuation.onTermination = { _ in reader.stop() }
        return (reader, stream)
    }
}
