import DoseTapTesting
import Foundation
import Subprocess
import Testing

/// libmosquitto, libudev and libdbus are loaded at their first use, not at start-up (#29, Sources/CMosquitto,
/// Sources/CUdev, Sources/CDBusLazy): a one-shot command maps only what it uses, and a library that cannot be
/// loaded is said in one line — an agent whose household cannot load libmosquitto runs on without the household;
/// nothing ever calls into a library it lacks.
@Suite("dosetap: libmosquitto, libudev and libdbus only when needed (the real binary)")
struct LazyLibraryTests {
    /// The shared objects the dynamic loader opened for one run (`LD_DEBUG=libs`: "calling init: PATH").
    func loadedLibraries(_ r: CLI.Result) -> [String] {
        r.err.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "calling init: ") else { return nil }
            return String(line[range.upperBound...])
        }
    }

    /// What each one-shot command must not map at start-up: the broker's libraries always; libdbus unless it
    /// talks to a bus (none does); libudev never — the command line reads the battery from sysfs (#29,
    /// `SysfsPowerSupplySource`; `alarm list` and `status` read it for the at-risk nudge).
    static let oneShots: [(args: [String], unwanted: [String])] = [
        (["dose", "status", "--json"], ["libmosquitto", "libssl", "libcrypto", "libdbus-1", "libudev"]),
        (["predict", "--level", "55", "--drain", "6", "--hours", "7", "--json"],
         ["libmosquitto", "libssl", "libcrypto", "libdbus-1", "libudev"]),
        (["alarm", "list", "--json"], ["libmosquitto", "libssl", "libcrypto", "libdbus-1", "libudev"]),
        (["status", "--format", "waybar"], ["libmosquitto", "libssl", "libcrypto", "libdbus-1", "libudev"]),
        (["battery", "--json"], ["libmosquitto", "libssl", "libcrypto", "libdbus-1", "libudev"]),
    ]

    @Test("a one-shot command maps none of the libraries it does not use", arguments: 0..<oneShots.count)
    func oneShotMapsOnlyWhatItUses(index: Int) async throws {
        let (args, unwantedNames) = Self.oneShots[index]
        let cli = try CLI()
        let r = try await cli.run(args, env: ["LD_DEBUG": "libs"])
        #expect(r.exitCode == 0, "\(r.err)")
        let libraries = loadedLibraries(r)
        // The debug output was there to read: the loader named the libraries it did open.
        #expect(libraries.contains { $0.contains("libsqlite3.so") }, "\(r.err)")
        let unwanted = libraries.filter { path in unwantedNames.contains { path.contains($0 + ".so") } }
        #expect(unwanted.isEmpty, "\(args.joined(separator: " ")): loaded at start-up: \(unwanted)")
    }

    /// A folder holding a file that is not a shared object under `soname`, for LD_LIBRARY_PATH.
    func brokenLibrary(_ soname: String, in cli: CLI) throws -> String {
        let broken = cli.home.appendingPathComponent("broken-lib")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("not an ELF file".utf8).write(to: broken.appendingPathComponent(soname))
        return broken.path
    }

    @Test("libudev that cannot be loaded: the agent (which follows the battery through udev) says so in one line and fails; the command line reads the battery without it")
    func udevCannotLoad() async throws {
        let cli = try CLI()
        let broken = try brokenLibrary("libudev.so.1", in: cli)
        let r = try await cli.run(["agent"], env: ["LD_LIBRARY_PATH": broken])
        #expect(r.exitCode == 1, "\(r.out)\(r.err)")
        let last = r.err.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("dosetap: cannot use udev: cannot load libudev.so.1 (install libudev1): "), "\(r.err)")
        #expect(r.err.split(separator: "\n").filter { $0.hasPrefix("dosetap: ") }.count == 1, "\(r.err)")
        // ...and the command line's battery, and a command that reads no device, do not notice.
        for args in [["battery", "--json"], ["dose", "status", "--json"], ["alarm", "list", "--json"]] {
            let ok = try await cli.run(args, env: ["LD_LIBRARY_PATH": broken])
            #expect(ok.exitCode == 0, "\(args): \(ok.err)")
        }
    }

    @Test("libdbus that cannot be loaded: a command that needs the bus says so and fails")
    func dbusCannotLoad() async throws {
        let cli = try CLI()
        let r = try await cli.run(["button", "scan", "--seconds", "1"],
                                  env: ["LD_LIBRARY_PATH": try brokenLibrary("libdbus-1.so.3", in: cli)])
        #expect(r.exitCode != 0, "\(r.out)\(r.err)")
        #expect(r.err.contains("cannot use D-Bus: cannot load libdbus-1.so.3 (install libdbus-1-3): "), "\(r.err)")
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
        let broken = try brokenLibrary("libmosquitto.so.1", in: cli)
        let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
        let log = LineBuffer()
        let extra = ["DOSETAP_AUDIO_DEVICE": "null", "LD_LIBRARY_PATH": broken,
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
