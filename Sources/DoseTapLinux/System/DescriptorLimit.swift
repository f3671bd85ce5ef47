#if canImport(Glibc)
import Glibc
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`). systemd starts user services with a soft limit of
/// 1,024 and a much higher hard limit (524,288 on current systemd); the soft limit is what `accept()` and
/// `posix_spawn()` run into, so the agent raises it to the hard one at start (issue #25): a flood of
/// connections to the dashboard must never leave the alarm without a descriptor for its player.
public enum DescriptorLimit {
    public struct Limits: Sendable, Equatable {
        public var soft: Int
        public var hard: Int
    }

    /// The current limits, or nil when they cannot be read.
    public static func current() -> Limits? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return Limits(soft: clamp(limit.rlim_cur), hard: clamp(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one; answers the limits in force afterwards (unchanged when the
    /// call failed).
    @discardableResult
    public static func raiseSoftToHard() -> Limits? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised)
        }
        return current()
    }

    /// RLIM_INFINITY (all ones) is above Int32.max too.
    static func clamp(_ value: rlim_t) -> Int {
        value > rlim_t(Int32.max) ? Int(Int32.max) : Int(value)
    }
}
