// libFuzzer target: the sysfs reading parser (`PowerSupplyReading(raw:)`) and the combination of
// supplies (`PowerState`). The input is text, one attribute a line as sysfs would show it:
//
//     [BAT0]                   a new supply named BAT0 (the first line may omit it)
//     type=Battery
//     energy_now=15120000
//
// The seeds in Fuzz/corpus/power-supply are the hw-fixtures/power_supply/*.umockdev devices written
// this way. Besides "never crash", a reading must be sane: no NaN or infinite value, a level in 0…100,
// a rate within the absurd-rate limit, energy now never above full.
import DoseTapCore
import DoseTapFuzzSupport
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPowerSupply(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: FuzzInput(data, size).bytes, as: UTF8.self)
    var supplies: [RawPowerSupply] = []
    var current = RawPowerSupply(name: "BAT0", attributes: [:])
    var started = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("["), line.hasSuffix("]") {
            if started { supplies.append(current) }
            current = RawPowerSupply(name: String(line.dropFirst().dropLast()), attributes: [:])
            started = true
        } else if let equals = line.firstIndex(of: "=") {
            current.attributes[String(line[..<equals])] = String(line[line.index(after: equals)...])
            started = true
        }
    }
    if started { supplies.append(current) }

    let state = PowerState(raw: supplies)
    for reading in state.supplies { check(reading) }
    check("level", state.level, in: 0...100)
    check("fine level", state.fineLevel, in: 0...100)
    check("energy", state.energyWh, in: 0...Double.greatestFiniteMagnitude)
    check("full energy", state.energyFullWh, in: 0...Double.greatestFiniteMagnitude)
    check("rate", state.rateW, in: 0...Double.greatestFiniteMagnitude)
    check("drain", state.hardwareDrainPercentPerHour, in: 0...Double.greatestFiniteMagnitude)
    if let sample = state.sample(at: Date(timeIntervalSince1970: 1_700_000_000)) {
        check("sample level", sample.level, in: 0...100)
    }
    return 0
}

private func check(_ reading: PowerSupplyReading) {
    check("\(reading.name) level", reading.level, in: 0...100)
    check("\(reading.name) energy", reading.energyWh, in: 0...Double.greatestFiniteMagnitude)
    check("\(reading.name) full energy", reading.energyFullWh, in: 0...Double.greatestFiniteMagnitude)
    check("\(reading.name) design energy", reading.energyFullDesignWh, in: 0...Double.greatestFiniteMagnitude)
    check("\(reading.name) rate", reading.rateW, in: 0...PowerSupplyReading.absurdRateW)
    check("\(reading.name) voltage", reading.voltageV, in: 0...Double.greatestFiniteMagnitude)
    if let now = reading.energyWh, let full = reading.energyFullWh {
        fuzzCheck(now <= full, "\(reading.name): energy now \(now) above full \(full)")
    }
}

private func check(_ what: String, _ value: Double?, in range: ClosedRange<Double>) {
    guard let value else { return }
    fuzzCheck(range.contains(value), "\(what) is \(value), outside \(range)")
}
