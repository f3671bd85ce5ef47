internal import CLinuxTime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process that started this one, watched until it exits (#27): `dosetap status --follow` under a status
/// bar must end with the bar. waybar runs its module as `sh -c '<exec>'` with SIGPIPE ignored, and the
/// follower only writes when its line changes, so without this it would outlive the bar for hours, holding a
/// connection to the agent, and a few restarts of the bar would leave several behind.
///
/// A pidfd (`pidfd_open`, Linux 5.3) becomes readable when the process exits; a blocked `poll` on it costs
/// nothing until then. Not `PR_SET_PDEATHSIG`: that fires when the *thread* that forked us ends, so a parent
/// that starts children from a short-lived worker thread would kill a follower it still reads.
public enum ParentProcess {
    /// Returns true once the parent this process has now is gone (it exited, or this process was handed to
    /// another parent before the watch began); false at once when there is nothing to watch: the parent is PID 1
    /// (init adopts orphans) or the kernel has no pidfd (then only a failed write ends the follower).
    public static func exited() async -> Bool {
        let parent = getppid()
        guard parent > 1 else { return false }
        let fd = dosetap_pidfd_open(parent)
        // The parent may have gone between getppid and pidfd_open (the number could even be reused): a changed
        // parent says so for sure.
        guard getppid() == parent else {
            if fd >= 0 { close(fd) }
            return true
        }
        guard fd >= 0 else { return false }
        return await awaitOnOwnThread {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var ready: Int32
            repeat { ready = poll(&entry, 1, -1) } while ready < 0 && errno == EINTR
            close(fd)
            return ready > 0
        }
    }
}
