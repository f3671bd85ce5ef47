import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

/// #51 finding 4, on the real binary under faketime: a Dose 1 recorded while the clock was a day (or a century)
/// ahead, then the clock back. It no longer blocks the night; every face names it; it is discarded by a command
/// that is an event itself; and it stays set aside when its date comes.
@Suite("Entries dated in the future (the real binary, the clock a day and a century ahead)")
struct FutureEntriesCLITests {
    @Test("the clock a day ahead, then back: tonight's doses are recorded, the entry is named, flagged, discarded")
    func dayAhead() async throws {
        let cli = try CLI()
        // Recorded while the clock said the 16th (a day ahead of the real 15th).
        let ahead = try await cli.dose(["dose", "take"], at: "2026-01-16 22:30:00")
        #expect(ahead.exitCode == 0, "\(ahead.err)")

        // The clock back: tonight is idle, and the status names the entry with its discard command.
        let json = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:35:00").out)
        #expect(json["phase"] as? String == "idle")
        let aside = try #require(json["setAside"] as? [[String: Any]])
        #expect(aside.count == 1)
        #expect(aside.first?["kind"] as? String == "dose1")
        #expect(aside.first?["at"] as? String == "2026-01-16T22:30:00-05:00")
        let id = try #require(aside.first?["id"] as? String)
        let short = String(id.prefix(8)).lowercased()
        #expect(aside.first?["notice"] as? String
            == "Set aside: Dose 1 dated 2026-01-16 22:30 (23 h after now) — recorded while a clock was ahead; it does not count. Discard it: dosetap dose discard \(short)")
        // The one-shot front reads the same marks: the same bytes.
        let front = try await cli.run(["dose", "status", "--json"], fakeTime: "2026-01-15 22:35:00", tz: "America/New_York",
                                      binary: FrontTests.front)
        let full = try await cli.dose(["dose", "status", "--json"], at: "2026-01-15 22:35:00")
        #expect(front.out == full.out && front.exitCode == 0)

        let text = try await cli.dose(["dose", "status"], at: "2026-01-15 22:35:00")
        #expect(text.out.contains("Set aside: Dose 1 dated 2026-01-16 22:30 (23 h after now)"))
        #expect(text.out.contains("dosetap dose discard \(short)"))

        // Tonight's Dose 1 and Dose 2 are recorded as on any night (the finding: "Too early … in 1590 min").
        let d1 = try await cli.dose(["dose", "take"], at: "2026-01-15 22:40:00")
        #expect(d1.exitCode == 0, "\(d1.err)")
        #expect(d1.out.hasPrefix("Dose 1 taken at 22:40."))
        let d2 = try await cli.dose(["dose", "take"], at: "2026-01-16 01:20:00")
        #expect(d2.exitCode == 0, "\(d2.err)")
        #expect(d2.out.hasPrefix("Dose 2 taken at 01:20, 160 min after Dose 1."))

        // The integrity check names it; the CSV keeps the night and flags the entry.
        let check = try await cli.dose(["data", "unreadable"], at: "2026-01-16 08:00:00")
        #expect(check.out.contains("Every entry of the dose log can be read."))
        #expect(check.out.contains("Set aside: Dose 1 dated 2026-01-16 22:30"))
        let csv = try await cli.dose(["export", "csv"], at: "2026-01-16 08:00:00")
        #expect(csv.out == "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped,Flag\r\n"
            + "2026-01-15,22:40:00,01:20:00,160,true,false,\r\n"
            + "2026-01-16,22:30:00,,,,,set aside: dated in the future\r\n")

        // Its date comes: remembered as set aside (tonight's Take wrote the mark), it is not tomorrow's Dose 1.
        let tomorrow = try await cli.dose(["dose", "take"], at: "2026-01-16 23:00:00")
        #expect(tomorrow.exitCode == 0, "\(tomorrow.err)")
        #expect(tomorrow.out.hasPrefix("Dose 1 taken at 23:00."))

        // Discarded by its id (a command, recorded as an event); the notice ends; a second discard is refused.
        let refusedButton = try await cli.dose(["dose", "discard", "nothex!!"], at: "2026-01-16 23:01:00")
        #expect(refusedButton.exitCode == 2)
        #expect(refusedButton.err == "dosetap: Name the entry by its id (at least its first 8 hexadecimal digits, as dosetap dose status shows it)\n")
        let discard = try await cli.dose(["dose", "discard", short], at: "2026-01-16 23:01:00")
        #expect(discard.exitCode == 0, "\(discard.err)")
        #expect(discard.out == "Discarded: Dose 1 dated 2026-01-16 22:30. It stays in the log, marked discarded, and never counts.\n")
        let again = try await cli.dose(["dose", "discard", short], at: "2026-01-16 23:02:00")
        #expect(again.exitCode == 2)
        #expect(again.err == "dosetap: Dose 1 dated 2026-01-16 22:30 was already discarded\n")
        let after = try cli.json(try await cli.dose(["dose", "status", "--json"], at: "2026-01-16 23:03:00").out)
        #expect((after["setAside"] as? [Any])?.isEmpty == true)
        #expect(after["phase"] as? String == "waiting")
        #expect(after["dose1At"] as? String == "2026-01-16T23:00:00-05:00")
        // Nothing was deleted: every entry is still in the file, the discard one of them.
        #expect(try await cli.sqlite("SELECT kind FROM dose_event ORDER BY seq") == "dose1\ndose1\ndose2\ndose1\ndiscard\n")
        let flagged = try await cli.dose(["export", "csv"], at: "2026-01-17 08:00:00")
        #expect(flagged.out.contains("2026-01-16,22:30:00,,,,,discarded: dated in the future\r\n"))
        // A counted dose cannot be discarded: it is undone (within 5 s) instead.
        let counted = try await cli.dose(["dose", "discard", String(try #require((after["lastAction"] as? [String: Any])?["id"] as? String).prefix(8))],
                                         at: "2026-01-16 23:04:00")
        #expect(counted.exitCode == 2)
        #expect(counted.err.contains("is not dated in the future: only an entry set aside can be discarded"))
    }

    @Test("the clock a century ahead: the entry (2126) never blocks, and the agent-free log stays whole")
    func centuryAhead() async throws {
        let cli = try CLI()
        let ahead = try await cli.dose(["dose", "take"], at: "2126-01-15 22:30:00")
        #expect(ahead.exitCode == 0, "\(ahead.err)")
        let d1 = try await cli.dose(["dose", "take"], at: "2026-01-15 22:40:00")
        #expect(d1.exitCode == 0, "\(d1.err)")
        #expect(d1.out.hasPrefix("Dose 1 taken at 22:40."))
        let status = try await cli.dose(["dose", "status"], at: "2026-01-15 22:41:00")
        #expect(status.out.contains("Set aside: Dose 1 dated 2126-01-15 22:30 (100 years after now)"), "\(status.out)")
        #expect(status.out.contains("Night of 2026-01-15: waiting"))
        let csv = try await cli.dose(["export", "csv", "--last", "30d"], at: "2026-01-16 08:00:00")
        #expect(csv.out.hasSuffix("2126-01-15,22:30:00,,,,,set aside: dated in the future\r\n"), "\(csv.out)")
        // A clear range in the past shows neither.
        let past = try await cli.dose(["export", "csv", "--from", "2025-01-01", "--to", "2025-12-31"], at: "2026-01-16 08:00:00")
        #expect(past.out == "Date,Dose1Time,Dose2Time,Interval,OnTime,Skipped\r\n")
    }
}
