import Foundation
import Subprocess

/// A private `dbus-daemon` for one test, optionally with a python-dbusmock server on it.
///
/// Runs `body` while the daemon (and mock) run; both are killed afterwards. Uses Debian's
/// `/usr/bin/python3` (the one with python3-dbusmock), not whatever python3 is first on PATH.
public enum PrivateBus {
    public struct Bus: Sendable {
        /// The address to connect to (`unix:path=…`).
        public var address: String
    }

    public static func run<R: Sendable>(mockTemplate: String? = nil, system: Bool = false,
                                        _ body: @Sendable (Bus) async throws -> R) async throws -> R {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let configFile = dir.appendingPathComponent("bus.conf")
        // A bus anyone may use and own names on: the mock needs to own org.freedesktop.Notifications or org.bluez.
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>\(system ? "system" : "session")</type>
              <listen>unix:path=\(dir.path)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
                <allow user="*"/>
              </policy>
            </busconfig>
            """.write(to: configFile, atomically: true, encoding: .utf8)
        let address = "unix:path=\(dir.path)/bus"
        let result = try await Subprocess.run(
            .path("/usr/bin/dbus-daemon"), arguments: ["--config-file=\(configFile.path)", "--nofork", "--nopidfile"],
            input: .none, output: .discarded, error: .discarded
        ) { daemon -> R in
            defer { try? daemon.send(signal: .kill) }
            try await waitForSocket("\(dir.path)/bus")
            // The socket file appears before the daemon listens on it: wait until it answers.
            try await waitForName("org.freedesktop.DBus", address: address)
            guard let mockTemplate else { return try await body(Bus(address: address)) }
            var environment: [Environment.Key: String] = ["PATH": "/usr/bin:/bin"]
            environment[system ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS"] = address
            let mockResult = try await Subprocess.run(
                .path("/usr/bin/python3"),
                arguments: Arguments(["-m", "dbusmock"] + (system ? ["--system"] : []) + ["--template", mockTemplate]),
                environment: .custom(environment), input: .none, output: .discarded, error: .discarded
            ) { mock -> R in
                defer { try? mock.send(signal: .kill) }
                try await waitForName(mockName(mockTemplate), address: address)
                return try await body(Bus(address: address))
            }
            return mockResult.closureResult
        }
        return result.closureResult
    }

    static func mockName(_ template: String) -> String {
        switch template {
        case "notification_daemon": "org.freedesktop.Notifications"
        case "bluez5": "org.bluez"
        case "logind": "org.freedesktop.login1"
        default: template
        }
    }

    static func waitForSocket(_ path: String) async throws {
        for _ in 0..<200 {
            if FileManager.default.fileExists(atPath: path) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FixtureError("dbus-daemon did not create \(path)")
    }

    /// Waits until the mock owns its name, asking the bus with `dbus-send`.
    static func waitForName(_ name: String, address: String) async throws {
        for _ in 0..<300 {
            let r = try await Subprocess.run(
                .path("/usr/bin/dbus-send"),
                arguments: ["--bus=\(address)", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                            "org.freedesktop.DBus.NameHasOwner", "string:\(name)"],
                output: .string(limit: 4096), error: .discarded)
            if r.standardOutput.contains("boolean true") { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw FixtureError("the mock never took \(name)")
    }
}

extension PrivateBus {
    /// Kills the python-dbusmock server(s) on the bus at `address` (found by that address in their
    /// environment), as when bluetoothd dies.
    public static func killMock(address: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for pid in entries.compactMap(Int32.init) {
            guard let cmd = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                  String(decoding: cmd, as: UTF8.self).contains("dbusmock"),
                  let env = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                  String(decoding: env, as: UTF8.self).contains(address) else { continue }
            kill(pid, SIGKILL)
        }
    }

    /// Starts another mock server on the bus at `address` (bluetoothd coming back). Cancel the task and
    /// `killMock` to stop it.
    public static func startMock(template: String, system: Bool, address: String) -> Task<Void, any Error> {
        Task {
            var environment: [Environment.Key: String] = ["PATH": "/usr/bin:/bin"]
            environment[system ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS"] = address
            _ = try await Subprocess.run(.path("/usr/bin/python3"),
                                         arguments: Arguments(["-m", "dbusmock"] + (system ? ["--system"] : []) + ["--template", template]),
                                         environment: .custom(environment), input: .none, output: .discarded, error: .discarded)
        }
    }
}
