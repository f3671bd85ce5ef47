import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Runs a blocking loop (sockets, `usleep`) on a thread of its own and awaits its result. On the
/// cooperative pool it would hold one of its threads — two on a 2-core machine — for as long as it runs, and
/// every other test of the process (their timers, their agents' log readers) would stall behind it: a 1 s
/// timeout was seen to fire 50 s late, and a CLI took 20 s, under the soak and flood tests.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        // A plain detached pthread (not Foundation's Thread: in full parallel runs some of its threads were
        // never seen to run, and the awaiting tests hung for good).
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

/// A one-way flag set from one task and read from another (a test's "this attempt counted").
public final class Flag: Sendable {
    private let value = Mutex(false)
    public init() {}
    public var isSet: Bool { value.withLock { $0 } }
    public func set() { value.withLock { $0 = true } }
}
