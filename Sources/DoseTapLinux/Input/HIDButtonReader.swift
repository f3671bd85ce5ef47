internal import CLinuxInput
import Dispatch
import DoseTapCore
import Foundation
import Glibc
import Logging

/// Reads one evdev node of a HID remote: grabs it (`EVIOCGRAB`, so a shutter's KEY_VOLUMEUP or
/// KEY_ENTER does not also reach the desktop), reads `struct input_event` records when a
/// `DispatchSource` on `queue` says they are there, and turns them into `.down`/`.up` with the kernel's
/// timestamps (`HIDKeyDecoder`: EV_KEY only, autorepeat ignored).
///
/// The node is not given to libdispatch directly: it sits in a private epoll set (`HIDEventPoller`)
/// and the `DispatchSource` watches that set's descriptor. A node that hangs up (an unplugged remote
/// reports EPOLLHUP) is then taken out of the set and closed on `queue`, in order; read sources on
/// hung-up descriptors, cancelled while other sources come and go, crashed libdispatch on Linux
/// (`_dispatch_event_loop_drain`) in about one run in eight of this module's tests.
///
/// The node ends by itself on ENODEV (the remote went away), on end of file and on any other read
/// error (one log line), or from outside with `stop()`. Either way exactly one `.ended` output is the
/// last one, then the grab is released and the descriptor closed.
///
/// Every output is delivered on `queue`; all mutable state lives there.
public final class HIDButtonReader: @unchecked Sendable {
    public enum Output: Sendable, Equatable {
        case signal(KeySignal)
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
    private let poller: HIDEventPoller
    private let logger: Logger
    private let deliver: @Sendable (Output) -> Void
    private let recordSize = dosetap_input_event_size()
    private let buffer: UnsafeMutableRawBufferPointer
    // Touched only on `queue`.
    private var registered = false
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
        let poller: HIDEventPoller
        do {
            poller = try HIDEventPoller(queue: queue)
        } catch {
            throw HIDButtonError("HID remote \(devnode): \(error)", underlying: error)
        }
        return try open(devnode: devnode, expectedAddress: expectedAddress, io: io, poller: poller, logger: logger,
                        deliver: deliver)
    }

    /// `open` with a shared poller (whose queue the outputs arrive on).
    static func open(devnode: String, expectedAddress: String?, io: any HIDButtonIO, poller: HIDEventPoller,
                     logger: Logger, deliver: @escaping @Sendable (Output) -> Void) throws(HIDButtonError) -> HIDButtonReader {
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
        return HIDButtonReader(fd: fd, devnode: devnode, io: io, poller: poller, logger: logger, deliver: deliver)
    }

    /// Adopts an open descriptor (an evdev node; in tests also a pipe or a pseudo-terminal): makes it
    /// non-blocking, tries `EVIOCGRAB` (a failure is logged and kept in `grabError`, never fatal),
    /// notes the keys already down (`EVIOCGKEY`; their release is not a press), and starts reading.
    /// The reader owns `fd` from here on and closes it when it ends. Fails only when the kernel refuses
    /// an epoll descriptor (then `fd` is closed).
    public convenience init(fd: Int32, devnode: String, io: any HIDButtonIO = SystemHIDButtonIO(), queue: DispatchQueue,
                            logger: Logger, deliver: @escaping @Sendable (Output) -> Void) throws(EvdevError) {
        let poller: HIDEventPoller
        do {
            poller = try HIDEventPoller(queue: queue)
        } catch {
            io.close(fd)
            throw error
        }
        self.init(fd: fd, devnode: devnode, io: io, poller: poller, logger: logger, deliver: deliver)
    }

    init(fd: Int32, devnode: String, io: any HIDButtonIO, poller: HIDEventPoller, logger: Logger,
         deliver: @escaping @Sendable (Output) -> Void) {
        self.fd = fd
        self.devnode = devnode
        self.io = io
        self.poller = poller
        queue = poller.queue
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

        // Registered on the queue (this initialiser may run elsewhere); a stop() queued before that
        // closes the node without it ever being registered.
        queue.async { [self] in
            guard !finished else { return }
            do throws(EvdevError) {
                try poller.add(fd) { [self] events in readAvailable(events) }
                registered = true
            } catch {
                end(.readError(error))
            }
        }
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

    /// Out of the epoll set, grab released, closed; then the last output.
    private func finish(_ reason: HIDDisconnectReason) {
        guard !finished else { return }
        finished = true
        if registered {
            poller.remove(fd)
            registered = false
        }
        if grabError == nil { try? io.grab(fd, false) }
        io.close(fd)
        deliver(.ended(reason, interruptedPress: decoder.isDown))
    }

    /// The button is down right now (on `queue`).
    var isDown: Bool { decoder.isDown }

    /// The poller says the node is ready (`events`: EPOLLIN, EPOLLHUP, EPOLLERR bits).
    private func readAvailable(_ events: UInt32) {
        drain()
        // A hang-up whose read did not end the node (no ENODEV, no end of file): it still is gone, and
        // level-triggered epoll would report it forever.
        if !finished, events & dosetap_epoll_hangup_bits() != 0 { end(.deviceGone) }
    }

    private func drain() {
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
                              logger: Logger = Logger(label: "dosetap.hid")) throws(EvdevError) -> (HIDButtonReader, AsyncStream<Output>) {
        let (stream, continuation) = AsyncStream<Output>.makeStream()
        let queue = DispatchQueue(label: "dosetap.hid.\(devnode)")
        let reader = try HIDButtonReader(fd: fd, devnode: devnode, io: io, queue: queue, logger: logger) { output in
            continuation.yield(output)
            if case .ended = output { continuation.finish() }
        }
        continuation.onTermination = { _ in reader.stop() }
        return (reader, stream)
    }
}

/// A private epoll set watched by one `DispatchSource` on `queue`: calls each registered descriptor's
/// handler (on `queue`) while it is ready. Registration and removal happen on `queue` only; the set's
/// own descriptor is closed when the poller goes away.
final class HIDEventPoller: @unchecked Sendable {
    let queue: DispatchQueue
    private let epfd: Int32
    private let source: DispatchSourceRead
    private let table: HIDPollerTable

    init(queue: DispatchQueue) throws(EvdevError) {
        let epfd = dosetap_epoll_create()
        guard epfd >= 0 else { throw EvdevError("epoll_create1", errno: Glibc.errno) }
        self.queue = queue
        self.epfd = epfd
        let table = HIDPollerTable()
        source = DispatchSource.makeReadSource(fileDescriptor: epfd, queue: queue)
        source.setEventHandler { [epfd, table] in
            var fds = [Int32](repeating: -1, count: 16)
            var events = [UInt32](repeating: 0, count: 16)
            // Each round serves every ready node once; level-triggered, so what is left comes back.
            for _ in 0..<64 {
                let n = dosetap_epoll_ready(epfd, &fds, &events, Int32(fds.count))
                guard n > 0 else { return }
                for i in 0..<Int(n) { table.handler(fds[i])?(events[i]) }
                if n < fds.count { return }
            }
        }
        source.setCancelHandler { [epfd] in _ = Glibc.close(epfd) }
        self.table = table
        source.resume()
    }

    deinit {
        source.cancel()
    }

    /// Watches `fd` (on `queue`).
    func add(_ fd: Int32, handler: @escaping (UInt32) -> Void) throws(EvdevError) {
        guard dosetap_epoll_add(epfd, fd) == 0 else { throw EvdevError("epoll_ctl(ADD)", errno: Glibc.errno) }
        table.set(fd, handler)
    }

    /// Stops watching `fd` (on `queue`), before it is closed.
    func remove(_ fd: Int32) {
        _ = dosetap_epoll_remove(epfd, fd)
        table.set(fd, nil)
    }
}

/// The poller's handlers by descriptor; touched only on the poller's queue.
private final class HIDPollerTable: @unchecked Sendable {
    private var handlers: [Int32: (UInt32) -> Void] = [:]
    func handler(_ fd: Int32) -> ((UInt32) -> Void)? { handlers[fd] }
    func set(_ fd: Int32, _ handler: ((UInt32) -> Void)?) { handlers[fd] = handler }
}
