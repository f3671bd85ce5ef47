import DoseTapLinux
import DoseTapTesting
import Foundation
import Subprocess
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// #25 finding 7, end to end: a transmitter rotating through random addresses, as bluetoothd reports it on the
/// system bus (the scripted BlueZ announces 100,000 devices nobody added, each with a BTHome press), must not
/// grow the running agent: the per-address structures are bounded (ButtonInterpreter, BlueZClient's address
/// book) and so is the log. Before the fix each address cost about 200 bytes for ever (+58 MB after 280,000).
@Suite("dosetap agent: 100,000 strangers' addresses on the scripted BlueZ", .serialized, .timeLimit(.minutes(8)))
struct StrangerFloodTests {
    /// CPU time the process has used (utime + stime, in clock ticks).
    static func cpuTicks(_ pid: Int32) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// Waits until the agent has taken in what was sent: its CPU time stands still for a second (at most 180 s).
    static func settle(_ pid: Int32) async throws {
        var last = cpuTicks(pid)
        var still = 0
        let deadline = Date().addingTimeInterval(180)
        while still < 2, Date() < deadline {
            try await Task.sleep(for: .milliseconds(500))
            let now = cpuTicks(pid)
            still = now == last ? still + 1 : 0
            last = now
        }
    }

    @Test("RSS, descriptors and threads stay flat from 50,000 to 100,000 addresses; the log says it in a few lines; the agent still works")
    func hundredThousand() async throws {
        let cli = try CLI()
        // A button of the owner's, so the agent listens to BlueZ.
        #expect(try await cli.run(["button", "add", AlarmAgentTests.shelly, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)
        try await PrivateBus.run(mockTemplate: "bluez5", system: true) { system in
            let bluez = try DBusConnection(bus: .address(system.address))
            try await bluez.addMockBlueZDevice(AlarmAgentTests.shelly, alias: "SBBT-002C")
            for m in MockBlueZGATT.methods {
                _ = try await bluez.call(destination: "org.bluez", path: MockBlueZGATT.path, interface: "org.freedesktop.DBus.Mock", member: "AddMethod",
                                         arguments: [.string(MockBlueZGATT.interface), .string(m.name), .string(m.inSignature),
                                                     .string(m.outSignature), .string(m.code)])
            }
            @Sendable func strangers(from start: Int, count: Int) async throws {
                for chunk in stride(from: start, to: start + count, by: 2_000) {
                    _ = try await bluez.call(destination: "org.bluez", path: MockBlueZGATT.path, interface: MockBlueZGATT.interface,
                                             member: "Strangers", arguments: [.uint32(UInt32(chunk)), .uint32(2_000)])
                }
            }
            try await PrivateBus.run(mockTemplate: "notification_daemon") { session in
            let log = LineBuffer()
            let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
            let result = try await Subprocess.run(
                exe, arguments: Arguments(argv),
                environment: cli.environment(extra: ["DBUS_SYSTEM_BUS_ADDRESS": system.address, "DBUS_SESSION_BUS_ADDRESS": session.address]),
                input: .none, output: .discarded, error: .sequence
            ) { execution in
                let pid = execution.processIdentifier.value
                let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                #expect(await log.wait(for: "listening to BlueZ", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
                try await Self.settle(pid)
                let start = try #require(SoakTests.Footprint(pid: pid))
                // The first half fills every bounded structure (and malloc's arenas); the second half must add nothing.
                try await strangers(from: 0, count: 50_000)
                try await Self.settle(pid)
                let half = try #require(SoakTests.Footprint(pid: pid))
                try await strangers(from: 50_000, count: 50_000)
                try await Self.settle(pid)
                let end = try #require(SoakTests.Footprint(pid: pid))
                print("strangers: \(start) → 50,000 addresses: \(half) → 100,000: \(end)")
                #expect(end.rssKB - half.rssKB < 4 * 1024, "RSS grew \(end.rssKB - half.rssKB) kB over the second 50,000 addresses")
                #expect(end.descriptors <= half.descriptors + 2, "\(half) → \(end)")
                #expect(end.threads <= half.threads + 2, "\(half) → \(end)")
                // The agent took them in: a few lines about strangers, not one per address.
                let lines = log.all.filter { $0.contains("ignored") && $0.contains("BTHome advert") }
                #expect(!lines.isEmpty && lines.count <= 21, "\(lines.count) lines about strangers")
                // And it still acts on its own button.
                let pressed = try await ButtonScanAndTestCLITests.advertising(bus: system.address, address: AlarmAgentTests.shelly, packet: 9) {
                    await log.wait(for: "button action recorded", timeout: 20)
                }
                #expect(pressed != nil, "the owner's button after the flood: \(log.all.suffix(20).joined(separator: "\n"))")
                try execution.send(signal: .terminate)
                _ = try? await reader.value
            }
            #expect(result.terminationStatus == .exited(0))
            }
        }
    }
}
