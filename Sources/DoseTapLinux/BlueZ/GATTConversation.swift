import DoseTapCore
import Foundation

/// Which GATT service and characteristics a kind of button uses.
public struct GATTProfile: Sendable, Equatable {
    /// For the log ("iTag", "Flic 2").
    public var label: String
    public var serviceUUID: String
    /// Notifications come from here.
    public var notifyUUID: String
    /// Writes go here (a button that talks back); nil for one that only notifies.
    public var writeUUID: String?

    public init(label: String, serviceUUID: String, notifyUUID: String, writeUUID: String? = nil) {
        self.label = label
        self.serviceUUID = ITagGATT.normalizeUUID(serviceUUID)
        self.notifyUUID = ITagGATT.normalizeUUID(notifyUUID)
        self.writeUUID = writeUUID.map(ITagGATT.normalizeUUID)
    }

    /// iTag-style buttons: 0xFFE1 notifications under 0xFFE0, each `01` a press.
    public static let iTag = GATTProfile(label: "iTag", serviceUUID: ITagGATT.serviceUUID, notifyUUID: ITagGATT.characteristicUUID)

    /// Flic 2: its service, the write characteristic 0x…0001 and the notify characteristic 0x…0002.
    public static let flic2 = GATTProfile(label: "Flic 2", serviceUUID: GATTFlic2.serviceUUID, notifyUUID: GATTFlic2.notifyUUID,
                                          writeUUID: GATTFlic2.writeUUID)
}

/// What the link does after a conversation step: frames to write (in order), a timer to start (replacing the one that
/// runs; nil leaves it), or the end of the link with a reason (it is disconnected, and reconnected after the back-off).
public struct GATTReply: Sendable, Equatable {
    public var writes: [[UInt8]]
    public var timeout: Duration?
    public var end: String?

    public init(writes: [[UInt8]] = [], timeout: Duration? = nil, end: String? = nil) {
        self.writes = writes
        self.timeout = timeout
        self.end = end
    }
}

/// A button that talks over its link (a Flic 2's authenticated protocol): one object per connection, called on the
/// link's task, in order.
public protocol GATTConversation: AnyObject, Sendable {
    /// The link is up and notifications are on; `mtu` is the characteristic's ATT MTU.
    func opened(mtu: Int) -> GATTReply
    /// One notification, stamped when it arrived.
    func received(_ value: [UInt8], at: Date) -> GATTReply
    /// The timer of the last reply ran out.
    func timedOut() -> GATTReply
    /// The link ended (after `opened`, or before it when the connection never came up).
    func closed(reason: String)
}
