import DoseTapLinux
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
    await awaitOnOwnThread(body)
}

/// A one-way flag set from one task and read from another (a test's "this attempt counted").
public final class Flag: Sendable {
    private let value = Mutex(false)
    public init() {}
    public var isSet: Bool { value.withLock { $0 } }
    public func set() { value.withLock { $0 = true } }
}
