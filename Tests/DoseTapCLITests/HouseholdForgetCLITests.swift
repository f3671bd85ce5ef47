import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// `dosetap household forget DEVICE` (#51 finding 7) through the real binary.
@Suite("dosetap household forget (the real binary)")
struct HouseholdForgetCLITests {
    @Test("forget drops the device's occurrences here and remembers it is forgotten; this device, a bad name and a missing argument are one-line errors")
    func forget() async throws {
        let cli = try CLI()
        try cli.writeConfig("[household]\nname = \"Jen's family\"\ndevice = \"laptop\"\n")
        let database = try DoseTapDatabase(directory: cli.dataDirectory)
        let repository = HouseholdRepository(database: database)
        let now = Date()
        for (owner, minutes) in [("old-pi", 60.0), ("old-pi", 1500), ("kitchen", 60)] {
            try repository.applyPlan(owner: owner, alarmID: Int(minutes), KnownPlan(label: "Wake", time: "05:00",
                                     occurrences: [Int64(now.timeIntervalSince1970 + minutes * 60)], targets: [.device("laptop")]), now: now)
        }
        let forgot = try await cli.run(["household", "forget", "old-pi"])
        #expect(forgot.exitCode == 0, "\(forgot.err)")
        #expect(forgot.out == """
            Forgot old-pi: 2 planned occurrences dropped here; its plans are ignored until it is heard online again.
            The broker may still keep its plans: clear them as docs/household.md says (they expire within 8 days).

            """, "\(forgot.out)")
        #expect(try repository.occurrences().map(\.key.owner) == ["kitchen"], "kitchen's plan is kept")
        #expect(try repository.forgotten().keys.sorted() == ["old-pi"])
        let again = try await cli.run(["household", "forget", "old-pi"])
        #expect(again.out.hasPrefix("Forgot old-pi (again): 0 planned occurrences dropped here;"), "\(again.out)")

        for (args, error) in [
            (["household", "forget", "laptop"], "'laptop' is this device ([household] device): forget it on the other devices of the household"),
            (["household", "forget", "old pi\u{1b}[2J"], "invalid device name 'old pi\\x1b[2J'"),
        ] {
            let refused = try await cli.run(args)
            #expect(refused.exitCode != 0)
            #expect(refused.err.hasPrefix("dosetap: \(error)"), "\(refused.err)")
            #expect(refused.err.split(separator: "\n").count == 1, "one line: \(refused.err)")
        }
        let missing = try await cli.run(["household", "forget"])
        #expect(missing.exitCode != 0 && missing.err.contains("Missing expected argument '<device>'"), "\(missing.err)")
        #expect(try repository.forgotten().keys.sorted() == ["old-pi"], "nothing else was forgotten")
    }
}
