import Foundation

/// Everything a button source reports (`ButtonSource`), in one type: the one stream the button pipeline reads. BTHome
/// buttons arrive as adverts (they classify their own presses); HID remotes and iTags as raw key signals
/// that DoseTap's gesture recognizer classifies; Flic 2 buttons as the gestures they classified; batteries and
/// link changes beside them.
public enum ButtonSignal: Sendable, Equatable {
    /// A BLE advertisement, as BlueZ reported it (BTHome buttons, and every neighbour in range).
    case advert(BLEAdvert)
    /// A key down, up or bare press of a button that does not classify its own presses.
    case key(address: String, kind: ButtonKind, KeySignal)
    /// A gesture a button classified itself, from a source that already authenticated it and made sure it is
    /// reported once (a Flic 2). `pressedAt`: when it was made — for an event the button queued while it was out
    /// of reach, before it arrived (so the dose policy refuses an old one).
    case gesture(address: String, kind: ButtonKind, ButtonGesture, pressedAt: Date)
    /// The button's own battery, in percent (iTag `Battery1`, a Flic 2's voltage on its curve; BTHome batteries
    /// come inside adverts).
    case battery(address: String, kind: ButtonKind, level: Int, at: Date)
    /// The link to a button changed.
    case link(address: String, kind: ButtonKind, ButtonLinkChange)
}

public enum ButtonLinkChange: Sendable, Equatable {
    /// Connected and being read. `detail` says how (a HID remote's "grabbed" state), for the log.
    case connected(detail: [String: String])
    /// The link ended. `interruptedPress`: a key was down and no up will come for it (drop that press).
    case disconnected(reason: String, interruptedPress: Bool)
    /// The button is there but cannot be read (permission, a stale node).
    case unavailable(reason: String)
}
