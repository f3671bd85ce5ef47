import DoseTapCore
#if canImport(Glibc)
import Glibc
#endif

/// Reads UPower's configuration from the machine — `UPower.conf` and the drop-ins of `UPower.conf.d` —
/// and hands the text to the pure `UPowerConfiguration.parse`. Missing files are the defaults (2 %).
///
/// The directory is `/etc/UPower`; the environment variable `DOSETAP_UPOWER_DIR` names another one. It
/// exists for the tests (a private folder instead of the machine's), documented in docs/configuration.md.
/// Plain POSIX reads (no FileManager, #29): the one-shot front reads it on every `alarm list --json`.
public enum UPowerConfigFiles {
    public static let defaultDirectory = "/etc/UPower"
    public static let environmentKey = "DOSETAP_UPOWER_DIR"
    /// A config file larger than this is not UPower's (its own is 3 KB): not read.
    static let maximumSize = 256 * 1024

    /// The folder read: `DOSETAP_UPOWER_DIR` when set and not empty, else `/etc/UPower`.
    public static func directory(environment: [String: String]) -> String {
        if let dir = environment[environmentKey], !dir.isEmpty { return dir }
        return defaultDirectory
    }

    /// The folder read, from this process's environment.
    public static func directory() -> String {
        if let value = getenv(environmentKey), value.pointee != 0 { return String(cString: value) }
        return defaultDirectory
    }

    /// The machine's power-off policy, with one note per thing ignored (for the log).
    public static func read(directory: String = directory()) -> UPowerConfiguration.Result {
        var notes: [String] = []
        let main = readFile(directory + "/UPower.conf", name: "UPower.conf", notes: &notes)
        var dropIns: [UPowerConfiguration.File] = []
        let folder = directory + "/UPower.conf.d"
        if let names = SystemFile.names(in: folder) {
            for name in names where name.hasSuffix(".conf") {
                if !UPowerConfiguration.isDropInName(name) {
                    notes.append("UPower.conf.d/\(DisplayText.escaped(name)): not read: UPower reads only drop-ins named like 50-name.conf")
                    continue
                }
                if let file = readFile(folder + "/" + name, name: name, notes: &notes) { dropIns.append(file) }
            }
        }
        var result = UPowerConfiguration.parse(main: main, dropIns: dropIns)
        result.notes = notes + result.notes
        return result
    }

    static func readFile(_ path: String, name: String, notes: inout [String]) -> UPowerConfiguration.File? {
        var info = stat()
        // As a missing file: nothing there (a dangling link too).
        guard stat(path, &info) == 0 else { return nil }
        let fd = (info.st_mode & S_IFMT) == S_IFDIR ? -1 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            notes.append("\(name): cannot be read; using UPower's defaults for it")
            return nil
        }
        // A read that fails part-way counts as an empty file (nothing set there).
        let bytes = SystemFile.read(descriptor: fd, limit: maximumSize + 1) ?? []
        close(fd)
        guard bytes.count <= maximumSize else {
            notes.append("\(name): larger than \(maximumSize / 1024) KB, not read")
            return nil
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            notes.append("\(name): not UTF-8 text, not read")
            return nil
        }
        return UPowerConfiguration.File(name: name, text: text)
    }
}
