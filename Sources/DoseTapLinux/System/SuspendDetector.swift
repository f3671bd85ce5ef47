#if canImport(Glibc)
import Glibc
#endif

/// Notices that the machine slept: `CLOCK_BOOTTIME` counts suspended time and `CLOCK_MONOTONIC`
/// does not, so their difference grows by the length of every suspend.
public struct SuspendDetector: Sendable {
    private var lastOffset: Double
    /// A growth smaller than this is clock noise, not a suspend.
    public var threshold: Double

    public init(threshold: Double = 5) {
        self.threshold = threshold
        lastOffset = Self.offset()
    }

    /// True (once) when the machine has been suspended since the previous call.
    public mutating func resumedSinceLastCheck() -> Bool {
        let offset = Self.offset()
        defer { lastOffset = offset }
        return offset - lastOffset > threshold
    }

    static func seconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    public static func offset() -> Double {
        seconds(CLOCK_BOOTTIME) - seconds(CLOCK_MONOTONIC)
    }
}
