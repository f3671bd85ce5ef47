import DoseTapLinux
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify datagrams (READY=1, WATCHDOG=1, …) are sent without ever blocking the sender: the agent sends them
/// from its one event loop, and a receiver that stopped reading once held that loop in `sendto` — the SIGTERM that
/// followed was never handled (a fresh-clone test run hung on it); an alarm due then would not have rung.
@Suite("SystemdNotifier: sd_notify without blocking")
struct SystemdNotifierTests {
    /// A datagram socket bound at a fresh path that nobody reads.
    static func deafSocket() throws -> (path: String, fd: Int32) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8)).sock").path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, rc == 0 else { throw CancellationError() }
        return (path, fd)
    }

    @Test("a receiver that never reads: the queue fills, later messages are dropped (false), nothing waits")
    func fullQueueDoesNotBlock() throws {
        let (path, fd) = try Self.deafSocket()
        defer { close(fd); unlink(path) }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        // The first datagrams are queued; a queue holds far fewer than this (net.unix.max_dgram_qlen, the buffer).
        // On a thread of its own: with a blocking send the loop never ends, and the wait below fails.
        let counts = Mutex((sent: 0, dropped: 0))
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for _ in 0..<5000 {
                let ok = notifier.notify("WATCHDOG=1")
                counts.withLock { if ok { $0.sent += 1 } else { $0.dropped += 1 } }
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else {
            Issue.record("a send blocked on the full queue")
            return  // (that thread stays blocked; nothing below may send while it does)
        }
        let (sent, dropped) = counts.withLock { ($0.sent, $0.dropped) }
        #expect(sent > 0, "the first pings reach the socket")
        #expect(dropped > 0, "a full queue drops the rest")
        // ...and a reader that comes back gets what was queued.
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(n == 10 && String(decoding: buffer[..<10], as: UTF8.self) == "WATCHDOG=1")
        #expect(notifier.notify("STOPPING=1"), "room again after one read")
    }

    @Test("no NOTIFY_SOCKET, or one nobody listens on: false, at once")
    func nowhereToSend() {
        #expect(!SystemdNotifier(environment: [:]).notify("READY=1"))
        #expect(!SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify.sock"]).notify("READY=1"))
    }
}
