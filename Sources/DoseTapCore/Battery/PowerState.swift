import Foundation

/// The machine's power as a whole: its system batteries combined the way UPower combines them, and
/// whether it runs on external power.
public struct PowerState: Sendable, Equatable {
    /// Every supply, sorted by name.
    public var supplies: [PowerSupplyReading]
    /// The batteries that power the machine (type Battery, scope not Device, present).
    public var batteries: [PowerSupplyReading]
    public var present: Bool
    /// 0…100, or nil when there is no battery or no battery reports a level.
    public var level: Double?
    /// The level with sub-percent precision (energy ÷ full) when known, for drain and time to empty.
    public var fineLevel: Double?
    public var status: SupplyStatus
    public var onAC: Bool
    public var energyWh: Double?
    public var energyFullWh: Double?
    /// Total rate of the system batteries, when every one of them reports it.
    public var rateW: Double?

    /// A hardware rate below this is noise (or a battery that is not really draining).
    public static let saneRateW: ClosedRange<Double> = 0.1...PowerSupplyReading.absurdRateW

    public init(readings: [PowerSupplyReading]) {
        supplies = readings.sorted { $0.name < $1.name }
        batteries = supplies.filter(\.isSystemBattery)
        present = !batteries.isEmpty

        let energies = batteries.compactMap(\.energyWh)
        let fulls = batteries.compactMap(\.energyFullWh)
        if present, energies.count == batteries.count, fulls.count == batteries.count {
            energyWh = energies.reduce(0, +)
            energyFullWh = fulls.reduce(0, +)
        }
        // One battery: its own level (capacity first). Several: total energy ÷ total full energy, as UPower
        // combines them; a plain mean of their levels when some battery does not report its energy.
        let levels = batteries.compactMap(\.level)
        var energyRatio: Double?
        if let e = energyWh, let f = energyFullWh, f > 0 { energyRatio = min(100, max(0, e / f * 100)) }
        if batteries.count == 1 {
            level = levels.first ?? energyRatio
        } else if let energyRatio {
            level = energyRatio
        } else {
            level = levels.isEmpty ? nil : levels.reduce(0, +) / Double(levels.count)
        }
        fineLevel = energyRatio ?? level
        let rates = batteries.compactMap(\.rateW)
        rateW = present && rates.count == batteries.count ? rates.reduce(0, +) : nil

        let statuses = batteries.map(\.status)
        if statuses.contains(.charging) {
            status = .charging
        } else if statuses.contains(.discharging) {
            status = .discharging
        } else if !statuses.isEmpty, statuses.allSatisfy({ $0 == .full }) {
            status = .full
        } else if statuses.contains(.notCharging) {
            status = .notCharging
        } else {
            status = .unknown
        }
        let externalOnline = supplies.contains { $0.type.isExternal && $0.scope != .device && $0.online == true }
        // A battery that says it is discharging is draining, whatever charger is attached (a weak USB port
        // can be online and still lose the race): trust the battery over the charger.
        onAC = status.impliesExternalPower || (externalOnline && status != .discharging)
    }

    public init(raw: [RawPowerSupply]) {
        self.init(readings: raw.map(PowerSupplyReading.init(raw:)))
    }

    /// The drain the hardware reports right now, in %/h of full capacity, or nil when it cannot be
    /// trusted (on AC, charging, no rate, a rate outside 0.1…300 W).
    public var hardwareDrainPercentPerHour: Double? {
        guard present, !onAC, status == .discharging || status == .unknown,
              let rate = rateW, Self.saneRateW.contains(rate),
              let full = energyFullWh, full > 0 else { return nil }
        return rate / full * 100
    }

    /// A sample for the drain history, or nil without a battery level.
    public func sample(at instant: Date) -> BatterySample? {
        guard present, let level else { return nil }
        return BatterySample(at: instant, level: level, energyWh: energyWh, energyFullWh: energyFullWh,
                             rateW: rateW, onAC: onAC, status: status)
    }
}
