import DoseTapApp
import DoseTapCore
import Foundation
import Synchronization

/// One `GestureRecognizer` per button that sends raw signals and leaves the classification to DoseTap:
/// HID remotes (key downs and ups) and iTags (press-only notifications). The owner runs `expire(address:at:)`
/// at the `deadline` that `feed` returns (a single whose double window passed, a hold reached while held).
public final class ButtonRecognizers: Sendable {
    private let recognizers = Mutex<[String: GestureRecognizer]>([:])

    public init() {}

    /// Feeds one signal of `button`; returns the gestures it completed and when `expire` must run next.
    public func feed(_ signal: KeySignal, button: ButtonConfig) -> (gestures: [RecognizedGesture], deadline: Date?) {
        recognizers.withLock { all in
            var r = all[button.address] ?? GestureRecognizer(noDouble: button.mapping.noDouble)
            r.noDouble = button.mapping.noDouble
            let gestures = r.feed(signal)
            all[button.address] = r
            return (gestures, r.deadline)
        }
    }

    /// What time alone decides for a button at `now`.
    public func expire(address: String, at now: Date) -> [RecognizedGesture] {
        recognizers.withLock { all in
            guard var r = all[address] else { return [] }
            let gestures = r.expire(at: now)
            all[address] = r
            return gestures
        }
    }

    /// Forgets a button's state (a press cut by a disconnect is dropped).
    public func reset(address: String) {
        _ = recognizers.withLock { $0.removeValue(forKey: address) }
    }
}
