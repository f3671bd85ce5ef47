import DoseTapCore
import DoseTapCrypto
import DoseTapTesting
import Foundation
import Testing

/// Every advert of bthome-ble's own v2 test suite and the bthome.io encryption examples
/// (hw-fixtures/bthome/bthome-ble-vectors.json), replayed in order, one device per upstream test,
/// through BTHomeDeviceState. Each step must agree with the reference's parse (events, battery,
/// sensors, refusal) or differ in one of the documented ways.
@Suite("Published BTHome vectors")
struct BTHomeVectorTests {
    struct VectorTest: CustomStringConvertible, Sendable {
        var name: String
        var source: String
        var steps: [Step]
        var description: String { name }
    }

    struct Step: Sendable {
        var mac: String
        var data: [UInt8]
        var bindkey: String?
        var time: Double
        var expect: String // the reference's answer, as JSON (kept as text so the value is Sendable)
    }

    static func load() throws -> [VectorTest] {
        let file = try ButtonFixtures.json("bthome-ble-vectors.json")
        return try (file["tests"] as? [[String: Any]] ?? []).map { test in
            let steps = try (test["steps"] as? [[String: Any]] ?? []).map { step in
                Step(mac: step["mac"] as! String, data: bytes(step["data"] as! String), bindkey: step["bindkey"] as? String,
                     time: (step["time"] as! NSNumber).doubleValue,
                     expect: String(decoding: try JSONSerialization.data(withJSONObject: step["expect"]!), as: UTF8.self))
            }
            return VectorTest(name: test["name"] as! String, source: test["source"] as! String, steps: steps)
        }
    }

    @Test("the fixture holds the upstream suite (100+ tests) and the spec's encryption examples")
    func coverage() throws {
        let tests = try Self.load()
        #expect(tests.count >= 100)
        #expect(tests.contains { $0.source.contains("bthome.io/encryption") })
        let all = tests.flatMap(\.steps)
        #expect(all.contains { $0.data.first.map { $0 & 1 == 1 } ?? false }) // encrypted ones
        #expect(all.contains { $0.data.count > 3 && $0.data.filter { $0 == 0x3A }.count >= 3 }) // multi-button
    }

    @Test("each upstream test, step by step", arguments: try BTHomeVectorTests.load())
    func replay(_ test: VectorTest) throws {
        let address = try #require(BTHomeAddress(test.steps[0].mac))
        var state = BTHomeDeviceState(address: address)
        var keyText: String?
        var referenceBefore = ReferenceState()
        for (i, step) in test.steps.enumerated() {
            if step.bindkey != keyText {
                keyText = step.bindkey
                state.decryptor = step.bindkey.flatMap(BTHomeBindkey.init(hex:))
            }
            let expect = try JSONSerialization.jsonObject(with: Data(step.expect.utf8)) as! [String: Any]
            let reference = Observation(reference: expect)
            let before = state
            let reception = state.receive(step.data, at: Date(timeIntervalSince1970: step.time))
            let ours = Observation(ours: reception)
            if !ours.agrees(with: reference) {
                let difference = documentedDifference(ours: reception, reference: reference, time: step.time,
                                                      ourBefore: before, referenceBefore: referenceBefore)
                #expect(difference != nil, "\(test.source) step \(i) \(hex(step.data)):\n  ours      \(ours)\n  reference \(reference)")
            }
            referenceBefore = ReferenceState(expect["state"])
        }
    }

    @Test("the bthome.io examples decrypt to the published values")
    func specExamples() throws {
        var temperature = BTHomeDeviceState(address: specAddress, decryptor: specKey)
        guard case .accepted(let a) = temperature.receive(bytes("41a47266c95f730011223378237214"), at: at(0)) else {
            Issue.record("example 1 refused"); return
        }
        #expect(a.objects.map(\.value) == [.number(25.06), .number(50.55)])
        var motion = BTHomeDeviceState(address: specAddress, decryptor: specKey)
        guard case .accepted(let b) = motion.receive(bytes("4187b90011223372b0231f"), at: at(0)) else {
            Issue.record("example 2 refused"); return
        }
        #expect(b.objects.map(\.name) == ["motion"])
        #expect(b.objects.map(\.value) == [.flag(true)])
    }
}
