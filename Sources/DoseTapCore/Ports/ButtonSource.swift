import Foundation

/// One way buttons reach the agent: BTHome adverts through BlueZ, HID remotes through evdev, iTags and Flic 2
/// buttons over GATT — each an adapter behind this port. The button service runs every source into one stream of
/// `ButtonSignal`s read by one pipeline, so a new kind of button is its Core parser plus one source, with
/// no change to the pipeline or the use cases.
public protocol ButtonSource: Sendable {
    /// The kinds of button this source reads.
    var kinds: Set<ButtonKind> { get }
    /// The added buttons of its kinds, with what each needs to be read (a Flic 2's pairing): given before `run`,
    /// and again whenever they change.
    func follow(_ buttons: [ButtonConfig]) async
    /// Reports into `sink` until cancelled. A source that cannot work at all (no bus, no udev) logs why
    /// and waits for cancellation, so the others go on.
    func run(into sink: @escaping @Sendable (ButtonSignal) -> Void) async
    /// Called once every source has returned from `run` (a shared bus is closed here).
    func close()
}
