import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells when files in a directory change (inotify), so the agent notices what the command line wrote
/// to the database without polling. Events are coalesced: one signal per burst. One inotify descriptor
/// serves every subscriber: each `changes()` is a stream of its own (the scheduler and the button service
/// both follow the database, through one watch). The descriptor is read on the agent's event loop
/// (`EpollLoop`), where its handler runs. Each burst is counted (`generation()`); its subscribers are signalled
/// unless `signalling` declines it (the agent's own battery sample: `DatabaseChangeGate`).
public final class DirectoryWatcher: @unchecked Sendable {
    private let fd: Int32
    private let loop: EpollLoop
    private let watch: EpollLoop.Watch
    fileprivate final class Subscribers: Sendable {
        let state = Mutex<(next: Int, all: [Int: AsyncStream<Void>.Continuation], finished: Bool)>((0, [:], false))
    }
    private let subscribers = Subscribers()

    /// Files whose changes are not signalled: the status files the agent itself writes there
    /// (`wake-status.json`, `household-status.json`), which the command line reads and nobody plans on.
    public static let ignoredNames: Set<String> = ["wake-status.json", "household-status.json"]

    /// - Parameter signalling: asked for each burst of relevant events, with the names they name ("" for an event
    ///   without a name, an overflow), whether to signal the subscribers; asked while the burst is read, so when
    ///   `generation()` returns, what it read has been signalled or declined. The default signals every burst.
    public init(directory: String, ignoring ignored: Set<String> = DirectoryWatcher.ignoredNames, loop: EpollLoop = .shared,
                signalling: @escaping @Sendable (_ names: Set<String>) -> Bool = { _ in true }) throws {
        self.loop = loop
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError(description: "inotify: \(String(cString: strerror(errno)))") }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SystemCallError(description: "cannot watch \(directory): \(reason)")
        }
        let reader = Reader(fd: fd, ignored: ignored, subscribers: subscribers, signalling: signalling)
        self.reader = reader
        do {
            watch = try loop.watch(fd: fd) { _ in reader.drain() }
        } catch {
            close(fd)
            throw error
        }
    }

    /// Reads the descriptor: on the loop when it is readable, and from `generation()` on any thread. The lock
    /// makes a reader wait for one already reading, so an event read by the other is counted (and signalled or
    /// declined) when it returns.
    private final class Reader: Sendable {
        let fd: Int32
        let ignored: Set<String>
        let subscribers: Subscribers
        let signalling: @Sendable (Set<String>) -> Bool
        /// Relevant bursts so far.
        let count = Mutex(0)

        init(fd: Int32, ignored: Set<String>, subscribers: Subscribers, signalling: @escaping @Sendable (Set<String>) -> Bool) {
            self.fd = fd
            self.ignored = ignored
            self.subscribers = subscribers
            self.signalling = signalling
        }

        /// Reads every queued event; a burst with a relevant one counts and, unless `signalling` declines it,
        /// signals every subscriber. Returns the count.
        @discardableResult
        func drain() -> Int {
            count.withLock { count -> Int in
                var buffer = [UInt8](repeating: 0, count: 4096)
                var names: Set<String> = []
                while true {
                    let n = read(fd, &buffer, buffer.count)
                    guard n > 0 else { break }
                    names.formUnion(DirectoryWatcher.relevantNames(buffer[0..<n], ignoring: ignored))
                }
                guard !names.isEmpty else { return count }
                count += 1
                if signalling(names) {
                    for continuation in subscribers.state.withLock({ Array($0.all.values) }) { continuation.yield() }
                }
                return count
            }
        }
    }

    private let reader: Reader

    /// A number that changes after every relevant change of the folder, read now: events the kernel has
    /// queued are taken first (a write by another process is queued before its `write` returns), so a
    /// process that changed the database and then asks the agent is never answered from before its change.
    /// Cheap (one `read` that finds nothing, mostly): the dashboard asks on every request.
    public func generation() -> Int { reader.drain() }

    /// A new stream of changes from now on (coalesced: at most one pending signal per subscriber). It ends
    /// when the watcher goes away or the consumer stops.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = subscribers.state.withLock { s -> Int? in
            guard !s.finished else { return nil }
            s.next += 1
            s.all[s.next] = continuation
            return s.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [subscribers] _ in
            _ = subscribers.state.withLock { $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    deinit {
        loop.unwatch(watch, closing: true)
        let all = subscribers.state.withLock { s -> [AsyncStream<Void>.Continuation] in
            s.finished = true
            defer { s.all.removeAll() }
            return Array(s.all.values)
        }
        for continuation in all { continuation.finish() }
    }

    /// The names of the files not ignored that a buffer of `inotify_event`s names ("" for an overflow, an event
    /// with no name, or a truncated event: relevant, and no file's name).
    static func relevantNames(_ bytes: ArraySlice<UInt8>, ignoring ignored: Set<String>) -> Set<String> {
        let header = MemoryLayout<inotify_event>.size
        var names: Set<String> = []
        var offset = bytes.startIndex
        while offset + header <= bytes.endIndex {
            let length = Int(bytes[(offset + 12)..<(offset + 16)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
            let end = min(bytes.endIndex, offset + header + length)
            let name = String(decoding: bytes[(offset + header)..<end].prefix { $0 != 0 }, as: UTF8.self)
            if name.isEmpty || !ignored.contains(name) { names.insert(name) }
            offset = end
        }
        if offset < bytes.endIndex { names.insert("") }
        return names
    }
}

/// A failed system call, in one line.
public struct SystemCallError: Error, CustomStringConvertible {
    public var description: String
}
