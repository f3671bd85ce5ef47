import Foundation

/// What an iTag-style GATT button reports.
public enum GATTButtonEvent: Sendable, Equatable {
    /// Connected, services resolved and notifications on 0xFFE1 started.
    case connected
    /// One notification of `01`, stamped with the instant DoseTap received it.
    case press(at: Date)
    /// `org.bluez.Battery1.Percentage` of the device (the initial value, then every change).
    case battery(Int)
    /// The link ended after `connected` (link loss, bluetoothd restarting, the objects removed). A
    /// reconnection follows.
    case disconnected(reason: String)
}
