import DoseTapCore
import DoseTapStore
import Foundation

extension ButtonConfig {
    /// `{"address","kind","name","encrypted","mapping":{…}}`: never the bindkey itself.
    public var json: JSON {
        .object([
            ("address", .string(address)), ("kind", .string(kind.rawValue)), ("name", .string(name)),
            ("encrypted", .bool(bindkey != nil)),
            ("mapping", .object([
                ("single", .string(mapping.single.rawValue)), ("double", .string(mapping.double.rawValue)),
                ("hold", .string(mapping.hold.rawValue)), ("noDouble", .bool(mapping.noDouble)),
            ])),
        ])
    }
}

extension ButtonMapping {
    /// "single → take, double → snooze, hold → undo" (double "off" without double presses).
    public var summary: String {
        "single → \(single.rawValue), double → \(noDouble ? "off" : double.rawValue), hold → \(hold.rawValue)"
    }
}

extension UnusableButton {
    /// `{"address","unusable":reason}`.
    public var json: JSON {
        .object([("address", .string(address)), ("unusable", .string(reason))])
    }
}

extension ButtonUseCases.Candidate {
    /// `{"kind","address","name","rssi","connected"}`.
    public var json: JSON {
        .object([("kind", .string(kind.rawValue)), ("address", .string(address)), ("name", JSON.optional(name)),
                 ("rssi", JSON.optional(rssi)), ("connected", .bool(connected))])
    }
}
