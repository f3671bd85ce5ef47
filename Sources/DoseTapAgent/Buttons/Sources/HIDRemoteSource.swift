import DoseTapCore
import DoseTapLinux
import Foundation
import Synchronization

/// HID remotes (a BLE camera shutter, a presenter): key downs and ups through udev and evdev, grabbed while
/// followed; the pipeline recognises the gestures with its timers.
final class HIDRemoteSource: ButtonSource {
    let hid: HIDButtonSource
    private let addresses = Mutex(Set<String>())

    init(hid: HIDButtonSource) {
        self.hid = hid
    }

    var kinds: Set<ButtonKind> { [.hid] }

    func follow(_ buttons: [ButtonConfig]) async {
        let addresses = Set(buttons.map(\.address))
        self.addresses.withLock { $0 = addresses }
        hid.setAddresses(addresses)
    }

    func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async {
        for await event in hid.events(addresses: addresses.withLock { $0 }) {
            sink(ButtonSignal(event))
        }
    }

    func close() {}
}

extension ButtonSignal {
    /// A HID remote's event (udev + evdev adapter) as a button signal.
    public init(_ event: HIDButtonEvent) {
        switch event {
        case .connected(let remote, let grabbed):
            self = .link(address: remote.address, kind: .hid, .connected(detail: ["grabbed": "\(grabbed)"]))
        case .disconnected(let remote, let reason, let interrupted):
            self = .link(address: remote.address, kind: .hid, .disconnected(reason: "\(reason)", interruptedPress: interrupted))
        case .unavailable(let remote, let error):
            self = .link(address: remote.address, kind: .hid, .unavailable(reason: "\(error)"))
        case .signal(let address, let signal):
            self = .key(address: address, kind: .hid, signal)
        }
    }
}
