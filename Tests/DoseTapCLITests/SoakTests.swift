import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Subprocess
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// #25, "make it stay fixed": the real agent for a few minutes under a steady mix — a stranger's BLE adverts
/// on the mock BlueZ, dashboard requests on loopback, junk and peers' messages on a real mosquitto — while
/// three alarms fall due one minute apart. Its descriptors, threads and memory stay flat, and every alarm
/// plays its sound (a recording `pw-play` first on its PATH).
@Suite("Soak: a steady mix of adverts, dashboard traffic, broker messages and alarms", .serialized, .timeLimit(.minutes(8)))
struct SoakTests {
    static let stranger = "C4:7C:8D:6A:11:22"

    /// What the kernel says of a process: open descriptors, threads, resident memory (kB).
    struct Footprint: CustomStringConvertible {
        var descriptors: Int
        var threads: Int
        var rssKB: Int
        var description: String { "\(descriptors) fds, \(threads) threads, \(rssKB) kB" }

        init?(pid: Int32) {
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
            func field(_ name: String) -> Int? {
                status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                    .flatMap { Int($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
            }
            guard let threads = field("Threads"), let rss = field("VmRSS") else { return nil }
            descriptors = fds.count
            self.threads = threads
            rssKB = rss
        }
    }

    /// One plain HTTP request on loopback; true when an HTTP answer came back.
    static func request(port: Int, path: String) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let text = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard text.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == text.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var answer = [UInt8]()
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        return answer.starts(with: Array("HTTP/1.1 ".utf8))
    }

    @Test("descriptors, threads and memory flat; three alarms due meanwhile each play their sound")
    func steadyMix() async throws {
        let cli = try CLI()
        let port = try RawSocket.freePort()
        let player = cli.home.appendingPathComponent("player")
        try FileManager.default.createDirectory(at: player, withIntermediateDirectories: true)
        let plays = cli.home.appendingPathComponent("plays").path
        try "#!/bin/sh\necho \"$(date +%s) $*\" >> \"\(plays)\"\nsleep 0.3\n".write(to: player.appendingPathComponent("pw-play"),
                                                                                    atomically: true, encoding: .utf8)
        chmod(player.appendingPathComponent("pw-play").path, 0o755)
        @Sendable func playCount() -> Int {
            ((try? String(contentsOfFile: plays, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        let (tz, zone, firstMinute) = AlarmAgentTests.zone(lead: 40)
        // A button of the owner's, so the agent listens to BlueZ; the adverts come from a stranger.
        #expect(try await cli.run(["button", "add", AlarmAgentTests.shelly, "--kind", "bthome", "--name", "bedside"]).exitCode == 0)
        try await PrivateBroker.run { broker in
            try cli.writeConfig("""
                [household]
                name = "Soak"
                device = "soak-laptop"

                [mqtt]
                url = "mqtt://127.0.0.1:\(broker.port)"

                [web]
                listen = ["127.0.0.1:\(port)"]
                """)
            try await PrivateBus.run(mockTemplate: "bluez5", system: true) { system in
                let bluez = try DBusConnection(bus: .address(system.address))
                try await bluez.addMockBlueZDevice(AlarmAgentTests.shelly, alias: "SBBT-002C")
                _ = try await bluez.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.Mock", member: "AddDevice",
                                         arguments: [.string("hci0"), .string(Self.stranger), .string("stranger")])
                try await PrivateBus.run(mockTemplate: "notification_daemon") { session in
                    let log = LineBuffer()
                    let (exe, argv) = cli.command(["agent"], scenario: nil, fakeTime: nil)
                    let path = "\(player.path):\(ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")"
                    let result = try await Subprocess.run(
                        exe, arguments: Arguments(argv),
                        environment: cli.environment(tz: tz, extra: ["DBUS_SYSTEM_BUS_ADDRESS": system.address,
                                                                     "DBUS_SESSION_BUS_ADDRESS": session.address,
                                                                     "PATH": path]),
                        input: .none, output: .discarded, error: .sequence
                    ) { execution in
                        let pid = execution.processIdentifier.value
                        let reader = Task { for try await line in execution.standardError.strings() { log.append(line) } }
                        #expect(await log.wait(for: "agent ready", timeout: 60) != nil, "\(log.all.joined(separator: "\n"))")
                        // Three alarms, one a minute from the first one far enough ahead.
                        let start = Date() < firstMinute.addingTimeInterval(-15) ? firstMinute : firstMinute.addingTimeInterval(60)
                        let minutes = (0..<3).map { start.addingTimeInterval(Double($0) * 60) }
                        for minute in minutes {
                            let added = try await cli.run(["alarm", "add", AlarmAgentTests.hourMinute(minute, zone), "--label", "Soak"], tz: tz)
                            #expect(added.exitCode == 0, "\(added.err)")
                        }
                        try #require(Date() < start.addingTimeInterval(-2), "the machine was too slow to set the alarms before the first: the test proves nothing")

                        // The steady mix, until the last alarm is answered.
                        let answered = Flag()
                        // Blocking sockets: on a thread of their own, not the cooperative pool (onOwnThread).
                        let web = Task {
                            await onOwnThread {
                                var ok = 0
                                while !answered.isSet {
                                    if Self.request(port: port, path: ok % 3 == 0 ? "/api/tonight" : "/") { ok += 1 }
                                    usleep(40_000)
                                }
                                return ok
                            }
                        }
                        let mqtt = Task.detached {
                            let client = try MQTTClient(clientID: "soak-intruder")
                            try await client.connect(host: "127.0.0.1", port: broker.port)
                            var sent = 0
                            while !answered.isSet {
                                try? client.publish("dosetap/soak/peer/intruder-\(sent % 50)", Array("{\"state\":\"online\",\"junk\":\(sent)}".utf8),
                                                    retain: false)
                                try? client.publish("dosetap/soak/plan/intruder/\(sent % 7)", Array("not json \(sent)".utf8), retain: false)
                                sent += 1
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                            return sent
                        }
                        var baseline: Footprint?
                        let rung = try await ButtonScanAndTestCLITests.advertising(bus: system.address, address: Self.stranger) { () async throws -> [Bool] in
                            var played: [Bool] = []
                            for (index, minute) in minutes.enumerated() {
                                let hhmm = AlarmAgentTests.hourMinute(minute, zone)
                                let ringing = await log.wait(for: "Alarm \(hhmm): ringing", count: 1,
                                                             timeout: max(10, minute.timeIntervalSinceNow + 30))
                                #expect(ringing != nil, "alarm \(index + 1) did not ring: \(log.all.suffix(40).joined(separator: "\n"))")
                                let before = playCount()
                                var sounded = false
                                let deadline = Date().addingTimeInterval(20)
                                while !sounded, Date() < deadline {
                                    sounded = playCount() > before || (index == 0 && before > 0)
                                    if !sounded { try await Task.sleep(for: .milliseconds(100)) }
                                }
                                played.append(sounded)
                                if index == 0 {
                                    // The mix has run since the agent was ready; its footprint now is the baseline.
                                    baseline = Footprint(pid: pid)
                                }
                                let stop = try await cli.run(["alarm", "stop"], tz: tz)
                                #expect(stop.exitCode == 0, "\(stop.out) \(stop.err)")
                            }
                            return played
                        }
                        let end = Footprint(pid: pid)
                        answered.set()
                        let requests = await web.value
                        let messages = try await mqtt.value
                        #expect(rung == [true, true, true], "every alarm due played its sound")
                        #expect(requests > 100, "the dashboard answered \(requests) requests")
                        #expect(messages > 100)
                        print("soak: \(requests) dashboard requests, \(messages) broker messages; agent \(baseline.map { "\($0)" } ?? "?") → \(end.map { "\($0)" } ?? "?")")
                        if let baseline, let end {
                            #expect(end.descriptors <= baseline.descriptors + 8, "descriptors grew: \(baseline) → \(end)")
                            #expect(end.threads <= baseline.threads + 4, "threads grew: \(baseline) → \(end)")
                            #expect(end.rssKB <= baseline.rssKB + 20_000, "memory grew: \(baseline) → \(end)")
                        } else {
                            Issue.record("the agent's footprint could not be read")
                        }
                        try execution.send(signal: .terminate)
                        _ = try? await reader.value
                    }
                    #expect(result.terminationStatus == .exited(0))
                    #expect(!log.all.contains { $0.contains("Too many open files") || $0.contains("alarm sound failed") },
                            "\(log.all.filter { $0.contains("Too many") || $0.contains("sound failed") }.prefix(5))")
                }
            }
        }
    }
}
