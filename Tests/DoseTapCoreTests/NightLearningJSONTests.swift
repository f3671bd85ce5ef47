@testable import DoseTapCore
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// The store's night learning is read without `JSONDecoder` (#29, `NightLearning(json:)`): what the agent writes
/// with `JSONEncoder` must come back whole, and a damaged copy must be refused where `JSONDecoder` refuses it and
/// read where it reads it.
@Suite("night learning: read back as JSONDecoder reads it")
struct NightLearningJSONTests {
    static func learning(_ rng: inout SplitMix64) -> NightLearning {
        let observations = (0..<Int.random(in: 0...SleepDrainModel.kept, using: &rng)).map { i in
            SleepDrainObservation(at: Date(timeIntervalSince1970: 1_790_000_000 + Double(i) * 86_400 + Double.random(in: 0..<86_400, using: &rng)),
                                  hours: Double.random(in: 0.5...14, using: &rng), percentPerHour: Double.random(in: 0...30, using: &rng))
        }
        let nights = (0..<Int.random(in: 0...SleepHabits.kept, using: &rng)).map { i in
            let (y, m, d) = CivilTime.date(days: 20_000 + i)
            let from = Int.random(in: 0...720, using: &rng)
            return NightRecord(night: "\(y.zeroPadded(4))-\(m.zeroPadded(2))-\(d.zeroPadded(2))", awakeFrom: from,
                               awakeUntil: Int.random(in: from...720, using: &rng),
                               onset: Bool.random(using: &rng) ? Int.random(in: 0...720, using: &rng) : nil)
        }
        var conditions: NightConditions?
        if Bool.random(using: &rng) {
            conditions = NightConditions(canWake: Bool.random(using: &rng),
                                         sleepBlockedBy: Bool.random(using: &rng) ? [] : ["GNOME Shell", "firefox \u{1B}[31m", "é"],
                                         lidSwitch: Bool.random(using: &rng) ? "suspend" : nil,
                                         idleAction: Bool.random(using: &rng) ? "ignore" : nil,
                                         idleActionSeconds: Bool.random(using: &rng) ? Double.random(in: 0...7200, using: &rng) : nil,
                                         goingToSleep: Bool.random(using: &rng))
        }
        return NightLearning(sleepDrain: SleepDrainModel(observations: observations), habits: SleepHabits(nights: nights), conditions: conditions)
    }

    static func viaFoundation(_ text: String) -> NightLearning? {
        try? JSONDecoder().decode(NightLearning.self, from: Data(text.utf8))
    }

    @Test("whatever the agent learned and wrote with JSONEncoder: read back whole, as JSONDecoder reads it")
    func roundTrip() async throws {
        #expect(NightLearning(storedText: String(decoding: try JSONEncoder().encode(NightLearning()), as: UTF8.self)) == NightLearning())
        await propertyCheck(count: 300, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            let learning = Self.learning(&rng)
            let text = String(decoding: try! JSONEncoder().encode(learning), as: UTF8.self)
            #expect(NightLearning(storedText: text) == learning, "\(seed)")
            #expect(Self.viaFoundation(text) == learning)
        }
    }

    /// Damage done to one member of a stored document.
    static let damages: [(String, @Sendable (inout [String: Any]) -> Void)] = [
        ("sleepDrain missing", { $0["sleepDrain"] = nil }),
        ("habits null", { $0["habits"] = NSNull() }),
        ("conditions missing", { $0["conditions"] = nil }),
        ("conditions null", { $0["conditions"] = NSNull() }),
        ("conditions a string", { $0["conditions"] = "yes" }),
        ("an unknown key", { $0["future"] = ["x": 1] }),
        ("observations a number", { $0["sleepDrain"] = ["observations": 3] }),
        ("an observation's hours a string", { $0["sleepDrain"] = ["observations": [["at": 800_000_000, "hours": "7", "percentPerHour": 1.5]]] }),
        ("an observation without its rate", { $0["sleepDrain"] = ["observations": [["at": 800_000_000, "hours": 7]]] }),
        ("a night's minute a fraction", { $0["habits"] = ["nights": [["night": "2026-11-30", "awakeFrom": 1.5, "awakeUntil": 700]]] }),
        ("a night's minute a boolean", { $0["habits"] = ["nights": [["night": "2026-11-30", "awakeFrom": true, "awakeUntil": 700]]] }),
        ("a night's onset null", { $0["habits"] = ["nights": [["night": "2026-11-30", "awakeFrom": 1, "awakeUntil": 700, "onset": NSNull()]]] }),
        ("a night's onset a string", { $0["habits"] = ["nights": [["night": "2026-11-30", "awakeFrom": 1, "awakeUntil": 700, "onset": "1"]]] }),
        ("a night's name a number", { $0["habits"] = ["nights": [["night": 20_261_130, "awakeFrom": 1, "awakeUntil": 700]]] }),
        ("canWake a number", { $0["conditions"] = ["canWake": 1, "sleepBlockedBy": [], "goingToSleep": false] }),
        ("a blocker a number", { $0["conditions"] = ["canWake": true, "sleepBlockedBy": [3], "goingToSleep": false] }),
        ("goingToSleep missing", { $0["conditions"] = ["canWake": true, "sleepBlockedBy": []] }),
        ("idleActionSeconds a string", { $0["conditions"] = ["canWake": true, "sleepBlockedBy": [], "goingToSleep": false, "idleActionSeconds": "60"] }),
        ("lidSwitch null", { $0["conditions"] = ["canWake": true, "sleepBlockedBy": [], "goingToSleep": false, "lidSwitch": NSNull()] }),
    ]

    @Test("a damaged copy: refused where JSONDecoder refuses it, the same learning where it reads it", arguments: 0..<damages.count)
    func damaged(index: Int) throws {
        var rng = SplitMix64(seed: UInt64(index) + 7)
        var learning = Self.learning(&rng)
        learning.conditions = NightConditions()
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(learning)) as? [String: Any])
        Self.damages[index].1(&object)
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        #expect(NightLearning(storedText: text) == Self.viaFoundation(text), "\(Self.damages[index].0): \(text)")
    }

    @Test("not JSON, not an object, empty: nothing read")
    func notADocument() {
        for text in ["", "null", "[]", "{}", "{\"sleepDrain\":{\"observations\":[]}}", "not json", "{\"sleepDrain\":"] {
            #expect(NightLearning(storedText: text) == nil, "\(text)")
            #expect(Self.viaFoundation(text) == nil, "\(text)")
        }
    }
}
