#if canImport(Glibc)
import Glibc
#endif

/// Plain reads of the machine's files with the C library (no Foundation `FileManager` or `FileHandle`, whose
/// first use costs a one-shot command run-time type lookups, #29).
public enum SystemFile {
    /// The bytes of the file at `path`, at most `limit` of them; nil when it cannot be opened or read.
    public static func read(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return read(descriptor: fd, limit: limit)
    }

    /// The bytes from an open descriptor's current position to its end, at most `limit`; nil on a read error.
    public static func read(descriptor fd: Int32, limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let wanted = min(chunk.count, limit - bytes.count)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, wanted) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    /// The names in a folder, `.` and `..` left out, in the order the system lists them; nil when it cannot be
    /// listed (missing, not a folder, not readable).
    public static func names(in folder: String) -> [String]? {
        guard let stream = opendir(folder) else { return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
