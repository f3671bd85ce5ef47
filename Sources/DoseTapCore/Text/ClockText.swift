import Foundation

/// Local clock times for messages: "01:15".
public struct ClockText: Sendable {
    public var timeZone: TimeZone

    public init(timeZone: TimeZone) { self.timeZone = timeZone }

    public func time(_ date: Date) -> String {
        let c = CivilTime(date, in: timeZone)
        return "\(c.hour.zeroPadded(2)):\(c.minute.zeroPadded(2))"
    }

    public func timeWithSeconds(_ date: Date) -> String {
        let c = CivilTime(date, in: timeZone)
        return "\(c.hour.zeroPadded(2)):\(c.minute.zeroPadded(2)):\(c.second.zeroPadded(2))"
    }
}

extension String {
    /// "the dose log…" → "The dose log…".
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
