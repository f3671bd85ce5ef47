internal import CLinuxInput
import Glibc

/// The file-descriptor layer under `HIDButtonReader`: exactly the calls that reach the kernel.
///
/// `SystemHIDButtonIO` makes the real calls; tests pass a fake that records them (was the node
/// grabbed? released? closed?) or that fails them (EVIOCGRAB refused, ENODEV on read).
public protocol HIDButtonIO: Sendable {
    /// `open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)`.
    func open(_ path: String) throws(EvdevError) -> Int32
    /// `EVIOCGRAB`: true takes the device exclusively, false releases it.
    func grab(_ fd: Int32, _ exclusive: Bool) throws(EvdevError)
    /// `EVIOCGUNIQ`: the device's unique id (a Bluetooth remote's address), nil when the fd cannot say.
    func uniq(_ fd: Int32) -> String?
    /// `EVIOCGKEY`: the key codes held down now, nil when the fd cannot say.
    func heldKeys(_ fd: Int32) -> Set<UInt16>?
    /// `read(2)` into `buffer`: the byte count, 0 at end of file. Throws with errno (EAGAIN included).
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(EvdevError) -> Int
    func close(_ fd: Int32)
}

/// The real calls.
public struct SystemHIDButtonIO: HIDButtonIO {
    public init() {}

    public func open(_ path: String) throws(EvdevError) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw EvdevError("open", errno: Glibc.errno) }
        return fd
    }

    public func grab(_ fd: Int32, _ exclusive: Bool) throws(EvdevError) {
        guard dosetap_evdev_grab(fd, exclusive ? 1 : 0) >= 0 else {
            throw EvdevError(exclusive ? "EVIOCGRAB" : "EVIOCGRAB(0)", errno: Glibc.errno)
        }
    }

    public func uniq(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let rc = buffer.withUnsafeMutableBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { dosetap_evdev_get_uniq(fd, $0.baseAddress!, $0.count) }
        }
        guard rc > 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    public func heldKeys(_ fd: Int32) -> Set<UInt16>? {
        var bits = [UInt8](repeating: 0, count: (Int(KEY_CNT) + 7) / 8)
        let rc = bits.withUnsafeMutableBufferPointer { dosetap_evdev_get_key_state(fd, $0.baseAddress!, $0.count) }
        guard rc >= 0 else { return nil }
        var codes: Set<UInt16> = []
        for (index, byte) in bits.enumerated() where byte != 0 {
            for bit in 0..<8 where byte & (1 << bit) != 0 {
                codes.insert(UInt16(index * 8 + bit))
            }
        }
        return codes
    }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(EvdevError) -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if Glibc.errno == EINTR { continue }
            throw EvdevError("read", errno: Glibc.errno)
        }
    }

    public func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
