import DoseTapCore
import DoseTapCrypto
import DoseTapTesting
import Foundation
import Subprocess
import SystemPackage
import Testing

// MARK: - Bytes

func bytes(_ hex: String) -> [UInt8] {
    do { return try Fixtures.hexBytes(hex) } catch { preconditionFailure("\(error)") }
}

func hex(_ data: some Sequence<UInt8>) -> String { data.map { String(format: "%02x", $0) }.joined() }

let specKey = BTHomeBindkey(hex: "231d39c1d7cc1ab1aee224cd096db932")!
let specAddress = BTHomeAddress("54:48:E6:8F:80:A5")!
let shellyAddress = BTHomeAddress("A4:C1:38:8D:18:B2")!

/// A fixed point in time, plus seconds.
func at(_ seconds: TimeInterval) -> Date { Date(timeIntervalSinceReferenceDate: 800_000_000 + seconds) }

// MARK: - Deterministic randomness (SplitMix64): the differential corpora are the same on every run.

// SplitMix64 lives in DoseTapTesting (the core tests use it too).

// MARK: - JSON fixtures

enum ButtonFixtures {
    static var directory: URL { Fixtures.root.appendingPathComponent("bthome") }

    static func json(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw FixtureError("\(name) is not a JSON object")
        }
        return object
    }
}

// MARK: - The reference parser (bthome-ble in .venv-bthome, driven by hw-fixtures/bthome/reference.py)

enum Reference {
    static let setupScript = "scripts/bthome-reference.sh"
    /// The pinned version (hw-fixtures/bthome/reference-requirements.txt).
    static let version = "3.25.0"

    /// The venv's python. Missing → the test fails (never skips), naming the script that sets it up.
    static func python() throws -> String {
        if let path = ProcessInfo.processInfo.environment["DOSETAP_BTHOME_PYTHON"] { return path }
        let path = Fixtures.packageRoot.appendingPathComponent(".venv-bthome/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError("the reference parser is not set up: run \(setupScript) (it creates .venv-bthome/ with bthome-ble 3.25.0); \(path) is missing")
        }
        return path
    }

    /// Runs every request through the driver in one process; one result per request, in order.
    static func run(_ requests: [[String: Any]]) async throws -> [[String: Any]] {
        let python = try python()
        let driver = ButtonFixtures.directory.appendingPathComponent("reference.py").path
        var input = "{\"op\": \"version\"}\n"
        for request in requests {
            let line = try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
            input += String(decoding: line, as: UTF8.self) + "\n"
        }
        let result = try await Subprocess.run(
            .path(FilePath(python)), arguments: [driver], input: .string(input),
            output: .string(limit: 64 << 20), error: .string(limit: 1 << 20))
        guard case .exited(0) = result.terminationStatus else {
            throw FixtureError("\(driver) failed (\(result.terminationStatus)): \(result.standardError)")
        }
        var lines = result.standardOutput.split(separator: "\n")
        guard let first = lines.first, first.contains("\"version\": \"\(version)\"") else {
            throw FixtureError("the reference venv does not hold bthome-ble \(version) (\(lines.first ?? "no answer")): rerun \(setupScript)")
        }
        lines.removeFirst()
        guard lines.count == requests.count else {
            throw FixtureError("\(driver) answered \(lines.count) lines for \(requests.count) requests: \(result.standardError)")
        }
        return try lines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw FixtureError("bad reference line: \(line)")
            }
            if object["outcome"] as? String == "error" { throw FixtureError("reference rejected a request: \(line)") }
            return object
        }
    }
}

// MARK: - One parse, in the reference's terms

/// The observable parse of one advert: what the differential and vector tests compare.
struct Observation: Equatable, CustomStringConvertible {
    var outcome: String            // "parsed" or "rejected"
    var reason: String?            // our cause or the reference's reason
    var buttons: [Int: String]     // index → event name (events only, as bthome-ble fires them)
    var battery: Double?
    var sensors: [String: SensorValue]
    var binary: [String: Bool]

    enum SensorValue: Equatable, CustomStringConvertible {
        case number(Double)
        case text(String)
        var description: String {
            switch self {
            case .number(let n): "\(n)"
            case .text(let t): "\"\(t)\""
            }
        }
    }

    var description: String {
        let b = buttons.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        let s = sensors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        let f = binary.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return "\(outcome)\(reason.map { "(\($0))" } ?? "") buttons[\(b)] battery=\(battery.map { "\($0)" } ?? "nil") sensors[\(s)] binary[\(f)]"
    }

    /// The reference's answer, as reported by reference.py.
    init(reference r: [String: Any]) {
        outcome = r["outcome"] as? String ?? "?"
        reason = r["reason"] as? String
        if reason == "no_objects", let stopped = r["stopped"] as? String { reason = "no_objects+\(stopped)" }
        buttons = [:]
        for pair in r["buttons"] as? [[Any]] ?? [] {
            if let index = pair[0] as? Int, let name = pair[1] as? String { buttons[index] = name }
        }
        battery = (r["battery"] as? NSNumber)?.doubleValue
        sensors = [:]
        for (key, value) in r["sensors"] as? [String: Any] ?? [:] {
            if let n = value as? NSNumber { sensors[key] = .number(n.doubleValue) } else if let t = value as? String { sensors[key] = .text(t) }
        }
        binary = [:]
        for (key, value) in r["binary"] as? [String: Any] ?? [:] { binary[key] = (value as? NSNumber)?.boolValue }
    }

    /// Our answer for one advert, named the way bthome-ble names things.
    init(ours advert: BTHomeAdvert) {
        outcome = "parsed"
        reason = nil
        buttons = advert.events.mapValues(\.name)
        battery = advert.battery.map(Double.init)
        (sensors, binary) = Observation.referenceKeys(advert.objects)
    }

    init(rejected cause: String) {
        outcome = "rejected"
        reason = cause
        buttons = [:]
        battery = nil
        sensors = [:]
        binary = [:]
    }

    init(ours reception: BTHomeReception) {
        switch reception {
        case .accepted(let advert): self.init(ours: advert)
        case .duplicate(.packetID): self.init(rejected: "duplicate_packet")
        case .duplicate(.retransmission): self.init(rejected: "retransmission")
        case .rejected(let rejection): self.init(rejected: rejection.cause)
        }
    }

    /// bthome-ble's sensor keys: the device class, with _1, _2, ... when one kind (same name and
    /// unit) appears more than once in the advert; binary sensors apart. Buttons, dimmers, commands
    /// and device information (F0–F2) are not sensors.
    static func referenceKeys(_ objects: [BTHomeObject]) -> ([String: SensorValue], [String: Bool]) {
        struct Kind: Hashable { var binary: Bool; var name: String; var unit: String? }
        let measured = objects.filter { ![0x3A, 0x3B, 0x3C, 0xF0, 0xF1, 0xF2].contains($0.id) }
        func kind(_ o: BTHomeObject) -> Kind {
            if case .flag = o.value { return Kind(binary: true, name: o.name, unit: nil) }
            return Kind(binary: false, name: o.name, unit: o.unit)
        }
        var counts: [Kind: Int] = [:]
        for o in measured { counts[kind(o), default: 0] += 1 }
        var seen: [Kind: Int] = [:]
        var sensors: [String: SensorValue] = [:]
        var binary: [String: Bool] = [:]
        for o in measured {
            let k = kind(o)
            var key = o.name
            if counts[k]! > 1 {
                seen[k, default: 0] += 1
                key += "_\(seen[k]!)"
            }
            switch o.value {
            case .flag(let f): binary[key] = f
            case .number(let n): sensors[key] = .number(n)
            case .text(let t): sensors[key] = .text(t)
            case .bytes(let b): sensors[key] = .text(hex(b))
            case .timestamp(let d): sensors[key] = .text(referenceDate(d))
            case .button: break
            }
        }
        return (sensors, binary)
    }

    /// Python's str(datetime) of a UTC timestamp: "2023-05-14 19:41:17+00:00".
    static func referenceDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d+00:00", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// Our causes and the reference's reasons for the same refusal.
    static let sameRefusal: [String: Set<String>] = [
        "truncated": ["truncated", "exception:IndexError", "no_objects+truncated_object"],
        "no_objects": ["no_objects"],
        "unknown_object_id": ["no_objects+unknown_object_id"],
        "bad_version": ["bad_version"],
        "downgrade": ["downgrade"],
        // A bindkey that is not 16 bytes cannot be built here (`dosetap button add` refuses it), so
        // the device has no key: bthome-ble's "bad key length" is our "no key".
        "encrypted_without_key": ["encrypted_without_key", "bad_key_length"],
        "mic_mismatch": ["mic_mismatch"],
        "replayed_counter": ["replayed_counter"],
        "duplicate_packet": ["duplicate_packet"],
        "retransmission": ["duplicate_advert", "duplicate_packet"],
    ]

    /// Agreement: the same outcome, the same refusal (in each side's words), the same button events
    /// and battery, and the same sensor values. Text sensors are left out (bthome-ble counts
    /// undecodable text when numbering keys, we drop it).
    func agrees(with reference: Observation) -> Bool {
        guard outcome == reference.outcome else { return false }
        if outcome == "rejected" {
            return Observation.sameRefusal[reason ?? ""]?.contains(reference.reason ?? "") ?? false
        }
        guard buttons == reference.buttons, battery == reference.battery, binary == reference.binary else { return false }
        let ours = sensors.filter { !$0.key.hasPrefix("text") }
        let theirs = reference.sensors.filter { !$0.key.hasPrefix("text") }
        guard Set(ours.keys) == Set(theirs.keys) else { return false }
        for (key, value) in ours {
            switch (value, theirs[key]!) {
            case (.number(let a), .number(let b)):
                if abs(a - b) > 1e-6 * max(1, abs(b)) { return false }
            case (.text(let a), .text(let b)):
                if a != b { return false }
            default:
                return false
            }
        }
        return true
    }
}

// MARK: - Stateful comparison with the reference

/// bthome-ble's replay-protection state, as reference.py reports it after each advert.
struct ReferenceState {
    var packetID: Int?
    var lastTime: Double?
    var counter: Double = 0
    var verified = false

    init() {}
    init(_ dictionary: Any?) {
        guard let d = dictionary as? [String: Any] else { return }
        packetID = d["packet_id"] as? Int
        lastTime = (d["last_time"] as? NSNumber)?.doubleValue
        counter = (d["counter"] as? NSNumber)?.doubleValue ?? 0
        verified = d["bindkey_verified"] as? Bool ?? false
    }
}

/// The deliberate differences between BTHomeDeviceState and bthome-ble 3.25.0 (docs/bthome.md,
/// "Where DoseTap differs"). Given a disagreement on one advert, returns the difference that
/// explains it, or nil when nothing documented does (a failure).
func documentedDifference(ours: BTHomeReception, reference: Observation, time: Double,
                          ourBefore: BTHomeDeviceState, referenceBefore: ReferenceState) -> String? {
    let ourPacketID = ourBefore.lastPacketID.map(Int.init)
    let ourHeard = ourBefore.lastHeard.map { $0.timeIntervalSince1970 }
    switch (ours, reference.outcome, reference.reason) {
    case (.duplicate(.retransmission), "parsed", _):
        // D1: an encrypted advert byte-identical to one already seen under the same counter is never
        // acted on again; bthome-ble only skips it when it is the very last one and > 4 s later.
        return "D1 retransmission"
    case (.rejected(.replayedCounter(let counter, _)), "parsed", _)
        where counter < 100 || !referenceBefore.verified || Double(counter) >= referenceBefore.counter:
        // D2: bthome-ble takes a counter below 100 as a device restart (and skips the check after two
        // failed decryptions); DoseTap refuses any lower counter until the button is re-added.
        return "D2 counter restart"
    case (.duplicate(.packetID), "parsed", _)
        where referenceBefore.lastTime.map { time - $0 > 4 } ?? true || referenceBefore.packetID != ourPacketID:
        // D3: DoseTap's 4 s of silence start at the last advert heard (duplicates included);
        // bthome-ble's at the last one it parsed. Once they disagree, their last packet ids may too.
        return "D3 silence timer"
    case (.accepted, "rejected", "duplicate_packet")
        where ourHeard.map { time - $0 > 4 } ?? true || referenceBefore.packetID != ourPacketID:
        // D3, the other way: bthome-ble's timer also restarts on adverts that fail to decrypt.
        return "D3 silence timer"
    case (.rejected(.micMismatch), "rejected", "replayed_counter"), (.rejected(.truncated), "rejected", "replayed_counter"):
        // D5: DoseTap checks the length and the MIC before it looks at the counter; bthome-ble reads
        // a counter from any 8 trailing bytes first.
        return "D5 authenticity before counter"
    case (.duplicate, "rejected", let reason?) where ["replayed_counter", "duplicate_advert", "duplicate_packet"].contains(reason),
         (.rejected(.replayedCounter), "rejected", let reason?) where ["duplicate_packet", "duplicate_advert"].contains(reason):
        // Both refuse for a replay-protection reason: the same outcome, named after a different check.
        return "both refuse"
    default:
        return nil
    }
}

// MARK: - Random valid objects

/// Data lengths of the fixed-length BTHome v2 objects (bthome.io/format, as bthome-ble 3.25.0 reads
/// them), transcribed here independently of the parser's table. 0x3B (command), 0x53 (text) and
/// 0x54 (raw) carry a length byte instead.
let fixedObjectLengths: [UInt8: Int] = {
    var table: [UInt8: Int] = [:]
    for id in [0x00, 0x01, 0x09, 0x2E, 0x2F, 0x3A, 0x46, 0x57, 0x58, 0x59, 0x60, 0x64, 0x65] { table[UInt8(id)] = 1 }
    for id in 0x0F...0x11 { table[UInt8(id)] = 1 }
    for id in 0x15...0x2D { table[UInt8(id)] = 1 }
    for id in [0x02, 0x03, 0x06, 0x07, 0x08, 0x0C, 0x0D, 0x0E, 0x12, 0x13, 0x14, 0x3C, 0x3D, 0x3F, 0x40, 0x41, 0x43, 0x44,
               0x45, 0x47, 0x48, 0x49, 0x4A, 0x51, 0x52, 0x56, 0x5A, 0x5D, 0x5E, 0x5F, 0x61, 0xF0] { table[UInt8(id)] = 2 }
    for id in [0x04, 0x05, 0x0A, 0x0B, 0x42, 0x4B, 0xF2] { table[UInt8(id)] = 3 }
    for id in [0x3E, 0x4C, 0x4D, 0x4E, 0x4F, 0x50, 0x55, 0x5B, 0x5C, 0x62, 0x63, 0xF1] { table[UInt8(id)] = 4 }
    return table
}()

let buttonCodes: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x80, 0x81, 0x07, 0xFE]

/// One valid object (id and data) of a random known kind; buttons and batteries are favoured.
func randomObject(_ rng: inout SplitMix64) -> [UInt8] {
    let favourite: [UInt8] = [0x00, 0x01, 0x3A, 0x3A, 0x02, 0x03, 0x45, 0x2E, 0x05, 0x0C, 0x2D, 0x3F, 0x21, 0x11]
    let id: UInt8
    if rng.chance(0.6) { id = rng.pick(favourite) } else if rng.chance(0.1) { id = rng.pick([0x3B, 0x53, 0x54]) } else {
        id = rng.pick(Array(fixedObjectLengths.keys).sorted())
    }
    switch id {
    case 0x3A: return [id, rng.pick(buttonCodes)]
    case 0x01: return [id, UInt8(rng.int(0...100))]
    case 0x3B:
        let args = rng.int(0...3)
        return [id, UInt8(args)] + rng.bytes(1 + args)
    case 0x53:
        let text = rng.pick(["", "Hi", "DoseTap", "é", "\u{1F48A}"])
        return [id, UInt8(text.utf8.count)] + Array(text.utf8)
    case 0x54:
        let n = rng.int(0...5)
        return [id, UInt8(n)] + rng.bytes(n)
    default:
        return [id] + rng.bytes(fixedObjectLengths[id]!)
    }
}

/// A few valid objects, in ascending id order (how devices must send them).
func randomObjects(_ rng: inout SplitMix64, count: ClosedRange<Int> = 1...6) -> [UInt8] {
    (0..<rng.int(count)).map { _ in randomObject(&rng) }.sorted { $0[0] < $1[0] }.flatMap { $0 }
}

/// One random change: flip a bit, set a byte, insert, delete, truncate, or append.
func mutate(_ data: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
    var d = data
    switch rng.int(0...5) {
    case 0 where !d.isEmpty: let i = rng.int(0...(d.count - 1)); d[i] ^= UInt8(1) << UInt8(rng.int(0...7))
    case 1 where !d.isEmpty: d[rng.int(0...(d.count - 1))] = rng.byte()
    case 2: d.insert(rng.byte(), at: rng.int(0...d.count))
    case 3 where !d.isEmpty: d.remove(at: rng.int(0...(d.count - 1)))
    case 4: d = Array(d.prefix(rng.int(0...d.count)))
    default: d += rng.bytes(rng.int(1...4))
    }
    return d
}

let differentialKeys = [
    "231d39c1d7cc1ab1aee224cd096db932", "814aac74c4f17b6c1581e1ab87816b99", "00112233445566778899aabbccddeeff",
]
