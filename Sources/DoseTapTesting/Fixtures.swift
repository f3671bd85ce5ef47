import DoseTapCore
import Foundation

/// The recorded hardware in `hw-fixtures/`.
public enum Fixtures {
    /// The package root, found from this file's location.
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    public static let root = packageRoot.appendingPathComponent("hw-fixtures")

    /// `hw-fixtures/power_supply/*.umockdev`, sorted by name.
    public static func powerSupplyScenarios() throws -> [PowerSupplyScenario] {
        let dir = root.appendingPathComponent("power_supply")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasSuffix(".umockdev") }
            .sorted()
        return try names.map { name in
            let base = String(name.dropLast(".umockdev".count))
            return PowerSupplyScenario(
                name: base,
                umockdev: try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8),
                umockdevPath: dir.appendingPathComponent(name).path,
                expected: try JSONSerialization.jsonObject(
                    with: Data(contentsOf: dir.appendingPathComponent(base + ".expected.json"))) as? [String: Any] ?? [:]
            )
        }
    }

    /// `hw-fixtures/traces/NAME.csv` with its `NAME.meta.json`.
    public static func trace(_ name: String) throws -> DischargeTrace {
        let dir = root.appendingPathComponent("traces")
        let csv = try String(contentsOf: dir.appendingPathComponent(name + ".csv"), encoding: .utf8)
        let metaData = try Data(contentsOf: dir.appendingPathComponent(name + ".meta.json"))
        return try DischargeTrace(name: name, csv: csv, meta: metaData)
    }
}

public struct PowerSupplyScenario: @unchecked Sendable, CustomStringConvertible {
    public var name: String
    public var umockdev: String
    public var umockdevPath: String
    /// The decoded `NAME.expected.json`.
    public var expected: [String: Any]
    public var description: String { name }
}

/// A recorded (or generated) discharge: one row per sample.
public struct DischargeTrace: Sendable {
    public struct Row: Sendable {
        public var seconds: Double
        public var capacity: Double?
        public var energyNowWh: Double?
        public var energyFullWh: Double?
        public var powerW: Double?
        public var status: String
    }

    public var name: String
    public var rows: [Row]
    /// (from seconds, to seconds, true drain %/h)
    public var trueDrain: [(Double, Double, Double)]

    public init(name: String, csv: String, meta: Data) throws {
        self.name = name
        var lines = csv.split(whereSeparator: \.isNewline).map(String.init)
        guard !lines.isEmpty else { throw FixtureError("\(name).csv is empty") }
        let header = lines.removeFirst().split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        func column(_ key: String) throws -> Int {
            guard let i = header.firstIndex(of: key) else { throw FixtureError("\(name).csv has no column \(key)") }
            return i
        }
        let (cs, cc, ce, cf, cp, cst) = (try column("seconds"), try column("capacity"), try column("energy_now_uwh"),
                                         try column("energy_full_uwh"), try column("power_now_uw"), try column("status"))
        rows = try lines.map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count == header.count, let seconds = Double(f[cs]) else { throw FixtureError("bad row in \(name).csv: \(line)") }
            return Row(seconds: seconds, capacity: Double(f[cc]), energyNowWh: Double(f[ce]).map { $0 / 1e6 },
                       energyFullWh: Double(f[cf]).map { $0 / 1e6 }, powerW: Double(f[cp]).map { $0 / 1e6 },
                       status: f[cst])
        }
        let object = try JSONSerialization.jsonObject(with: meta) as? [String: Any]
        let ranges = object?["trueDrainPercentPerHour"] as? [[Double]] ?? []
        trueDrain = ranges.compactMap { $0.count == 3 ? ($0[0], $0[1], $0[2]) : nil }
    }

    public func trueDrain(at seconds: Double) -> Double? {
        trueDrain.first { seconds >= $0.0 && seconds <= $0.1 }?.2
    }

    /// The row as the sysfs attributes a kernel would show.
    public func raw(_ row: Row) -> RawPowerSupply {
        var a: [String: String] = ["type": "Battery", "present": "1", "status": row.status]
        if let c = row.capacity { a["capacity"] = String(Int(c)) }
        if let e = row.energyNowWh { a["energy_now"] = String(Int((e * 1e6).rounded())) }
        if let f = row.energyFullWh { a["energy_full"] = String(Int((f * 1e6).rounded())) }
        if let p = row.powerW { a["power_now"] = String(Int((p * 1e6).rounded())) }
        return RawPowerSupply(name: "BAT0", attributes: a)
    }
}

public struct FixtureError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Fixtures {
    /// "40 00 07" or "400007" → bytes; anything else (odd length, a non-hex digit) is an error.
    public static func hexBytes(_ text: String) throws -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }
        guard digits.count.isMultiple(of: 2), digits.allSatisfy(\.isHexDigit) else { throw FixtureError("not hex bytes: '\(text)'") }
        var out: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            out.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        return out
    }
}
