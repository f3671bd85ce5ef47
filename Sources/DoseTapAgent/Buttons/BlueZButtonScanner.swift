import DoseTapApp
import DoseTapCore
import DoseTapLinux
import Foundation
import Logging

/// The machine's `ButtonScanner`: BlueZ discovery on the system bus for BLE buttons, and the HID remotes
/// the kernel already has (through evdev).
public struct BlueZButtonScanner: ButtonScanner {
    public init() {}

    /// The one line for "BlueZ is not there", naming the fix; the bus's own words follow in brackets.
    public static func unreachable(_ error: any Error) -> String {
        let cause = (error as? DBusError).map(\.message) ?? "\(error)"
        return "cannot reach BlueZ on the system bus — is bluetoothd running? (`systemctl enable --now bluetooth`) [\(DisplayText.escaped(cause, maxLength: 200))]"
    }

    /// Nobody owns `org.bluez` (bluetoothd stopped or not installed), or no adapter object exists.
    static func bluezMissing(_ error: DBusError) -> Bool {
        ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
         "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.FileNotFound",
         "org.freedesktop.DBus.Error.NoServer"].contains(error.name)
    }

    /// The system bus's BlueZ, or the one line saying it is not there.
    static func client(logger: Logger? = nil) throws -> BlueZClient {
        do {
            let connection = try DBusConnection(bus: .system)
            return logger.map { BlueZClient(connection: connection, logger: $0) } ?? BlueZClient(connection: connection)
        } catch {
            throw UseCaseError.unavailable(unreachable(error))
        }
    }

    public func adverts(seconds: Int, keeping: Int) async throws -> [BLEAdvert] {
        let client = try Self.client()
        do {
            try await client.startDiscovery()
            let adverts = try await client.adverts()
            let deadline = Date().addingTimeInterval(TimeInterval(seconds))
            let collector = Task {
                var sightings = AdvertSightings(capacity: keeping)
                for await advert in adverts {
                    sightings.add(advert)
                    if Date() > deadline { break }
                }
                return sightings.adverts
            }
            guard await TimerFDScheduler.shared.sleep(for: TimeInterval(seconds)) != .cancelled else { throw CancellationError() }
            collector.cancel()
            let seen = await collector.value
            await client.stopDiscovery()
            return seen
        } catch let error as DBusError where Self.bluezMissing(error) {
            throw UseCaseError.unavailable(Self.unreachable(error))
        } catch {
            throw UseCaseError.unavailable("scan failed: \(error)")
        }
    }

    public func connectedRemotes() -> [(address: String, name: String?)] {
        ((try? HIDButtonSource())?.remotes() ?? []).map { ($0.address, $0.name) }
    }
}

extension ButtonService {
    /// The agent's own button pipeline (allowlist, BTHome rules, gesture recognition) observing instead of
    /// acting, for `button test`: every recognised gesture goes to `observer`, nothing is recorded. BLE
    /// buttons through BlueZ, HID remotes through evdev (grabbed while watching, as the agent does).
    public static func observing(_ buttons: ButtonUseCases, logger: Logger,
                                 observer: @escaping @Sendable (ButtonIntent) -> Void) throws -> ButtonService {
        let repository = try buttons.repository()
        let configured = try repository.all()
        guard !configured.isEmpty else { throw UseCaseError.refused("no buttons added: dosetap button add ADDRESS --kind …") }
        let bluez = configured.contains(where: { $0.kind != .hid }) ? try BlueZButtonScanner.client(logger: logger) : nil
        let hid = configured.contains(where: { $0.kind == .hid }) ? try? HIDButtonSource(logger: logger) : nil
        let clock = TimerFDScheduler.shared
        return ButtonService(
            sources: ButtonSources.machine(bluez: bluez, hid: hid, clock: clock, logger: logger, observing: true, store: repository),
            buttons: repository, doses: nil, samples: nil,
            clock: clock, logger: logger, databaseChanges: nil, observer: observer)
    }
}
