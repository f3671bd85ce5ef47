internal import CLinuxTime
internal import CMosquitto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension MQTTClient {
    /// The client's network loop, on a thread of its own: `poll` on the broker's socket and an eventfd, then
    /// libmosquitto's read, write and keepalive steps (`mosquitto_loop_read/write/misc`), and reconnection
    /// with libmosquitto's own growing delay (1, 4, 9, … 30 s).
    ///
    /// Why not `mosquitto_loop_start`: libmosquitto 2.0's loop waits with `select()`, which cannot watch a
    /// descriptor numbered 1024 or more (`FD_SETSIZE`): it returns `MOSQ_ERR_INVAL` and never connects. The
    /// agent raises its descriptor limit (#25, finding 3) so that a flood of dashboard connections cannot
    /// silence an alarm; with that flood under way, a reconnection to the broker gets a high-numbered socket
    /// and the household would be gone without a word. `poll` has no such limit.
    ///
    /// It also wakes less: libmosquitto's loop wakes every second; this one wakes for traffic, for a call
    /// from another thread (the eventfd), and a quarter of the keepalive apart for the pings.
    final class NetworkLoop: @unchecked Sendable {
        private struct Control {
            var running = false
            /// A clean disconnect was asked: end once the socket is closed.
            var closing = false
            /// End now.
            var stopping = false
        }

        /// libmosquitto's handle; the loop thread and the client's callers use it, as `mosquitto_threaded_set` allows.
        private let handle: OpaquePointer
        private let wakeFD: Int32
        private let control = Mutex(Control())
        private let keepalive = Mutex<Int32>(30)
        private let finished = DispatchSemaphore(value: 0)

        init?(handle: OpaquePointer) {
            let fd = dosetap_eventfd_create()
            guard fd >= 0 else { return nil }
            self.handle = handle
            wakeFD = fd
        }

        deinit { Glibc.close(wakeFD) }

        /// Starts the thread (once); `mosquitto_connect_async` has been called.
        func start(state: State, keepalive seconds: Int32) {
            keepalive.withLock { $0 = max(1, seconds) }
            let first = control.withLock { c -> Bool in
                defer { c.running = true }
                return !c.running && !c.stopping
            }
            guard first else { return }
            let started = startThread(name: "dosetap-mqtt", stackSize: 1 << 19) { [self] in
                run(state: state)
                finished.signal()
            }
            // No thread to be had: nothing runs, so nothing may be waited for (`close`, `stop`); the connection
            // is not made and `connect` says so after its timeout.
            if !started { control.withLock { $0.running = false } }
        }

        /// Wakes the loop: something was queued from another thread.
        func wake() {
            dosetap_eventfd_signal(wakeFD)
        }

        /// A clean disconnect: DISCONNECT is written (after what was queued before it), then the loop ends.
        /// Waits at most 3 s for that (a broker that does not take the bytes), then stops the loop.
        func close() {
            let running = control.withLock { c -> Bool in
                c.closing = true
                return c.running
            }
            _ = mosquitto_disconnect(handle)
            guard running else { return }
            wake()
            if finished.wait(timeout: .now() + 3) == .timedOut {
                control.withLock { $0.stopping = true }
                wake()
                finished.wait()
            }
            control.withLock { $0.running = false }
        }

        /// Ends the loop at once. `dropping`: then the connection is cut without DISCONNECT, as if the
        /// machine died (the broker publishes the last will) — for tests.
        func stop(dropping: Bool = false) {
            let running = control.withLock { c -> Bool in
                c.stopping = true
                defer { c.running = false }
                return c.running
            }
            if running {
                wake()
                finished.wait()
            }
            if dropping {
                let fd = mosquitto_socket(handle)
                if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
            }
        }

        private func run(state: State) {
            let success = Int32(MOSQ_ERR_SUCCESS.rawValue)
            var failures = 0
            var retryAt: ContinuousClock.Instant?
            while true {
                let now = control.withLock { $0 }
                if now.stopping { return }
                let sock = mosquitto_socket(handle)
                if sock < 0 {
                    if now.closing { return }
                    // Not connected (refused, dropped, never reached): try again after libmosquitto's delay.
                    let due = retryAt ?? .now
                    let left = ContinuousClock.now.duration(to: due)
                    if left > .zero {
                        waitForWake(milliseconds: Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
                        continue
                    }
                    retryAt = nil
                    if mosquitto_reconnect_async(handle) != success || mosquitto_socket(handle) < 0 {
                        failures += 1
                        retryAt = .now + Self.delay(failures)
                    }
                    continue
                }
                if state.accepted.withLock({ accepted in defer { accepted = false }; return accepted }) { failures = 0 }
                let writing = mosquitto_want_write(handle)
                var fds = [pollfd(fd: sock, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0),
                           pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
                let timeout = state.isConnected.withLock { $0 } ? keepalive.withLock { $0 } * 1000 / 4 : 1000
                let ready = poll(&fds, 2, timeout)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if fds[1].revents != 0 { drainWake() }
                var rc = success
                // Readable, writable or in error: read first (it also steps a TLS handshake), then write what
                // is queued (a woken call, a ping, a subscription from the connect callback), then the keepalive.
                if fds[0].revents != 0 { rc = mosquitto_loop_read(handle, 1) }
                if rc == success, mosquitto_socket(handle) >= 0, mosquitto_want_write(handle) { rc = mosquitto_loop_write(handle, 1) }
                if rc == success, mosquitto_socket(handle) >= 0 { rc = mosquitto_loop_misc(handle) }
                if rc != success || mosquitto_socket(handle) < 0 {
                    // Lost (libmosquitto closed the socket and told the disconnect callback), or closed cleanly.
                    if control.withLock({ $0.closing || $0.stopping }) { return }
                    failures += 1
                    retryAt = .now + Self.delay(failures)
                }
            }
        }

        /// libmosquitto's reconnection delay with `mosquitto_reconnect_delay_set(1, 30, true)`: 1, 4, 9, 16, 25, 30 s.
        static func delay(_ failures: Int) -> Duration {
            .seconds(min(30, failures * failures))
        }

        private func waitForWake(milliseconds: Int32) {
            var fd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
            if poll(&fd, 1, max(1, milliseconds)) > 0 { drainWake() }
        }

        private func drainWake() {
            dosetap_eventfd_drain(wakeFD)
        }
    }
}
