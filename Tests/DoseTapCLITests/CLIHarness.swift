import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Subprocess
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// Runs the real `dosetap` binary in a private home (temporary XDG directories), optionally under
/// `umockdev-run` with a recorded power-supply scenario and under `faketime`.
struct CLI {
    static var binary: String {
        ProcessInfo.processInfo.environment["DOSETAP_BIN"]
            ?? Fixtures.packageRoot.appendingPathComponent(".build/debug/dosetap").path
    }

    /// The binary run under faketime. scripts/sanitize.sh points it at the plain build: libfaketime's
    /// preload deadlocks a sanitizer-instrumented process at start (its clock_gettime is called before
    /// it is initialised).
    static var fakeTimeBinary: String {
        ProcessInfo.processInfo.environment["DOSETAP_BIN_FAKETIME"] ?? binary
    }

    let home: URL

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    var dataDirectory: URL { home.appendingPathComponent("data/dosetap") }
    var configFile: URL { home.appendingPathComponent("config/dosetap/config.toml") }

    func writeConfig(_ text: String) throws {
        try FileManager.default.createDirectory(at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: configFile)
    }

    struct Result {
        var status: TerminationStatus
        var out: String
        var err: String
        var exitCode: Int32? { if case .exited(let c) = status { return c } else { return nil } }
    }

    /// Writes `upower/UPower.conf` (and drop-ins) in the private home: the machine's UPower configuration.
    func writeUPower(_ main: String?, dropIns: [String: String] = [:]) throws {
        let dir = home.appendingPathComponent("upower/UPower.conf.d")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        if let main { try main.write(to: home.appendingPathComponent("upower/UPower.conf"), atomically: true, encoding: .utf8) }
        for (name, text) in dropIns { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
    }

    /// The environment of a person's shell, without the test runner's preload libraries.
    /// Where no wake helper listens (the tests' default `DOSETAP_WAKE_SOCKET`).
    static let noWakeHelper = "/nonexistent/dosetap-wake.sock"

    func environment(tz: String = "UTC", extra: [String: String] = [:]) -> Environment {
        var env: [Environment.Key: String] = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home.path,
            "TZ": tz,
            "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "NO_COLOR": "1",
            // UPower's configuration from the private home (absent unless a test writes it: 2 %), never
            // the machine's /etc/UPower, so the power-off level is the same on every machine.
            "DOSETAP_UPOWER_DIR": home.appendingPathComponent("upower").path,
            // ALSA's null device: sounds play (to nowhere) on a machine with no sound card, and `alarm add` says
            // nothing about one (#32). The tests of that warning set it empty.
            "DOSETAP_AUDIO_DEVICE": "null",
            // The wake helper (#28): none, whatever the machine running the tests has installed
            // (WakeHelperCLITests starts its own).
            "DOSETAP_WAKE_SOCKET": CLI.noWakeHelper,
        ]
        // Under scripts/sanitize.sh the binary is built with a sanitizer: it gets the same options as the
        // test process (LeakSanitizer off, halt on the first report).
        for key in ["ASAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[key] { env[Environment.Key(stringLiteral: key)] = value }
        }
        for (k, v) in extra { env[Environment.Key(stringLiteral: k)] = v }
        return .custom(env)
    }

    /// `binary` runs another build than `DOSETAP_BIN` (a reference to compare with).
    func command(_ args: [String], scenario: String?, fakeTime: String?, binary: String? = nil) -> (Executable, [String]) {
        var argv = [binary ?? (fakeTime == nil ? CLI.binary : CLI.fakeTimeBinary)] + args
        // "-f" with an absolute time freezes the clock: every run sees exactly that instant.
        if let fakeTime { argv = ["/usr/bin/faketime", "-f", fakeTime] + argv }
        if let scenario {
            // "ac-online" is a power-supply recording; "sound/no-sound-card" names a folder of hw-fixtures.
            let path = Fixtures.root.appendingPathComponent(scenario.contains("/") ? "\(scenario).umockdev" : "power_supply/\(scenario).umockdev").path
            argv = ["/usr/bin/umockdev-run", "-d", path, "--"] + argv
        }
        return (.path(FilePath(argv[0])), Array(argv.dropFirst()))
    }

    /// - Parameter inHome: run in the private home (a relative `--data-dir` then lands there, not in the checkout).
    func run(_ args: [String], scenario: String? = nil, fakeTime: String? = nil, tz: String = "UTC",
             env: [String: String] = [:], input: String? = nil, binary: String? = nil, inHome: Bool = false) async throws -> Result {
        let (exe, argv) = command(args, scenario: scenario, fakeTime: fakeTime, binary: binary)
        let r = try await Subprocess.run(exe, arguments: Arguments(argv), environment: environment(tz: tz, extra: env),
                                         workingDirectory: inHome ? FilePath(home.path) : nil,
                                         input: .string(input ?? ""),
                                         output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        return Result(status: r.terminationStatus, out: r.standardOutput, err: r.standardError)
    }

    /// A bash script in the same private home, with `$DOSETAP` naming the binary: for redirections the
    /// harness cannot make (`> /dev/full`, a closed stdout, a reader that has gone).
    func shell(_ script: String, tz: String = "UTC", env: [String: String] = [:]) async throws -> Result {
        var extra = env
        extra["DOSETAP"] = CLI.binary
        let r = try await Subprocess.run(.path("/bin/bash"), arguments: ["-c", script], environment: environment(tz: tz, extra: extra),
                                         output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        return Result(status: r.terminationStatus, out: r.standardOutput, err: r.standardError)
    }

    /// The real wake helper (`dosetap wake-helper`) on a socket in the private home, serving the users named in a
    /// folder there (none yet: write a file named after a uid to let that user in). Ready when it returns.
    func startWakeHelper() throws -> (process: Process, socket: String, users: URL) {
        let socket = home.appendingPathComponent("wake.sock").path
        let users = home.appendingPathComponent("users")
        try FileManager.default.createDirectory(at: users, withIntermediateDirectories: true)
        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: CLI.binary)
        helper.arguments = ["wake-helper", "--socket", socket, "--users-directory", users.path, "--idle-exit", "0"]
        let log = Pipe()
        helper.standardError = log
        try helper.run()
        // Ready once it says so on its log.
        let first = String(decoding: log.fileHandleForReading.availableData, as: UTF8.self)
        guard first.hasPrefix("serving wake-ups on \(socket)") else {
            helper.terminate()
            throw FixtureError("the wake helper did not start: \(first)")
        }
        return (helper, socket, users)
    }

    /// sqlite3 on the database, behind the program's back.
    func sqlite(_ sql: String) async throws -> String {
        let r = try await Subprocess.run(.path("/usr/bin/sqlite3"), arguments: [dataDirectory.appendingPathComponent("dosetap.sqlite").path, sql],
                                         output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        return r.standardOutput + r.standardError
    }

    /// A dose command at a fake local time in New York (or `tz`).
    func dose(_ args: [String], at local: String, tz: String = "America/New_York", input: String? = nil) async throws -> Result {
        try await run(args, fakeTime: local, tz: tz, input: input)
    }

    func json(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw FixtureError("not a JSON object: \(text)")
        }
        return object
    }
}

/// A `$NOTIFY_SOCKET` stand-in: a datagram socket that collects what the agent tells systemd.
final class NotifySocket: @unchecked Sendable {
    let path: String
    private let fd: Int32

    init(directory: URL) throws {
        path = directory.appendingPathComponent("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, rc == 0 else { throw FixtureError("cannot bind \(path)") }
    }

    deinit { close(fd) }

    /// The next message, or nil after `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }
}

extension DBusConnection {
    /// On python-dbusmock's BlueZ: the adapter hci0 ("bedside-pi") and a device on it.
    func addMockBlueZDevice(_ address: String, alias: String) async throws {
        _ = try await call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddAdapter",
                           arguments: [.string("hci0"), .string("bedside-pi")])
        _ = try await call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddDevice",
                           arguments: [.string("hci0"), .string(address), .string(alias)])
    }

    /// Sets a mock BlueZ device's BTHome service data (an advert, as bluetoothd reports it).
    func sendBTHome(_ address: String, _ bytes: [UInt8]) async throws {
        _ = try await call(destination: "org.bluez", path: "/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_"),
                           interface: "org.freedesktop.DBus.Properties", member: "Set",
                           arguments: [.string("org.bluez.Device1"), .string("ServiceData"),
                                       .variant(.vardict([BLEAdvert.bthomeUUID: .bytes(bytes)]))])
    }
}
