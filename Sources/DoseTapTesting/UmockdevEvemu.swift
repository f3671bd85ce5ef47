internal import CUMockdev
import Foundation

extension UmockdevTestbed {
    /// Replays an evemu events file (`E: sec.usec TYPE CODE value` lines, as `umockdev-record
    /// --evemu-events` writes them) on an emulated input node such as "/dev/input/event5".
    ///
    /// umockdev's script runner writes each `struct input_event` to the node's pseudo-terminal from a
    /// thread of its own: the first at once, each next one after the recorded gap (in whole
    /// milliseconds), with the recorded timestamps. A reader opened on the node sees them as it would
    /// see the kernel's. One replay per node at a time.
    public func loadEvemuEvents(device: String, file: String) throws {
        var error: UnsafeMutablePointer<GError>?
        let ok = umockdev_testbed_load_evemu_events(testbed, device, file, &error)
        if ok == 0 {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw FixtureError("umockdev cannot replay \(file) on \(device): \(message)")
        }
    }
}
