import DoseTapStore
import DoseTapTesting
import Foundation
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The backup cascade (#12) with three real `dosetap agent` processes — separate homes and databases — on
/// a real mosquitto on loopback and the real clock (faketime breaks running agents). The owner's alarm is
/// set for the next minute of a zone whose offset has seconds (`AlarmAgentTests.zone`), so it falls due
/// 90 to 150 s after the test starts; its first backup slot is two real minutes later.
@Suite("dosetap agent: the household cascade across real processes", .serialized, .timeLimit(.minutes(8)))
struct HouseholdAgentTests {
    func config(_ device: String, port: Int) -> String {
        """
        [household]
        name = "Jen's family"
        device = "\(device)"

        [mqtt]
        url = "mqtt://127.0.0.1:\(port)"
        """
    }

    @Test("owner killed before T: bedroom-pi rings at T+2; household status shows it; Stop on bedroom-pi reaches kitchen")
    func ownerDeadBeforeT() async throws {
        try await PrivateBroker.run { broker in
            let owner = try CLI(), bedroom = try CLI(), kitchen = try CLI()
            try owner.writeConfig(config("jen-laptop", port: broker.port))
            try bedroom.writeConfig(config("bedroom-pi", port: broker.port))
            try kitchen.writeConfig(config("kitchen", port: broker.port))
            let (tz, zone, firstMinute) = AlarmAgentTests.zone(lead: 30)
            // 90 s or more ahead: three agents must start and hear the plan before it (a fresh-clone run, with
            // the whole suite starting beside it, took over 28 s).
            var minute = firstMinute
            while minute.timeIntervalSinceNow < 90 { minute = minute.addingTimeInterval(60) }
            let hhmm = AlarmAgentTests.hourMinute(minute, zone)
            #expect(try await owner.run(["alarm", "add", hhmm, "--label", "Wake"], tz: tz).exitCode == 0)
            for target in ["device:bedroom-pi", "device:kitchen"] {
                #expect(try await owner.run(["alarm", "backup", "1", "add", target], tz: tz).exitCode == 0)
            }
            #expect(try await owner.run(["alarm", "backup", "1", "on"], tz: tz).exitCode == 0)
            let extra = ["DOSETAP_AUDIO_DEVICE": "null", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent",
                         "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"]
            let bedroomLog = LineBuffer(), kitchenLog = LineBuffer(), ownerLog = LineBuffer()

            /// Runs `dosetap agent` of `cli` while `body` runs; `body` gets a way to send the agent a signal.
            func agent(_ cli: CLI, _ log: LineBuffer, _ body: (_ signal: (Signal) throws -> Void) async throws -> Void) async throws -> TerminationStatus {
                let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
                return try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(tz: tz, extra: extra),
                                                input: .none, output: .discarded, error: .sequence) { execution in
                    let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                    try await body { try execution.send(signal: $0) }
                    _ = try? await reader.value
                }.terminationStatus
            }

            let bedroomStatus = try await agent(bedroom, bedroomLog) { signalBedroom in
                let kitchenStatus = try await agent(kitchen, kitchenLog) { signalKitchen in
                    _ = try await agent(owner, ownerLog) { signalOwner in
                        #expect(await bedroomLog.wait(for: "household plan", timeout: 20) != nil, "\(bedroomLog.all.joined(separator: "\n"))")
                        #expect(await kitchenLog.wait(for: "household plan", timeout: 20) != nil)
                        try #require(Date() < minute.addingTimeInterval(-2), "too slow to kill the owner before its alarm: the test proves nothing")
                        // The owner's machine dies (no goodbye: the broker sends its last will).
                        try signalOwner(.kill)
                    }
                    #expect(await bedroomLog.wait(for: "backup alarm ringing", timeout: minute.addingTimeInterval(120).timeIntervalSinceNow + 10) != nil,
                            "\(bedroomLog.all.joined(separator: "\n"))")
                    let late = Date().timeIntervalSince(minute.addingTimeInterval(120))
                    #expect(late > -0.5 && late < 3, "rang \(late) s after T+2")
                    #expect(kitchenLog.count("backup alarm ringing") == 0)

                    let status = try await bedroom.run(["household", "status", "--json"], tz: tz)
                    #expect(status.exitCode == 0, "\(status.err)")
                    let json = try bedroom.json(status.out)
                    #expect((json["broker"] as? [String: Any])?["connected"] as? Bool == true)
                    let peers = json["peers"] as? [[String: Any]] ?? []
                    #expect(peers.contains { $0["device"] as? String == "jen-laptop" && $0["online"] as? Bool == false }, "\(status.out)")
                    #expect(peers.contains { $0["device"] as? String == "kitchen" && $0["online"] as? Bool == true }, "\(status.out)")
                    let cascades = json["cascades"] as? [[String: Any]] ?? []
                    #expect(cascades.count == 1 && cascades.first?["owner"] as? String == "jen-laptop", "\(status.out)")
                    let text = try await bedroom.run(["household", "status"], tz: tz)
                    #expect(text.out.contains("Broker: mqtt://127.0.0.1:\(broker.port) — connected since"), "\(text.out)")
                    #expect(text.out.contains("jen-laptop") && text.out.contains("offline"), "\(text.out)")

                    let stop = try await bedroom.run(["alarm", "stop"], tz: tz)
                    #expect(stop.exitCode == 0 && stop.out == "Stopped the backup alarm of jen-laptop (\(hhmm), \"Wake\"): the household hears it.\n",
                            "\(stop.out) \(stop.err)")
                    #expect(await kitchenLog.wait(for: "household stop", timeout: 10) != nil, "\(kitchenLog.all.joined(separator: "\n"))")
                    try signalKitchen(.terminate)
                }
                #expect(kitchenStatus == .exited(0))
                try signalBedroom(.terminate)
            }
            #expect(bedroomStatus == .exited(0))
            let slots = try HouseholdRepository(database: try DoseTapDatabase(directory: bedroom.dataDirectory)).slots()
            #expect(slots.values.filter { $0 == .rang }.count == 1, "bedroom-pi rang its slot once")
            let none = try await kitchen.run(["household", "status"], tz: tz)
            #expect(none.exitCode == 1 && none.err.contains("no agent is running"), "\(none.err)")
        }
    }
}
