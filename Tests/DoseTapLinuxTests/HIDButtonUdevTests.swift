import CLinuxInput
import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Synchronization
import Testing

/// Everything a `HIDButtonSource` stream delivers, gathered by a task of its own.
private final class HIDEventLog: Sendable {
    private let events: HIDLocked<[HIDButtonEvent]>
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<HIDButtonEvent>) {
        let events = HIDLocked<[HIDButtonEvent]>([])
        self.events = events
        task = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }

    var all: [HIDButtonEvent] { events.value }

    var signals: [Edge] {
        all.compactMap { if case .signal(_, let s) = $0 { Edge(s) } else { nil } }
    }

    /// Waits until `condition` holds for the events so far (5 s at most), and returns them.
    @discardableResult
    func wait(_ what: String, sourceLocation: SourceLocation = #_sourceLocation,
              until condition: @escaping @Sendable ([HIDButtonEvent]) -> Bool) async throws -> [HIDButtonEvent] {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition(all) {
            if ContinuousClock.now > deadline {
                Issue.record("\(what): not within 5 s; got \(all)", sourceLocation: sourceLocation)
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return all
    }

    /// Ends the stream (the source closes every node) and waits for the gathering task.
    func stop() async {
        task.cancel()
        await task.value
    }
}

private func connected(_ events: [HIDButtonEvent]) -> [String] {
    events.compactMap { if case .connected(let r, _) = $0 { r.sysname } else { nil } }
}

extension UdevFixtures {
    /// Named without "HIDButton" on purpose: `--filter HIDButton` runs the tests that need no umockdev;
    /// these run with `umockdev-wrapper swift test --filter UdevFixtures`.
    @Suite("HID remotes through libudev under umockdev")
    struct HIDRemoteUdevTests {
        static let remoteAddress = "FF:FF:3A:07:12:C4"
        static let remoteDescription = Fixtures.root.appendingPathComponent("hid/ab-shutter3.umockdev")
        static let consumerPath = "/sys/devices/virtual/misc/uhid/0005:248A:8266.0004/input/input25/event5"

        @Test("discovery: the AB Shutter3's two nodes with its address; not the i8042 or USB keyboard, not a headset's AVRCP keys")
        func discovery() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Self.remoteDescription, encoding: .utf8))
            let source = try HIDButtonSource()
            let remotes = source.remotes()
            #expect(remotes == [
                HIDRemote(sysname: "event4", devnode: "/dev/input/event4", address: Self.remoteAddress, name: "AB Shutter3",
                          adapter: "B8:27:EB:D7:FC:3A", vendorID: 0x248A, productID: 0x8266),
                HIDRemote(sysname: "event5", devnode: "/dev/input/event5", address: Self.remoteAddress,
                          name: "AB Shutter3 Consumer Control", adapter: "B8:27:EB:D7:FC:3A", vendorID: 0x248A, productID: 0x8266),
            ])
            #expect(remotes.first?.description == "/dev/input/event4, FF:FF:3A:07:12:C4, \"AB Shutter3\", 248a:8266")
            withExtendedLifetime(testbed) {}
        }

        @Test("discovery: a classic Bluetooth remote (the kernel's hidp, under hci0) beside a keyboard")
        func classic() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("hid/classic-shutter.umockdev"), encoding: .utf8))
            let remotes = try HIDButtonSource().remotes()
            #expect(remotes.map(\.sysname) == ["event3"])
            #expect(remotes.first?.address == "80:00:00:00:EE:E0")
            #expect(remotes.first?.name == "AB Shutter 3")
            withExtendedLifetime(testbed) {}
        }

        @Test("no Bluetooth remote: nothing found, nothing opened")
        func none() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("input/gpio-vibrator.umockdev"), encoding: .utf8))
            let source = try HIDButtonSource()
            #expect(source.remotes().isEmpty)
            let log = HIDEventLog(source.events(addresses: [Self.remoteAddress]))
            _ = source.remotes()   // the subscription has started (same queue)
            try await Task.sleep(for: .milliseconds(100))
            await log.stop()
            #expect(log.all.isEmpty)
            withExtendedLifetime(testbed) {}
        }

        @Test("each recording, replayed by umockdev on the remote's node, arrives as its signals with the recorded timestamps",
              arguments: HIDButtonReaderTests.names)
        func replay(_ name: String) async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let recording = try HIDRecording.load(name)
            let expected = HIDButtonReaderTests.expectation(name)
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Self.remoteDescription, encoding: .utf8))
            let source = try HIDButtonSource()
            // Any spelling of the address; a stranger's address in the list changes nothing.
            let log = HIDEventLog(source.events(addresses: ["ff:ff:3a:07:12:c4", "11:22:33:44:55:66"]))
            let opened = try await log.wait("both nodes open") { connected($0).count == 2 }
            #expect(connected(opened) == ["event4", "event5"])
            // umockdev answers EVIOCGRAB on an emulated input node with success (a stateless ioctl of its own).
            #expect(opened.allSatisfy { if case .connected(_, let grabbed) = $0 { grabbed } else { true } })

            try testbed.loadEvemuEvents(device: recording.device, file: recording.path)
            let events = try await log.wait("\(name): \(expected.edges.count) signals") { events in
                events.filter { if case .signal = $0 { true } else { false } }.count >= expected.edges.count
            }
            #expect(log.signals == expected.edges)
            #expect(events.allSatisfy { if case .signal(let a, _) = $0 { a == Self.remoteAddress } else { true } })

            let signals = events.compactMap { if case .signal(_, let s) = $0 { s } else { nil } }
            #expect(recognize(signals).map(\.gesture) == expected.gestures.map(\.0))

            #expect(!events.contains { if case .disconnected = $0 { true } else { false } })
            await log.stop()   // dropping the stream closes both nodes
            withExtendedLifetime(testbed) {}
        }

        @Test("hotplug: a remote that connects later is opened and read; udev's remove closes it; others never open")
        func hotplug() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()   // nothing connected yet
            let source = try HIDButtonSource()
            let log = HIDEventLog(source.events(addresses: [Self.remoteAddress]))
            #expect(source.remotes().isEmpty)   // and the monitor is listening once the queue got here
            #expect(log.all.isEmpty)

            // The remote connects (the same description brings two keyboards and a headset's AVRCP keys: they never open).
            try testbed.add(try String(contentsOf: Self.remoteDescription, encoding: .utf8))
            try await log.wait("the remote's nodes open on their add events") { connected($0).count == 2 }
            #expect(Set(connected(log.all)) == ["event4", "event5"])

            let single = try HIDRecording.load("single")
            try testbed.loadEvemuEvents(device: single.device, file: single.path)
            try await log.wait("a click") { events in events.filter { if case .signal = $0 { true } else { false } }.count >= 2 }
            #expect(log.signals == HIDButtonReaderTests.expectation("single").edges)

            testbed.uevent(Self.consumerPath, action: "remove")
            let events = try await log.wait("event5 closed") { events in
                events.contains { if case .disconnected(let r, _, _) = $0 { r.sysname == "event5" } else { false } }
            }
            #expect(events.last.map { if case .disconnected(let r, .removed, false) = $0 { r.sysname == "event5" } else { false } } == true)

            // The allowlist changes: the remaining node closes.
            source.setAddresses([])
            try await log.wait("event4 closed") { events in
                events.contains { if case .disconnected(let r, .notAllowed, false) = $0 { r.sysname == "event4" } else { false } }
            }
            await log.stop()
            withExtendedLifetime(testbed) {}
        }

        @Test("ENODEV while reading (the remote went away before udev said so): that node's stream ends, once, cleanly",
              arguments: [(6, false), (3, true)])
        func enodev(records: Int, interrupted: Bool) async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Self.remoteDescription, encoding: .utf8))
            // The whole click (6 records), or only its down (3): then the node dies with the button down.
            let io = RecordingHIDButtonIO(goneAfterBytes: records * Int(dosetap_input_event_size()))
            let source = try HIDButtonSource(io: io)
            let log = HIDEventLog(source.events(addresses: [Self.remoteAddress]))
            try await log.wait("both nodes open") { connected($0).count == 2 }
            let single = try HIDRecording.load("single")
            try testbed.loadEvemuEvents(device: single.device, file: single.path)
            let events = try await log.wait("event5 gone") { events in
                events.contains { if case .disconnected = $0 { true } else { false } }
            }
            let expected = HIDButtonReaderTests.expectation("single").edges
            #expect(log.signals == Array(expected.prefix(records == 6 ? 2 : 1)))
            let gone = events.compactMap { event -> (String, HIDDisconnectReason, Bool)? in
                if case .disconnected(let r, let reason, let cut) = event { (r.sysname, reason, cut) } else { nil }
            }
            #expect(gone.map(\.0) == ["event5"])
            #expect(gone.map(\.1) == [.deviceGone])
            #expect(gone.map(\.2) == [interrupted])
            // Released and closed; event4 is still open and untouched.
            try await waitUntil { io.calls.contains { if case .close = $0 { true } else { false } } }
            let fds = io.calls.compactMap { if case .close(let fd) = $0 { fd } else { nil } }
            #expect(fds.count == 1)
            #expect(io.calls.filter { if case .grab(_, false) = $0 { true } else { false } }.count == 1)
            // udev's remove comes after: nothing more.
            testbed.uevent(Self.consumerPath, action: "remove")
            try await Task.sleep(for: .milliseconds(100))
            #expect(log.all.filter { if case .disconnected = $0 { true } else { false } }.count == 1)
            await log.stop()
            withExtendedLifetime(testbed) {}
        }

        @Test("the allowlist decides: an address that is not in it is never opened, adding it opens it")
        func allowlist() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Self.remoteDescription, encoding: .utf8))
            let source = try HIDButtonSource()
            let log = HIDEventLog(source.events(addresses: ["7C:E9:13:69:66:55"]))   // the headset: not a HID remote
            _ = source.remotes()
            try await Task.sleep(for: .milliseconds(100))
            #expect(log.all.isEmpty)
            source.setAddresses([Self.remoteAddress])
            try await log.wait("opened after the list changed") { connected($0).count == 2 }
            await log.stop()
            withExtendedLifetime(testbed) {}
        }
    }
}
