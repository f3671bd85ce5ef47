import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A file holding a secret (a password, a token): an absolute path that only its owner may read. A secret
/// readable by the group or by others refuses the whole configuration with a one-line message.
func secretFile(_ path: String?, key: String, source: String) throws(ConfigurationError) -> String {
    guard let path, path.hasPrefix("/") else { throw ConfigurationError("\(source): \(key) must be an absolute path") }
    var info = stat()
    guard stat(path, &info) == 0 else {
        throw ConfigurationError("\(source): \(key) \(path) cannot be read: \(String(cString: strerror(errno)))")
    }
    guard info.st_mode & 0o077 == 0 else {
        throw ConfigurationError("\(source): \(key) \(path) is readable by others: chmod 600 \(path)")
    }
    return path
}

/// Reads a secret file (its first line, without the newline); nil with the reason when it cannot.
public func readSecret(_ path: String) -> Result<String, ConfigurationError> {
    guard let data = FileManager.default.contents(atPath: path), data.count <= 4096 else {
        return .failure(ConfigurationError("\(path) cannot be read (or is over 4 KiB)"))
    }
    let text = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    guard !text.isEmpty else { return .failure(ConfigurationError("\(path) is empty")) }
    return .success(text)
}
