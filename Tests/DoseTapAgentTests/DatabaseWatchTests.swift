@testable import DoseTapAgent
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import Testing

/// The agent's watcher of its data folder (`AgentWiring.watchDatabase`): its planners re-read the database after
/// every signal, so the agent's own battery sample (once a minute on battery, published as an event) signals
/// none of them (#29), while what may change a plan does — the command line's dose, the agent's own alarm.
@Suite("The agent's database watcher", .timeLimit(.minutes(1)))
struct DatabaseWatchTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func folder() throws -> DataPaths {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-watch-\(UUID().uuidString)")
        return DataPaths(dataDirectory: dir, configFile: dir.appendingPathComponent("config.toml"))
    }

    /// Whether `write` signals a subscriber of a watcher made for it (the watcher is gone when this returns).
    func signals(_ paths: DataPaths, _ database: DoseTapDatabase, _ write: () throws -> Void) async throws -> Bool {
        var watcher = AgentWiring.watchDatabase(paths: paths, database: database, logger: Logger(label: "test"))
        let changes = try #require(watcher).changes()
        try write()
        // The events are queued before the write returns, and decided before this returns.
        _ = watcher?.generation()
        watcher = nil
        var heard = false
        for await _ in changes { heard = true }
        return heard
    }

    @Test("the agent's battery samples signal no planner; the command line's dose and the agent's alarm do")
    func ownSamplesAreQuiet() async throws {
        let paths = try folder()
        let database = try DoseTapDatabase(directory: paths.dataDirectory)
        let samples = BatterySampleRepository(database: database)
        #expect(try await !signals(paths, database) {
            try samples.append(BatterySample(at: t0, level: 50, onAC: false, status: .discharging))
            try samples.append(BatterySample(at: t0.addingTimeInterval(60), level: 49, onAC: false, status: .discharging))
            try samples.appendLevel(source: "button:bedside", level: 80, at: t0)
        })
        #expect(try await signals(paths, database) {
            let cli = DoseRepository(database: try DoseTapDatabase(directory: paths.dataDirectory))
            _ = try cli.submit(DoseInput(command: .take(confirmLate: false), source: .cli, issuedAt: t0), now: t0, timeZone: .gmt)
        })
        #expect(try await signals(paths, database) {
            _ = try AlarmRepository(database: database).add(try Alarm(id: 0, time: try TimeOfDay(parsing: "07:00"), repetition: .daily, enabled: true), now: t0)
        })
        // A sample after them: quiet again.
        #expect(try await !signals(paths, database) {
            try samples.append(BatterySample(at: t0.addingTimeInterval(120), level: 48, onAC: false, status: .discharging))
        })
    }
}
