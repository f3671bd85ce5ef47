import DoseTapCore
#if canImport(Glibc)
import Glibc
#endif

/// The power supplies as `/sys/class/power_supply` shows them, read as plain files: what the command line
/// reads (the full program and the one-shot front alike, #29), without libudev. The agent follows changes
/// with udev's monitor (`UdevPowerSupplySource`, DoseTapLinux); `SysfsPowerSupplyTests` hold the two to the
/// same readings on every recorded machine (umockdev, which redirects these reads to its testbed).
///
/// An attribute is read as libudev reads it (`udev_device_get_sysattr_value`): a symbolic link or a folder is
/// no value; the whole file, its trailing newlines (`\n`, `\r`) dropped, then cut at a NUL; bytes that are not
/// UTF-8 replaced. A supply whose `type` cannot be read has gone (unplugged between the listing and the read).
public struct SysfsPowerSupplySource: PowerSupplySource {
    public static let classDirectory = "/sys/class/power_supply"
    /// A sysfs attribute is at most a page; anything longer is cut here (libudev reads the whole file).
    static let maximumAttributeSize = 64 * 1024

    let directory: String

    public init(directory: String = SysfsPowerSupplySource.classDirectory) {
        self.directory = directory
    }

    public func snapshot() throws -> [RawPowerSupply] {
        guard let stream = opendir(directory) else {
            let code = errno
            // No such class folder: a machine without power supplies (udev lists none either).
            if code == ENOENT || code == ENOTDIR { return [] }
            throw SysfsPowerSupplyError(description: "cannot list power supplies: \(String(cString: strerror(code)))")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names.sorted().compactMap { read(name: $0) }
    }

    public func read(name: String) -> RawPowerSupply? {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { return nil }
        let folder = directory + "/" + name
        var attributes: [String: String] = [:]
        for key in RawPowerSupply.attributeNames {
            if let value = Self.attribute(folder + "/" + key) { attributes[key] = value }
        }
        guard attributes["type"] != nil else { return nil }
        return RawPowerSupply(name: name, attributes: attributes)
    }

    /// Nothing follows a one-shot read: the stream ends at once (the agent watches with udev).
    public func events() -> AsyncStream<PowerSupplyEvent> {
        AsyncStream { $0.finish() }
    }

    /// One attribute file, as libudev reads it; nil when it is missing, a link, a folder or unreadable.
    static func attribute(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard let bytes = SystemFile.read(path, limit: maximumAttributeSize) else { return nil }
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let text = bytes[..<end].prefix(while: { $0 != 0 })
        return String(decoding: text, as: UTF8.self)
    }
}

public struct SysfsPowerSupplyError: Error, Sendable, CustomStringConvertible {
    public var description: String
}
