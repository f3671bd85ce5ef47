import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tells when files in a directory change (inotify), so the agent notices what the command line wrote
/// to the database without polling. Events are coalesced: one signal per burst.
public final class DirectoryWatcher: @unchecked Sendable {
    private let fd: Int32
    private let source: DispatchSourceRead
    public let changes: AsyncStream<Void>

    public init(directory: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError(description: "inotify: \(String(cString: strerror(errno)))") }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SystemCallError(description: "cannot watch \(directory): \(reason)")
        }
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        changes = stream
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "dosetap.inotify"))
        source.setEventHandler { [fd] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(fd, &buffer, buffer.count) > 0 {}
            continuation.yield()
        }
        source.setCancelHandler { [fd] in
            close(fd)
            continuation.finish()
        }
        source.resume()
    }

    deinit {
        source.cancel()
    }
}

/// A failed system call, in one line.
public struct SystemCallError: Error, CustomStringConvertible {
    public var description: String
}
