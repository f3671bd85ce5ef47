import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// libmosquitto is loaded when the first MQTT client is made, not at start-up (#29, Sources/CMosquitto):
/// a one-shot command maps neither it nor the libssl and libcrypto it brings, and an agent whose household
/// cannot load it says why and runs on without the household — it never calls into a library it lacks.
@Suite("dosetap: libmosquitto only when the household needs it (the real binary)")
struct LazyLibraryTests {
    /// The shared objects the dynamic loader opened for one run (`LD_DEBUG=libs`: "calling init: PATH").
    func loadedLibraries(_ r: CLI.Result) -> [String] {
        r.err.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "calling init: ") else { return nil }
            return String(line[range.upperBound...])
        }
    }

    @Test("a one-shot command maps no libmosquitto, libssl or libcrypto", arguments: [
        ["dose", "status", "--json"], ["alarm", "list", "--json"], ["status", "--format", "waybar"],
    ])
    func oneShotMapsNoBroker(args: [String]) async throws {
        let cli = try CLI()
        let r = try await cli.run(args, env: ["LD_DEBUG": "libs"])
        #expect(r.exitCode == 0, "\(r.err)")
        let libraries = loadedLibraries(r)
        // The debug output was there to read: the loader named the libraries it did open.
        #expect(libraries.contains { $0.contains("libsqlite3.so") }, "\(r.err)")
        let unwanted = libraries.filter { $0.contains("libmosquitto") || $0.contains("libssl") || $0.contains("libcrypto") }
        #expect(unwanted.isEmpty, "loaded at start-up: \(unwanted)")
    }

    @Test("an agent whose household cannot load libmosquitto logs why and runs on without the broker")
    func agentWithoutLibmosquitto() async throws {
        let cli = try CLI()
        try cli.writeConfig("""
            [household]
            name = "Jen's family"
            device = "jen-laptop"

            [mqtt]
            url = "mqtt://127.0.0.1:1"
            """)
        // A libmosquitto.so.1 that is not a shared object, first in the loader's path.
        let broken = cli.home.appendingPathComponent("broken-lib")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("not an ELF file".utf8).write(to: broken.appendingPathComponent("libmosquitto.so.1"))
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let log = LineBuffer()
        let extra = ["DOSETAP_AUDIO_DEVICE": "null", "LD_LIBRARY_PATH": broken.path,
                     "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"]
        let result = try await Subprocess.run(exe, arguments: Arguments(argv), environment: cli.environment(extra: extra),
                                              input: .none, output: .discarded, error: .sequence) { execution in
            let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
            let refused = await log.wait(for: "cannot load libmosquitto.so.1 (install libmosquitto1)", timeout: 30)
            #expect(refused != nil, "\(log.all.joined(separator: "\n"))")
            // ...and the rest of the agent runs: a dose on the command line is still seen.
            #expect(try await cli.run(["dose", "take"]).exitCode == 0)
            #expect(await log.wait(for: "night scheduled", timeout: 30) != nil, "\(log.all.joined(separator: "\n"))")
            try execution.send(signal: .terminate)
            _ = try? await reader.value
        }
        #expect(result.terminationStatus == .exited(0), "\(log.all.joined(separator: "\n"))")
        let line = log.all.first { $0.contains("cannot load libmosquitto.so.1") } ?? ""
        #expect(line.contains("the household broker is off: cannot use MQTT: "), "\(line)")
    }
}
