import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

@Suite("DoseTapStore")
struct StoreTests {
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a new database is created in WAL mode with its migrations applied")
    func create() throws {
        let dir = try temporaryDirectory()
        let db = try DoseTapDatabase(directory: dir.appendingPathComponent("nested/data"))
        #expect(try db.appliedMigrations() == ["v1-battery-samples"])
        #expect(try db.journalMode() == "wal")
        // Re-opening runs no migration twice.
        let again = try DoseTapDatabase(directory: dir.appendingPathComponent("nested/data"))
        #expect(try again.appliedMigrations() == ["v1-battery-samples"])
    }

    @Test("openIfPresent does not create a database")
    func openIfPresent() throws {
        let dir = try temporaryDirectory()
        #expect(try DoseTapDatabase.openIfPresent(directory: dir) == nil)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("dosetap.sqlite").path))
        _ = try DoseTapDatabase(directory: dir)
        #expect(try DoseTapDatabase.openIfPresent(directory: dir) != nil)
    }

    @Test("samples round-trip with every field, oldest first")
    func roundTrip() throws {
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: try temporaryDirectory()))
        let a = BatterySample(at: t0, level: 80.5, energyWh: 40.25, energyFullWh: 50, rateW: 9.5, onAC: false, status: .discharging)
        let b = BatterySample(at: t0.addingTimeInterval(60), level: 80, onAC: true, status: .notCharging)
        try repo.append(b)
        try repo.append(a)
        #expect(try repo.samples(since: t0) == [a, b])
        #expect(try repo.samples(since: t0.addingTimeInterval(1)) == [b])
    }

    @Test("history is bounded to the last 7 days")
    func retention() throws {
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: try temporaryDirectory()))
        let week = 7.0 * 24 * 3600
        try repo.append(BatterySample(at: t0, level: 90, onAC: false, status: .discharging))
        try repo.append(BatterySample(at: t0.addingTimeInterval(week - 1), level: 50, onAC: false, status: .discharging))
        #expect(try repo.count() == 2)
        try repo.append(BatterySample(at: t0.addingTimeInterval(week + 1), level: 49, onAC: false, status: .discharging))
        #expect(try repo.count() == 2)
        #expect(try repo.samples(since: .distantPast).map(\.level) == [50, 49])
    }

    @Test("two connections (the CLI and the agent) see each other's writes")
    func twoProcesses() throws {
        let dir = try temporaryDirectory()
        let agent = BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
        let cli = BatterySampleRepository(database: try DoseTapDatabase(directory: dir))
        try agent.append(BatterySample(at: t0, level: 70, onAC: false, status: .discharging))
        #expect(try cli.samples(since: .distantPast).count == 1)
    }

    @Test("a data directory that cannot be created is a one-line error")
    func unwritable() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: file)
        #expect {
            _ = try DoseTapDatabase(directory: file.appendingPathComponent("data"))
        } throws: { error in
            "\(error)".contains("cannot create data directory") && !"\(error)".contains("\n")
        }
    }

    @Test("a corrupt database file is refused with a reason and left in place")
    func corrupt() throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("dosetap.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: file)
        #expect(throws: StoreError.self) { _ = try DoseTapDatabase(directory: dir) }
        #expect(try Data(contentsOf: file) == Data(repeating: 0x41, count: 4096))
    }

    @Test("XDG paths: flag, then DOSETAP_DATA_DIR, then XDG_DATA_HOME, then ~/.local/share")
    func paths() {
        let env = ["HOME": "/home/p", "XDG_DATA_HOME": "/x/data", "XDG_CONFIG_HOME": "/x/config", "DOSETAP_DATA_DIR": "/d"]
        #expect(DataPaths.resolve(dataDirectory: "/flag", environment: env).dataDirectory.path == "/flag")
        #expect(DataPaths.resolve(environment: env).dataDirectory.path == "/d")
        var e = env
        e["DOSETAP_DATA_DIR"] = nil
        #expect(DataPaths.resolve(environment: e).dataDirectory.path == "/x/data/dosetap")
        #expect(DataPaths.resolve(environment: e).configFile.path == "/x/config/dosetap/config.toml")
        // A relative XDG path is invalid by the spec and ignored.
        e["XDG_DATA_HOME"] = "relative"
        e["XDG_CONFIG_HOME"] = ""
        #expect(DataPaths.resolve(environment: e).dataDirectory.path == "/home/p/.local/share/dosetap")
        #expect(DataPaths.resolve(environment: e).configFile.path == "/home/p/.config/dosetap/config.toml")
    }
}
