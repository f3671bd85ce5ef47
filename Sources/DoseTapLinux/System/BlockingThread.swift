internal import CLinuxTime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (a sound device's writes, a socket's reads) on a thread of its own and awaits its
/// result, so it never holds one of the cooperative pool's threads (two on a 2-core machine) or the agent's
/// event loop for as long as it runs.
public func awaitOnOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        // A plain detached pthread (not Foundation's Thread: in full parallel test runs some of its threads
        // were never seen to run, and whoever awaited them hung for good).
        let job = Unmanaged.passRetained(BlockingJob { continuation.resume(returning: body()) })
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 1 << 20)
        var thread = pthread_t()
        let created = pthread_create(&thread, &attributes, { raw in
            Unmanaged<BlockingJob>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, job.toOpaque())
        if created != 0 {
            // No thread to be had: run it here rather than never.
            job.takeRetainedValue().run()
        }
    }
}

private final class BlockingJob: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// Starts `body` on a detached thread of its own (a plain pthread, named `name` as `top` and gdb show it);
/// false when the system gives no thread. Not Foundation's `Thread`: in full parallel test runs some of its
/// threads were never seen to run, and whoever waited for them (an MQTT client's network loop at
/// `disconnect`, its `deinit`) hung for good.
public func startThread(name: String, stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) -> Bool {
    let job = Unmanaged.passRetained(BlockingJob {
        _ = dosetap_thread_name(name)
        body()
    })
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    pthread_attr_setstacksize(&attributes, stackSize)
    var thread = pthread_t()
    let created = pthread_create(&thread, &attributes, { raw in
        Unmanaged<BlockingJob>.fromOpaque(raw!).takeRetainedValue().run()
        return nil
    }, job.toOpaque())
    guard created == 0 else {
        job.release()
        return false
    }
    return true
}
