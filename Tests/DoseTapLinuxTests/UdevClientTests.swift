import DoseTapCore
@testable import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing

extension UdevFixtures {
    /// One libudev client, one netlink monitor, fanned out per subsystem (under umockdev).
    @Suite("One udev client: one monitor for every subsystem, fanned out to its subscribers")
    struct UdevClientTests {
        static let batteryPath = "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/PNP0A08:00/device:1c/PNP0C09:00/PNP0C0A:00/power_supply/BAT0"
        static let remote = "80:00:00:00:EE:E0"

        static func fixture(_ path: String) throws -> String {
            try String(contentsOf: Fixtures.root.appendingPathComponent(path), encoding: .utf8)
        }

        /// Only the devices of a description under `prefix` (two recordings may hold the same keyboard).
        static func fixture(_ path: String, under prefix: String) throws -> String {
            try fixture(path).components(separatedBy: "\n\n")
                .filter { $0.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("P: \(prefix)") }
                .joined(separator: "\n\n") + "\n"
        }

        @Test("the filter follows the subscribers: widened on subscribe, narrowed on cancel, closed after the last")
        func filter() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            let udev = try UdevClient()
            #expect(udev.monitoredSubsystems == nil)
            let (power, input, again) = try udev.queue.sync {
                (try udev.subscribe(subsystem: "power_supply") { _ in },
                 try udev.subscribe(subsystem: "input") { _ in },
                 try udev.subscribe(subsystem: "input") { _ in })
            }
            #expect(udev.monitoredSubsystems == ["power_supply", "input"])
            udev.queue.sync { power.cancel() }
            #expect(udev.monitoredSubsystems == ["input"])
            udev.queue.sync { input.cancel() }
            #expect(udev.monitoredSubsystems == ["input"])
            udev.queue.sync { again.cancel() }
            #expect(udev.monitoredSubsystems == nil)
            // A subscription that is simply dropped ends too (on the queue, after the drop).
            _ = try udev.queue.sync { try udev.subscribe(subsystem: "input") { _ in } }
            #expect(udev.monitoredSubsystems == nil)
            withExtendedLifetime(testbed) {}
        }

        @Test("the power supplies, a HID remote and the vibration motor share one client and each hears its own devices")
        func shared() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try Self.fixture("power_supply/ac-offline.umockdev"))
            let udev = try UdevClient()
            let power = UdevPowerSupplySource(udev: udev)
            let hid = try HIDButtonSource(udev: udev)
            let vibra = UdevVibraFinder(udev: udev)
            #expect(vibra.candidates().isEmpty)

            let supplies = Collected<PowerSupplyEvent>(power.events())
            let remotes = Collected<HIDButtonEvent>(hid.events(addresses: [Self.remote]))
            let extra = HIDLocked<[String]>([])
            let rawInput = try udev.queue.sync {
                try udev.subscribe(subsystem: "input") { devices in
                    extra.withLock { $0 += devices.compactMap { $0.subsystem } }
                }
            }
            _ = hid.remotes()   // every subscription above has run (same queue)
            #expect(udev.monitoredSubsystems == ["power_supply", "input"])

            // Input devices arrive: the motor is found, the remote's node is seen; no power supply hears of them.
            try testbed.add(try Self.fixture("input/gpio-vibrator.umockdev", under: "/devices/platform/vibrator"))
            try testbed.add(try Self.fixture("hid/classic-shutter.umockdev", under: "/devices/platform/soc"))
            try await waitUntil("the motor found") { vibra.candidates().map(\.sysname) == ["event5"] }
            // Opened, or reported as unreadable: either way its add event reached the HID source.
            try await waitUntil("the remote's node seen") {
                remotes.items.contains {
                    switch $0 {
                    case .connected(let r, _), .unavailable(let r, _): r.sysname == "event3"
                    default: false
                    }
                }
            }
            #expect(supplies.items.isEmpty)

            // A battery change reaches the power supplies only.
            let before = extra.value.count
            testbed.setAttribute(Self.batteryPath, "capacity", "41")
            testbed.uevent(Self.batteryPath, action: "change")
            try await waitUntil("the battery change") { !supplies.items.isEmpty }
            guard case .changed(let raw)? = supplies.items.first else {
                Issue.record("expected a change, got \(supplies.items)")
                return
            }
            #expect(PowerSupplyReading(raw: raw).level == 41)
            #expect(extra.value.count == before)
            #expect(extra.value.allSatisfy { $0 == "input" })

            udev.queue.sync { rawInput.cancel() }
            supplies.stop()
            remotes.stop()
            withExtendedLifetime((testbed, vibra)) {}
        }
    }
}

/// What a stream delivered so far, gathered by a task of its own.
private final class Collected<Element: Sendable>: Sendable {
    private let store: HIDLocked<[Element]>
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let store = HIDLocked<[Element]>([])
        task = Task { for await item in stream { store.withLock { $0.append(item) } } }
        self.store = store
    }

    var items: [Element] { store.value }
    func stop() { task.cancel() }
}
