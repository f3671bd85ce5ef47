import ArgumentParser
import DoseTapAgent
import DoseTapApp
import DoseTapLinux
import Foundation

/// `--output FILE [--force]` of an export.
struct ExportOutputOptions: ParsableArguments {
    @Option(help: "Write to this file instead of standard output (a new file is created with mode 0600; never the database, a link or a device).")
    var output: String?

    @Flag(help: "With --output: replace an existing regular file (its mode is kept).")
    var force = false
}

/// Where an export goes: standard output, or `--output FILE` through `SafeFileWriter` — a new file is
/// 0600, an existing regular file is replaced only with `--force` (keeping its mode), and never the
/// database (nor its -wal/-shm/-journal), the install's secrets, a link or a device.
struct ExportDestination {
    var output: String?
    var force: Bool
    var location: any Locating

    init(_ options: ExportOutputOptions, location: any Locating) {
        output = options.output
        force = options.force
        self.location = location
    }

    func write(_ text: String) throws {
        guard let output else {
            StandardOutput.write(text)
            return
        }
        let data = location.paths.dataDirectory
        let protected = [location.paths.databaseFile.path, data.appendingPathComponent(InstallSecret.fileName).path,
                         data.appendingPathComponent("web-secret").path]
        do {
            try SafeFileWriter.write(Array(text.utf8), to: output, replace: force, protected: protected)
        } catch {
            throw CLIError("\(error)")
        }
    }
}
