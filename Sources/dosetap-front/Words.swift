import DoseTapStoreFormat
import Foundation

/// A one-shot command line as the full program's parser reads it — but only the plain shapes: each flag and each
/// option at most once, a value as the next word or after `=`. Anything else (a word it does not know, a
/// repeated option, a value missing or looking like an option) is nil: the full program answers, and its parser
/// words the error.
///
/// Arrays, not sets: a `Set<String>` literal instantiates its type by mangled name at its first use, a scan of every
/// protocol conformance in the binary (3 % of `status --format waybar`'s samples, #29); a handful of names is
/// searched faster than hashed anyway.
struct FrontWords {
    var flags: [String] = []
    /// Each option given and its value, in the order given (a dictionary would look up `String: Hashable` the same
    /// way as a set).
    var given: [(name: String, value: String)] = []

    /// The value of the option `name` (`--level`), or nil.
    func value(_ name: String) -> String? {
        given.first { $0.name == name }?.value
    }

    /// `words` with these flags and options (`--name`), or nil.
    init?(_ words: [String], flags known: [String], options: [String]) {
        var i = 0
        while i < words.count {
            let word = words[i]
            i += 1
            var name = word
            var inline: String?
            if let equals = word.firstIndex(of: "="), word.hasPrefix("--") {
                name = String(word[..<equals])
                inline = String(word[word.index(after: equals)...])
            }
            if known.contains(name) {
                guard inline == nil, !flags.contains(name) else { return nil }
                flags.append(name)
            } else if options.contains(name) {
                guard value(name) == nil else { return nil }
                let text: String
                if let inline {
                    text = inline
                } else {
                    guard i < words.count else { return nil }
                    text = words[i]
                    i += 1
                }
                // An empty value or one that looks like an option: the parser's to judge.
                guard !text.isEmpty, !text.hasPrefix("-") else { return nil }
                given.append((name, text))
            } else {
                return nil
            }
        }
    }
}

/// The data folder and its database, as the full program finds them (`DataPaths`, `DataFolder`).
struct FrontData {
    let folder: String
    let file: String
    /// Whether the database file exists (a folder that is a file, or cannot be read, is nil: the full program's error).
    let exists: Bool

    /// nil when the full program should answer: a problem with the folder's setting, no HOME (the home folder
    /// would then come from the password database — NSS modules, which a static program must not load), a folder
    /// that is not one.
    init?(dataDir: String?) {
        guard DataPaths.problem(dataDirectory: dataDir) == nil else { return nil }
        guard let home = getenv("HOME"), home.pointee != 0 else { return nil }
        var path = DataPaths.dataDirectoryPath(dataDirectory: dataDir)
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        folder = path
        file = (path == "/" ? "" : path) + "/dosetap.sqlite"
        guard let exists = try? DataFolder.exists(folder: folder, file: file) else { return nil }
        self.exists = exists
    }

    /// The database opened for reading in one read transaction (`COMMIT` when `reader` goes), or nil when it is not
    /// a current DoseTap database in WAL mode (the full program would upgrade it or say why) or SQLite fails.
    func open() -> SQLiteReader? {
        guard let reader = SQLiteReader(path: file), reader.execute("BEGIN") else { return nil }
        var walMode = false
        guard reader.query("PRAGMA journal_mode", row: { walMode = $0.first == .text("wal"); return true }), walMode else { return nil }
        var current = false
        guard let last = StoreSchema.migrationIdentifiers.last,
              reader.query("SELECT identifier FROM grdb_migrations", row: { if $0.first == .text(last) { current = true }; return true }),
              current else { return nil }
        reader.inTransaction = true
        return reader
    }
}
