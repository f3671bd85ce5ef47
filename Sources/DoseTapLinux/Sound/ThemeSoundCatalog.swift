import DoseTapCore
import Foundation
import Glibc
import Logging

/// Where sound themes live (XDG Base Directory + the freedesktop sound theme spec).
public struct SoundThemeLocations: Sendable, Equatable {
    /// `$XDG_DATA_HOME` (default `~/.local/share`): `sounds/` holds the user's own sounds and themes.
    public var dataHome: String
    /// `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`), most important first.
    public var dataDirs: [String]

    public init(dataHome: String, dataDirs: [String]) {
        self.dataHome = dataHome
        self.dataDirs = dataDirs
    }

    /// From an environment. Empty or relative values are ignored, as the XDG spec says.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        if let value = environment["XDG_DATA_HOME"], value.hasPrefix("/") {
            dataHome = value
        } else {
            dataHome = home + "/.local/share"
        }
        let dirs = (environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        dataDirs = dirs.isEmpty ? ["/usr/local/share", "/usr/share"] : dirs
    }

    /// `<dataHome>/sounds`, then each `<dataDir>/sounds`, without duplicates.
    public var soundRoots: [String] {
        var seen = Set<String>()
        return ([dataHome] + dataDirs)
            .map { Self.trimmed($0) + "/sounds" }
            .filter { seen.insert($0).inserted }
    }

    static func trimmed(_ path: String) -> String {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }
}

/// Listing the sounds failed even after the retries.
public struct SoundCatalogError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The machine's event sounds, by name (design §3.4, the freedesktop sound theme spec).
///
/// - Roots: `$XDG_DATA_HOME/sounds`, then each `$XDG_DATA_DIRS/sounds`. A theme is a subdirectory of a
///   root; the same theme may be spread over several roots (the first root's copy wins), and the first
///   `index.theme` found describes it: `Directories=` (comma- or space-separated) lists the
///   subdirectories holding sounds (`stereo`, …), `Inherits=` its parents. Files directly in a theme
///   directory count too (after the listed subdirectories).
/// - Loose files directly in `$XDG_DATA_HOME/sounds` are the theme "user"; loose files directly in a
///   system root are "unthemed".
/// - Each name is listed once; the most specific definition wins: the user's loose sounds, then the
///   themes with every child before its parents (`Inherits=`, and "freedesktop" as every theme's implicit
///   last parent, as the spec requires), unrelated themes by root order then name, then unthemed sounds.
///   A `<name>.disabled` file hides that name from the theme and all less specific ones.
/// - Extensions: .oga, .ogg, .wav, .flac (in that preference within one directory); the name is the file
///   name without it. Localized subdirectories (`stereo/fr/`) are not listed.
/// - Missing roots are fine, unreadable or empty directories are skipped, dangling links are ignored,
///   and inheritance loops end. A root that fails otherwise (an I/O error) fails the listing, which is
///   retried after 100, 200 and 400 ms before a `SoundCatalogError`.
/// - The result is sorted by name. With `includeBuiltinBeep`, the built-in beep is part of it.
public struct ThemeSoundCatalog: SoundCatalog {
    public static let extensions = ["oga", "ogg", "wav", "flac"]
    public static let defaultRetryDelays: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400)]

    public var locations: SoundThemeLocations
    public var includeBuiltinBeep: Bool
    /// Where the built-in beep is written (default `$XDG_CACHE_HOME/dosetap`).
    public var builtinBeepDirectory: String?
    public var retryDelays: [Duration]
    private let fileSystem: any SoundFileSystem
    private let sleep: @Sendable (Duration) -> Void
    private let logger: Logger

    public init(locations: SoundThemeLocations = SoundThemeLocations(),
                includeBuiltinBeep: Bool = false,
                builtinBeepDirectory: String? = nil,
                fileSystem: any SoundFileSystem = LocalSoundFileSystem(),
                retryDelays: [Duration] = ThemeSoundCatalog.defaultRetryDelays,
                sleep: @escaping @Sendable (Duration) -> Void = ThemeSoundCatalog.blockingSleep,
                logger: Logger = Logger(label: "dosetap.sounds")) {
        self.locations = locations
        self.includeBuiltinBeep = includeBuiltinBeep
        self.builtinBeepDirectory = builtinBeepDirectory
        self.fileSystem = fileSystem
        self.retryDelays = retryDelays
        self.sleep = sleep
        self.logger = logger
    }

    public static let blockingSleep: @Sendable (Duration) -> Void = { duration in
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    public func list() throws -> [SoundInfo] {
        var attempt = 0
        while true {
            do {
                var sounds = try listOnce()
                if includeBuiltinBeep {
                    sounds.removeAll { $0.name == SoundInfo.builtinBeepName }
                    sounds.append(try BuiltinBeep.sound(cacheDirectory: builtinBeepDirectory))
                    sounds.sort { ($0.name, $0.theme) < ($1.name, $1.theme) }
                }
                return sounds
            } catch let failure as SoundFileSystemError {
                guard attempt < retryDelays.count else {
                    throw SoundCatalogError("cannot list sounds: \(failure) (\(attempt + 1) attempts)")
                }
                logger.debug("listing sounds failed, retrying", metadata: ["error": "\(failure)", "attempt": "\(attempt + 1)"])
                sleep(retryDelays[attempt])
                attempt += 1
            }
        }
    }

    /// The sound with this name, if the machine has it.
    public func sound(named name: String) throws -> SoundInfo? {
        if name == SoundInfo.builtinBeepName { return try BuiltinBeep.sound(cacheDirectory: builtinBeepDirectory) }
        return try list().first { $0.name == name }
    }

    // MARK: - One attempt

    private struct Theme {
        var name: String
        /// The theme's directory in each root, root order.
        var directories: [(root: Int, path: String)] = []
        var index: IndexTheme?
    }

    struct IndexTheme: Equatable {
        var inherits: [String] = []
        var directories: [String] = []
    }

    /// Throws a `SoundFileSystemError` only when a root fails in a way that is neither "missing" nor
    /// "unreadable" — the listing itself failed, and is worth retrying.
    func listOnce() throws -> [SoundInfo] {
        let roots = locations.soundRoots
        var themes: [String: Theme] = [:]
        var userLoose: [String] = []
        var unthemedLoose: [String] = []

        for (rootIndex, root) in roots.enumerated() {
            let entries: [SoundDirectoryEntry]
            do {
                entries = try fileSystem.entries(of: root)
            } catch {
                if error.isMissing { continue }
                if error.isUnreadable {
                    logger.debug("skipping unreadable sound directory", metadata: ["path": "\(root)"])
                    continue
                }
                throw error
            }
            for entry in entries.sorted(by: { $0.name < $1.name }) {
                switch entry.kind {
                case .directory:
                    themes[entry.name, default: Theme(name: entry.name)].directories.append((rootIndex, root + "/" + entry.name))
                case .file:
                    if rootIndex == 0 { userLoose.append(root + "/" + entry.name) } else { unthemedLoose.append(root + "/" + entry.name) }
                case .other:
                    continue
                }
            }
        }
        for name in themes.keys {
            themes[name]!.index = themes[name]!.directories.lazy
                .compactMap { fileSystem.text(of: $0.path + "/index.theme") }
                .first
                .map(Self.parseIndexTheme)
        }

        var resolved = Resolver()
        resolved.add(files: userLoose, theme: "user")
        for name in Self.specificityOrder(themes.mapValues { theme in
            (root: theme.directories.map(\.root).min() ?? 0, parents: theme.index?.inherits ?? [])
        }) {
            let theme = themes[name]!
            var seenDirectories = Set<String>()
            for subdirectory in theme.index?.directories ?? [] where seenDirectories.insert(subdirectory).inserted {
                guard Self.isPlainRelativeName(subdirectory) else { continue }
                for (_, path) in theme.directories {
                    resolved.add(files: files(in: path + "/" + subdirectory), theme: name)
                }
            }
            for (_, path) in theme.directories {
                resolved.add(files: files(in: path), theme: name)
            }
        }
        resolved.add(files: unthemedLoose, theme: "unthemed")
        return resolved.sounds.sorted { ($0.name, $0.theme) < ($1.name, $1.theme) }
    }

    /// The regular files of a theme directory; unreadable or missing directories give none.
    private func files(in directory: String) -> [String] {
        do {
            return try fileSystem.entries(of: directory)
                .filter { $0.kind == .file }
                .map { directory + "/" + $0.name }
        } catch {
            if !error.isMissing {
                logger.debug("skipping sound directory", metadata: ["path": "\(directory)", "error": "\(error)"])
            }
            return []
        }
    }

    /// First definition of each name wins; within one batch (one directory), `.disabled` first, then the
    /// extensions in preference order.
    struct Resolver {
        var taken = Set<String>()
        var sounds: [SoundInfo] = []

        mutating func add(files: [String], theme: String) {
            let parsed: [(name: String, rank: Int, path: String)] = files.compactMap { path in
                let file = path.split(separator: "/").last.map(String.init) ?? path
                guard let dot = file.lastIndex(of: "."), dot != file.startIndex else { return nil }
                let name = String(file[..<dot])
                let ext = file[file.index(after: dot)...].lowercased()
                if ext == "disabled" { return (name, 0, path) }
                guard let rank = ThemeSoundCatalog.extensions.firstIndex(of: ext) else { return nil }
                return (name, rank + 1, path)
            }
            for entry in parsed.sorted(by: { ($0.name, $0.rank, $0.path) < ($1.name, $1.rank, $1.path) }) {
                guard taken.insert(entry.name).inserted else { continue }
                if entry.rank > 0 {
                    sounds.append(SoundInfo(name: entry.name, theme: theme, path: entry.path))
                }
            }
        }
    }

    /// Children before parents. Every theme but "freedesktop" implicitly inherits "freedesktop" last.
    /// Among themes whose children are all placed, the one from the earliest root (then by name) goes
    /// first; a loop is broken at the theme with the fewest unplaced children, so cycles terminate.
    static func specificityOrder(_ themes: [String: (root: Int, parents: [String])]) -> [String] {
        var parents: [String: [String]] = [:]
        for (name, theme) in themes {
            var list = theme.parents.filter { $0 != name && themes[$0] != nil }
            if name != "freedesktop", themes["freedesktop"] != nil, !list.contains("freedesktop") {
                list.append("freedesktop")
            }
            parents[name] = list
        }
        var pendingChildren: [String: Int] = themes.mapValues { _ in 0 }
        for (_, list) in parents {
            for parent in Set(list) { pendingChildren[parent, default: 0] += 1 }
        }
        let key: (String) -> (Int, String) = { (themes[$0]!.root, $0) }
        var remaining = Set(themes.keys)
        var order: [String] = []
        while !remaining.isEmpty {
            // Normally a theme whose children are all placed; in a loop, the one with the fewest children
            // left (a theme in the loop rather than a parent of it, such as "freedesktop").
            let next = remaining.min { a, b in
                (pendingChildren[a]!, key(a).0, key(a).1) < (pendingChildren[b]!, key(b).0, key(b).1)
            }!
            remaining.remove(next)
            order.append(next)
            for parent in Set(parents[next] ?? []) where remaining.contains(parent) {
                pendingChildren[parent]! -= 1
            }
        }
        return order
    }

    /// `[Sound Theme]` `Inherits=` and `Directories=`; lists are comma-separated (the spec), and the
    /// spec's own example separates `Directories=` with spaces, so both are accepted.
    static func parseIndexTheme(_ text: String) -> IndexTheme {
        var index = IndexTheme()
        var inMainSection = false
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inMainSection = line == "[Sound Theme]"
                continue
            }
            guard inMainSection, let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: eq)...]
            let list = value.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
            switch key {
            case "Inherits": index.inherits = list
            case "Directories": index.directories = list
            default: break
            }
        }
        return index
    }

    static func isPlainRelativeName(_ s: String) -> Bool {
        !s.isEmpty && !s.hasPrefix("/") && !s.split(separator: "/").contains("..")
    }
}
