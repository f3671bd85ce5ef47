internal import CUMockdev
import Foundation

/// An in-process umockdev testbed. Only works when the process runs under `umockdev-wrapper`
/// (libumockdev-preload redirects /sys and the udev netlink socket into the testbed).
public final class UmockdevTestbed {
    /// Internal, not private: the evemu replay (`UmockdevEvemu.swift`) uses it too.
    let testbed: UnsafeMutablePointer<UMockdevTestbed>

    /// True when the preload library is active in this process.
    public static var isPreloaded: Bool {
        (ProcessInfo.processInfo.environment["LD_PRELOAD"] ?? "").contains("umockdev-preload")
    }

    public init() {
        testbed = umockdev_testbed_new()
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(testbed))
    }

    /// Adds the devices of a `.umockdev` description.
    public func add(_ description: String) throws {
        var error: UnsafeMutablePointer<GError>?
        let ok = umockdev_testbed_add_from_string(testbed, description, &error)
        if ok == 0 {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw FixtureError("umockdev rejected the description: \(message)")
        }
    }

    /// Changes a sysfs attribute; `devicePath` is like "/sys/devices/.../power_supply/BAT0".
    public func setAttribute(_ devicePath: String, _ name: String, _ value: String) {
        umockdev_testbed_set_attribute(testbed, devicePath, name, value)
    }

    public func uevent(_ devicePath: String, action: String) {
        umockdev_testbed_uevent(testbed, devicePath, action)
    }

    public func remove(_ devicePath: String) {
        umockdev_testbed_remove_device(testbed, devicePath)
    }

    /// The testbed's side of a character device's node (umockdev makes each one a pty): what the code under
    /// test writes to `devnode` ("/dev/input/event3") is read here, and the other way round. -1 for no such node.
    public func deviceFD(_ devnode: String) -> Int32 {
        umockdev_testbed_get_dev_fd(testbed, devnode)
    }

    /// The root directory that stands for "/" inside the testbed.
    public var rootDirectory: String {
        String(cString: umockdev_testbed_get_root_dir(testbed))
    }
}
