/// One `/sys/class/power_supply/*` device as the operating system shows it: its name and the raw text
/// of its attributes (`type`, `status`, `energy_now`, …). Adapters produce these; Core parses them.
public struct RawPowerSupply: Sendable, Equatable, Hashable {
    public var name: String
    public var attributes: [String: String]

    public init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    /// The attributes a reading uses. Adapters read these and nothing else.
    public static let attributeNames: [String] = [
        "type", "scope", "present", "online", "status", "capacity", "capacity_level",
        "energy_now", "energy_full", "energy_full_design", "power_now",
        "charge_now", "charge_full", "charge_full_design", "current_now",
        "voltage_now", "voltage_max_design", "voltage_min_design",
        "model_name", "manufacturer", "technology",
    ]
}

public enum SupplyType: Sendable, Equatable, Hashable {
    case battery, ups, mains, usb, wireless
    case other(String)

    public init(kernel: String?) {
        switch kernel?.trimmed.lowercased() {
        case "battery": self = .battery
        case "ups": self = .ups
        case "mains": self = .mains
        case "usb": self = .usb
        case "wireless": self = .wireless
        default: self = .other(kernel?.trimmed ?? "")
        }
    }

    /// The kernel's spelling.
    public var name: String {
        switch self {
        case .battery: "Battery"
        case .ups: "UPS"
        case .mains: "Mains"
        case .usb: "USB"
        case .wireless: "Wireless"
        case .other(let s): s.isEmpty ? "Unknown" : s
        }
    }

    /// Supplies that power the machine from outside (their `online` means "on AC").
    public var isExternal: Bool { self == .mains || self == .usb || self == .wireless }
}

public enum SupplyScope: String, Sendable, Equatable, Hashable {
    case system = "System"
    case device = "Device"
    case unknown = "Unknown"

    public init(kernel: String?) {
        switch kernel?.trimmed.lowercased() {
        case "system": self = .system
        case "device": self = .device
        default: self = .unknown
        }
    }
}

public enum SupplyStatus: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    case charging
    case discharging
    case full
    case notCharging = "not-charging"
    case unknown

    public init(kernel: String?) {
        switch kernel?.trimmed.lowercased() {
        case "charging": self = .charging
        case "discharging": self = .discharging
        case "full": self = .full
        case "not charging": self = .notCharging
        default: self = .unknown
        }
    }

    /// Statuses that only happen with external power connected.
    public var impliesExternalPower: Bool { self == .charging || self == .full || self == .notCharging }
}

/// A power supply parsed into typed values in SI-ish units (Wh, W, V, %). Garbage never crashes:
/// a value that cannot be trusted becomes unknown (`nil`) and the reason lands in `problems`.
public struct PowerSupplyReading: Sendable, Equatable {
    public var name: String
    public var type: SupplyType
    public var scope: SupplyScope
    public var present: Bool
    public var online: Bool?
    public var status: SupplyStatus
    /// 0…100, from `capacity` when sane, else from energy now ÷ full.
    public var level: Double?
    public var energyWh: Double?
    public var energyFullWh: Double?
    public var energyFullDesignWh: Double?
    /// Magnitude of the charge or discharge rate, from `power_now` or `current_now` × voltage.
    public var rateW: Double?
    public var voltageV: Double?
    public var model: String?
    /// Why some values are unknown or were corrected; empty for a healthy supply.
    public var problems: [String]

    /// Rates above this are treated as garbage (no laptop or Pi draws hundreds of watts).
    public static let absurdRateW = 300.0

    public init(raw: RawPowerSupply) {
        var parser = AttributeParser(attributes: raw.attributes)
        name = raw.name
        type = SupplyType(kernel: raw.attributes["type"])
        scope = SupplyScope(kernel: raw.attributes["scope"])
        present = parser.flag("present") ?? true
        online = parser.flag("online")
        status = SupplyStatus(kernel: raw.attributes["status"])
        model = raw.attributes["model_name"].map(\.trimmed).flatMap { $0.isEmpty ? nil : $0 }

        // 0 V is a real reading (an idle USB-C port) but useless for converting charge to energy.
        voltageV = parser.nonNegative("voltage_now", divisor: 1e6)
        let voltageNow = voltageV.flatMap { $0 > 0 ? $0 : nil }
        let designVoltage = parser.positive("voltage_max_design", divisor: 1e6)
            ?? parser.positive("voltage_min_design", divisor: 1e6)
            ?? voltageNow

        func energy(_ energyKey: String, _ chargeKey: String) -> Double? {
            if let e = parser.nonNegative(energyKey, divisor: 1e6) { return e }
            guard let charge = parser.nonNegative(chargeKey, divisor: 1e6) else { return nil }
            guard let v = designVoltage else {
                parser.problems.append("\(chargeKey): no voltage to convert charge to energy")
                return nil
            }
            return charge * v
        }
        var now = energy("energy_now", "charge_now")
        let full = energy("energy_full", "charge_full")
        energyFullDesignWh = energy("energy_full_design", "charge_full_design")
        if let n = now, let f = full, n > f {
            parser.problems.append("energy now (\(n.rounded(places: 3)) Wh) above full (\(f.rounded(places: 3)) Wh); clamped")
            now = f
        }
        energyWh = now
        energyFullWh = full

        var rate: Double?
        if let p = parser.signed("power_now", divisor: 1e6) {
            rate = abs(p)
        } else if let i = parser.signed("current_now", divisor: 1e6) {
            if i == 0 {
                rate = 0
            } else if let v = voltageNow ?? designVoltage {
                rate = abs(i) * v
            }
        }
        if let r = rate, r > Self.absurdRateW {
            parser.problems.append("rate of \(r.rounded(places: 1)) W is absurd; ignored")
            rate = nil
        }
        rateW = rate

        if let c = parser.number("capacity") {
            if c >= 0, c <= 100 {
                level = c
            } else {
                parser.problems.append("capacity: \(c.rounded(places: 1)) is outside 0…100")
                level = nil
            }
        }
        if level == nil, let n = now, let f = full, f > 0 {
            level = min(100, max(0, n / f * 100))
        }
        if !type.isBattery && type != .ups { level = nil }
        problems = parser.problems
    }

    /// A battery that powers the machine itself (not a mouse's or a button's).
    public var isSystemBattery: Bool { type == .battery && scope != .device && present }
}

extension SupplyType {
    var isBattery: Bool { self == .battery }
}

/// Reads sysfs attribute text into numbers, recording why a value is rejected.
struct AttributeParser {
    let attributes: [String: String]
    var problems: [String] = []

    /// A finite number, or nil (missing silently, garbage with a problem noted).
    mutating func number(_ key: String) -> Double? {
        guard let raw = attributes[key] else { return nil }
        let text = raw.trimmed
        guard !text.isEmpty else {
            problems.append("\(key): empty")
            return nil
        }
        // Sysfs numbers are plain decimal; refuse hex, words and the like rather than guess.
        let decimal = text.allSatisfy { "0123456789+-.eE".contains($0) }
        guard decimal, let value = Double(text), value.isFinite else {
            problems.append("\(key): '\(text.prefix(32))' is not a number")
            return nil
        }
        return value
    }

    mutating func signed(_ key: String, divisor: Double) -> Double? {
        number(key).map { $0 / divisor }
    }

    mutating func nonNegative(_ key: String, divisor: Double) -> Double? {
        guard let v = number(key) else { return nil }
        guard v >= 0 else {
            problems.append("\(key): negative (\(v))")
            return nil
        }
        return v / divisor
    }

    mutating func positive(_ key: String, divisor: Double) -> Double? {
        guard let v = number(key) else { return nil }
        guard v > 0 else {
            problems.append("\(key): not positive (\(v))")
            return nil
        }
        return v / divisor
    }

    mutating func flag(_ key: String) -> Bool? {
        guard attributes[key] != nil else { return nil }
        guard let v = number(key) else { return nil }
        return v != 0
    }
}

extension String {
    var trimmed: String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}

extension Double {
    /// Rounded to a number of decimal places, for display and JSON.
    public func rounded(places: Int) -> Double {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return (self * scale).rounded() / scale
    }
}
