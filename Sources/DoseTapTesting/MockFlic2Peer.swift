import DoseTapCore
import DoseTapLinux
import Foundation

/// The button side of a Flic 2 on the mock BlueZ (`MockBlueZGATT.AddFlic2`): every frame the app writes (the mock's
/// `Written` signal) goes to a `SimulatedFlic2Button`, and each frame it answers becomes a notification (a `Value`
/// set on the notify characteristic, which the mock announces with `PropertiesChanged`), in order.
public final class MockFlic2Peer: @unchecked Sendable {
    public let device: String
    public let write: String
    public let notify: String
    private let connection: DBusConnection
    private let lock = NSLock()
    private var button: SimulatedFlic2Button
    private var listener: Task<Void, Never>?
    private var linkWatcher: Task<Void, Never>?
    /// Every frame written to the button, in order.
    private var writtenFrames: [[UInt8]] = []
    /// Serializes notifications: a press and an answer never interleave their frames.
    private let outbox: AsyncStream<[[UInt8]]>.Continuation
    private var sender: Task<Void, Never>?

    public init(connection: DBusConnection, device: String, write: String, notify: String, button: SimulatedFlic2Button) {
        self.connection = connection
        self.device = device
        self.write = write
        self.notify = notify
        self.button = button
        let (stream, continuation) = AsyncStream<[[UInt8]]>.makeStream()
        outbox = continuation
        sender = Task { [connection, notify] in
            for await frames in stream {
                for frame in frames {
                    _ = try? await connection.call(destination: "org.bluez", path: notify, interface: "org.freedesktop.DBus.Properties",
                                                   member: "Set", arguments: [.string("org.bluez.GattCharacteristic1"), .string("Value"),
                                                                              .variant(.bytes(frame))])
                }
            }
        }
    }

    deinit {
        listener?.cancel()
        linkWatcher?.cancel()
        sender?.cancel()
        outbox.finish()
    }

    /// Starts answering the app's writes; the button's session ends whenever the link does (whoever dropped it).
    public func start() async throws {
        let changes = try await connection.signals(DBusMatchRule(path: device, interface: "org.freedesktop.DBus.Properties",
                                                                 member: "PropertiesChanged"))
        linkWatcher = Task { [weak self] in
            for await message in changes {
                guard let self, message.body.first?.string == "org.bluez.Device1", message.body.count > 1,
                      case .dictionary(_, _, let entries) = message.body[1].unwrapped,
                      entries.contains(where: { $0.key.string == "Connected" && $0.value.bool == false }) else { continue }
                self.lock.withLock { self.button.disconnect() }
            }
        }
        let written = try await connection.signals(DBusMatchRule(path: write, interface: "org.dosetap.Mock", member: "Written"))
        listener = Task { [weak self] in
            for await message in written {
                guard let self, let frame = message.body.first?.bytes else { continue }
                let answers = self.lock.withLock { () -> [[UInt8]] in
                    self.writtenFrames.append(frame)
                    return self.button.receive(frame)
                }
                if !answers.isEmpty { self.outbox.yield(answers) }
            }
        }
    }

    /// Reads or changes the simulated button.
    public func withButton<T>(_ body: (inout SimulatedFlic2Button) -> T) -> T {
        lock.withLock { body(&button) }
    }

    public var written: [[UInt8]] { lock.withLock { writtenFrames } }

    /// A gesture on the button: notified now if a session is up, else queued in the button. Returns the frames
    /// notified (for a test that replays them).
    @discardableResult
    public func press(_ gesture: ButtonGesture) -> [[UInt8]] {
        let frames = lock.withLock { button.press(gesture) }
        if !frames.isEmpty { outbox.yield(frames) }
        return frames
    }

    /// Frames sent as notifications as they are (a test forging or replaying them).
    public func notifyRaw(_ frames: [[UInt8]]) { outbox.yield(frames) }

    /// The link drops (out of reach): the button's session ends; the app sees the device disconnected.
    public func dropLink() async throws {
        lock.withLock { button.disconnect() }
        _ = try await connection.call(destination: "org.bluez", path: device, interface: "org.bluez.Device1", member: "Disconnect", arguments: [])
    }
}
