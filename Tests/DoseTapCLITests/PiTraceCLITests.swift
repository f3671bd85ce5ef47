import DoseTapCore
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// A Raspberry Pi 4's real rundown on a UPS HAT (`../shared/traces/raspberry-pi-4-ups.csv`: capacity only, every
/// 5 s) as the agent's history, read by `dosetap battery` on the capacity-only UPS battery (a umockdev recording of
/// such a HAT). scripts/test-arm64.sh runs it on the arm64 binary under qemu-user with the amd64 build as
/// `DOSETAP_BIN_REFERENCE`: both must give the same answer, number for number.
@Suite("the Raspberry Pi UPS's real rundown through the command line (the real binary)")
struct PiTraceCLITests {
    static let now = "2026-05-04 21:00:00"
    static let nowEpoch: TimeInterval = 1_777_928_400  // 2026-05-04 21:00:00 UTC

    @Test("half an hour of the Pi UPS trace as history: the drain follows the trace, the forecast follows the drain, and a reference build agrees")
    func piUpsRundown() async throws {
        let tracePath = Fixtures.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/traces/raspberry-pi-4-ups.csv")
        guard let text = try? String(contentsOf: tracePath, encoding: .utf8) else {
            Issue.record("the real traces are missing: \(tracePath.path) (../shared beside the checkout)")
            return
        }
        let trace = try BatteryTrace.parse(text)
        let cli = try CLI()
        let first = try cli.json(try await cli.run(["battery", "--json"], scenario: "capacity-only-ups", fakeTime: Self.now).out)
        let level = try #require((first["system"] as? [String: Any])?["level"] as? Int)

        // The half hour of the trace that ends halfway through its rundown (its first minutes are the HAT's gauge
        // settling, 14 % in 10 minutes), moved in time to end now and in level to end where the HAT's recording
        // stands: the drain, the trace's slope, is untouched.
        let end = trace.readings.count / 2
        let window = trace.readings[...end].filter { trace.readings[end].at.timeIntervalSince($0.at) <= 1_800 }
        #expect(window.count > 300, "a half hour every 5 s: \(window.count) readings")
        let shift = Self.nowEpoch - trace.readings[end].at.timeIntervalSince1970
        let offset = Double(level) - trace.readings[end].level
        let repo = BatterySampleRepository(database: try DoseTapDatabase(directory: cli.dataDirectory))
        for reading in window {
            try repo.append(BatterySample(at: reading.at.addingTimeInterval(shift), level: reading.level + offset, onAC: false,
                                          status: .discharging))
        }
        let traceDrain = (window.first!.level - window.last!.level) / (window.last!.at.timeIntervalSince(window.first!.at) / 3_600)
        #expect(traceDrain > 5 && traceDrain < 40, "the trace's own drain over the window: \(traceDrain) %/h")

        let args = ["battery", "--alarm", "06:30", "--json"]
        let result = try await cli.run(args, scenario: "capacity-only-ups", fakeTime: Self.now)
        #expect(result.exitCode == 0, "\(result.err)")
        let forecast = try cli.json(result.out)
        #expect(forecast["drainSource"] as? String == "history", "\(result.out)")
        let drain = try #require(forecast["drainPercentPerHour"] as? Double, "\(result.out)")
        #expect(abs(drain - traceDrain) <= traceDrain * 0.25, "history drain \(drain) %/h against the trace's \(traceDrain) %/h")
        // 9.5 hours to 06:30 at that drain empties the HAT's battery long before the alarm.
        #expect(forecast["risk"] as? String == "critical", "\(result.out)")
        #expect(forecast["predictedLevel"] as? Int == 0, "\(result.out)")

        // The same question to another build of the same source (the amd64 one, when this is the arm64 one).
        if let reference = ProcessInfo.processInfo.environment["DOSETAP_BIN_REFERENCE"] {
            let other = try await cli.run(args, scenario: "capacity-only-ups", fakeTime: Self.now, binary: reference)
            #expect(other.exitCode == 0, "\(other.err)")
            #expect(other.out == result.out, "the reference build (\(reference)) answers otherwise:\n\(other.out)\nthis one:\n\(result.out)")
        }
    }
}
