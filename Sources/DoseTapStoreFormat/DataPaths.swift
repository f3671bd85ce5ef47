import Foundation

/// Where DoseTap keeps its files, following the XDG base directory spec.
///
/// Data: `--data-dir`, else `$DOSETAP_DATA_DIR`, else `$XDG_DATA_HOME/dosetap`, else
/// `~/.local/share/dosetap`. Config: `--config`, else `$XDG_CONFIG_HOME/dosetap/config.toml`, else
/// `~/.config/dosetap/config.toml`.
public struct DataPaths: Sendable, Equatable {
    public var dataDirectory: URL
    public var configFile: URL

    public var databaseFile: URL { dataDirectory.appendingPathComponent("dosetap.sqlite") }

    public init(dataDirectory: URL, configFile: URL) {
        self.dataDirectory = dataDirectory
        self.configFile = configFile
    }

    public static func resolve(dataDirectory: String? = nil, configFile: String? = nil,
                               environment: [String: String] = DataPaths.processEnvironment()) -> DataPaths {
        let home = nonEmpty(environment["HOME"]) ?? NSHomeDirectory()
        let data = dataDirectoryPath(dataDirectory: dataDirectory, environment: environment)
        let config: String
        if let c = nonEmpty(configFile) {
            config = c
        } else if let x = nonEmpty(environment["XDG_CONFIG_HOME"]), x.hasPrefix("/") {
            config = x + "/dosetap/config.toml"
        } else {
            config = home + "/.config/dosetap/config.toml"
        }
        return DataPaths(dataDirectory: URL(fileURLWithPath: data, isDirectory: true),
                         configFile: URL(fileURLWithPath: config))
    }

    /// The data folder's path as given (`resolve`'s `dataDirectory` is its file URL): no URL is made, for the
    /// one-shot front (#29: a URL's path parsing instantiates `Set<UInt8>` by its mangled name, a scan of every
    /// protocol conformance in the binary). The same folder for the file system; the spelling may differ from
    /// the URL's `path` only in repeated or trailing slashes.
    public static func dataDirectoryPath(dataDirectory: String? = nil,
                                         environment: [String: String] = DataPaths.processEnvironment()) -> String {
        if let d = nonEmpty(dataDirectory) {
            // --data-dir may be relative to the working directory; messages show where it really is.
            return d.hasPrefix("/") ? d : FileManager.default.currentDirectoryPath + "/" + d
        } else if let d = nonEmpty(environment["DOSETAP_DATA_DIR"]), d.hasPrefix("/") {
            return d
        } else if let x = nonEmpty(environment["XDG_DATA_HOME"]), x.hasPrefix("/") {
            return x + "/dosetap"
        } else {
            return (nonEmpty(environment["HOME"]) ?? NSHomeDirectory()) + "/.local/share/dosetap"
        }
    }

    /// What is wrong with the environment's paths, in one sentence, or nil. `DOSETAP_DATA_DIR` must be
    /// absolute, as the XDG variables must: a relative one would put the dose history wherever the
    /// command happens to run (a systemd unit runs in `/`).
    public static func problem(dataDirectory: String? = nil,
                               environment: [String: String] = DataPaths.processEnvironment()) -> String? {
        if nonEmpty(dataDirectory) == nil, let d = nonEmpty(environment["DOSETAP_DATA_DIR"]), !d.hasPrefix("/") {
            return "DOSETAP_DATA_DIR must be an absolute path (got '\(d)'); use --data-dir for a path relative to here"
        }
        return nil
    }

    /// The variables these rules read, as the C library's `getenv` sees them (the first of duplicates, as every
    /// other reader of the environment here): not Foundation's whole environment, which a one-shot command
    /// would build as a dictionary of every variable on each call (#29).
    public static func processEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        for key in ["HOME", "DOSETAP_DATA_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"] {
            if let value = getenv(key) { environment[key] = String(cString: value) }
        }
        return environment
    }

    private static func nonEmpty(_ s: String?) -> String? {
        guard let s, !s.isEmpty else { return nil }
        return s
    }
}
