import DoseTapCore
import Foundation

/// The system clock and time zone.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
    public var timeZone: TimeZone { SystemTimeZone.current }
}
