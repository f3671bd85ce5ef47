import DoseTapLinux
import Foundation
import Synchronization
import Testing

/// The agent's own threads (the event loop, each MQTT client's network loop) are plain pthreads: they run, and
/// carry their name for `top` and gdb.
@Suite("Threads of our own")
struct OwnThreadTests {
    @Test("startThread runs its body on a new, named thread; awaitOnOwnThread returns the body's value")
    func runsNamed() async throws {
        let seen = Mutex<(ran: Bool, name: String?)>((false, nil))
        let done = DispatchSemaphore(value: 0)
        let caller = pthread_self()
        let started = startThread(name: "dosetap-test-thread-long-name") {
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
            let other = pthread_equal(pthread_self(), caller) == 0
            seen.withLock { $0 = (other, name) }
            done.signal()
        }
        #expect(started)
        let finished = await awaitOnOwnThread { done.wait(timeout: .now() + 30) == .success }
        #expect(finished, "the thread never ran")
        let result = seen.withLock { $0 }
        #expect(result.ran)
        // Linux keeps 15 bytes of a thread's name.
        #expect(result.name == "dosetap-test-th")
        #expect(await awaitOnOwnThread { 6 * 7 } == 42)
    }
}
