import DoseTapCore
import DoseTapCrypto
import DoseTapTesting
import Foundation
import Testing

/// Our parser against bthome-ble 3.25.0 (the reference Home Assistant uses), on the same inputs.
/// Corpora come from fixed seeds, so a failure names an input that reproduces on every run.
/// Needs `.venv-bthome/` (scripts/bthome-reference.sh); without it these tests fail, they never skip.
@Suite("DIFFERENTIAL: BTHome parser vs bthome-ble")
struct BTHomeDifferentialTests {
    struct Case {
        var mac: BTHomeAddress
        var data: [UInt8]
        var key: String?
        var kind: String
    }

    /// Random and mutated adverts, each parsed on a fresh device by both sides.
    static func statelessCorpus(seed: UInt64, count: Int) throws -> [Case] {
        var rng = SplitMix64(seed: seed)
        let vectors = try BTHomeVectorTests.load().flatMap(\.steps)
        var corpus: [Case] = []
        func randomMAC() -> BTHomeAddress { BTHomeAddress(bytes: rng.bytes(6))! }
        while corpus.count < count {
            let mac = rng.chance(0.3) ? shellyAddress : randomMAC()
            switch rng.int(0...9) {
            case 0, 1: // random bytes behind a plausible (or random) header
                var data = rng.bytes(rng.int(0...24))
                if !data.isEmpty, rng.chance(0.8) { data[0] = rng.pick([0x40, 0x44, 0x41, 0x45, 0x42, 0x43, 0x00, 0x20, 0x60]) }
                corpus.append(Case(mac: mac, data: data, key: rng.chance(0.2) ? rng.pick(differentialKeys) : nil, kind: "random"))
            case 2, 3, 4: // valid plaintext objects, sometimes shuffled, cut or with a garbage tail
                var objects = randomObjects(&rng)
                if rng.chance(0.15) { objects = objects.shuffled(using: &rng) }
                if rng.chance(0.2) { objects += rng.bytes(rng.int(1...4)) }
                if rng.chance(0.15) { objects = Array(objects.prefix(rng.int(0...objects.count))) }
                let embedded = rng.chance(0.1)
                let header: [UInt8] = [rng.pick([0x40, 0x44]) | (embedded ? 0x02 : 0)] + (embedded ? rng.bytes(6) : [])
                corpus.append(Case(mac: mac, data: header + objects, key: rng.chance(0.1) ? differentialKeys[0] : nil, kind: "objects"))
            case 5, 6, 7: // encrypted: the right key, a wrong key or none
                let key = rng.pick(differentialKeys)
                let info: UInt8 = rng.pick([0x41, 0x45, 0x41, 0x43])
                var objects = randomObjects(&rng)
                if rng.chance(0.1) { objects += rng.bytes(rng.int(1...3)) }
                let sealed = BTHomeBindkey(hex: key)!.seal(objects: objects, address: mac, counter: UInt32(truncatingIfNeeded: rng.next()), deviceInfo: info)
                let given: String? = rng.chance(0.8) ? key : rng.chance(0.5) ? nil : rng.pick(differentialKeys)
                corpus.append(Case(mac: mac, data: rng.chance(0.15) ? mutate(sealed, &rng) : sealed, key: given, kind: "encrypted"))
            default: // mutations of the published vectors
                let step = rng.pick(vectors)
                var data = step.data
                for _ in 0..<rng.int(1...3) { data = mutate(data, &rng) }
                corpus.append(Case(mac: BTHomeAddress(step.mac) ?? mac, data: data, key: step.bindkey, kind: "mutated vector"))
            }
        }
        return corpus
    }

    @Test("4000 random, structured, encrypted and mutated adverts: same events, battery, sensors and refusals (seed 0xB70E0E)")
    func stateless() async throws {
        let corpus = try Self.statelessCorpus(seed: 0xB7_0E0E, count: 4000)
        let requests: [[String: Any]] = corpus.enumerated().map { i, c in
            var r: [String: Any] = ["id": i, "mac": c.mac.description, "data": hex(c.data), "time": 1000.0]
            if let key = c.key { r["bindkey"] = key }
            return r
        }
        let answers = try await Reference.run(requests)
        var failures = 0
        var outcomes: [String: Int] = [:]
        for (i, c) in corpus.enumerated() {
            var state = BTHomeDeviceState(address: c.mac, decryptor: c.key.flatMap(BTHomeBindkey.init(hex:)))
            let ours = Observation(ours: state.receive(c.data, at: Date(timeIntervalSince1970: 1000)))
            let reference = Observation(reference: answers[i])
            outcomes[ours.reason ?? "parsed", default: 0] += 1
            if !ours.agrees(with: reference) {
                failures += 1
                if failures <= 25 {
                    Issue.record("case \(i) (\(c.kind)) mac \(c.mac) data \(hex(c.data)) key \(c.key ?? "none"):\n  ours      \(ours)\n  reference \(reference)")
                }
            }
        }
        #expect(failures == 0, "\(failures) of \(corpus.count) disagree")
        // The corpus reaches every outcome that matters.
        for outcome in ["parsed", "truncated", "no_objects", "unknown_object_id", "bad_version", "downgrade",
                        "encrypted_without_key", "mic_mismatch"] {
            #expect(outcomes[outcome, default: 0] >= 10, "only \(outcomes[outcome, default: 0]) × \(outcome): \(outcomes)")
        }
    }

    /// One button's life as a receiver hears it: presses and beacons retransmitted in bursts, gaps
    /// around 4 s, packet ids wrapping, adverts missed while out of range, a battery change that
    /// restarts the counter, and an attacker who replays, forges and downgrades.
    static func sequences(seed: UInt64, count: Int) -> [[(data: [UInt8], key: String?, time: Double)]] {
        var rng = SplitMix64(seed: seed)
        var result: [[(data: [UInt8], key: String?, time: Double)]] = []
        for _ in 0..<count {
            let encrypted = rng.chance(0.6)
            let key = encrypted ? rng.pick(differentialKeys) : nil
            let sealer = key.flatMap(BTHomeBindkey.init(hex:))
            var packetID = UInt8(rng.int(0...255))
            var counter = UInt32(rng.int(100...1_000_000))
            var time = 1000.0
            var sent: [[UInt8]] = []
            var steps: [(data: [UInt8], key: String?, time: Double)] = []
            func advert(_ code: UInt8) -> [UInt8] {
                let buttons: [UInt8] = rng.chance(0.2) ? [0x3A, 0x00, 0x3A, code, 0x3A, 0x00] : [0x3A, code]
                let objects: [UInt8] = [0x00, packetID, 0x01, UInt8(rng.int(50...100))] + buttons
                if let sealer { return sealer.seal(objects: objects, address: shellyAddress, counter: counter, deviceInfo: 0x45) }
                return [0x44] + objects
            }
            for _ in 0..<rng.int(10...50) {
                time += rng.pick([0.02, 0.1, 0.5, 1, 2, 3.5, 3.99, 4.0, 4.01, 4.5, 6, 30, 600]) + Double(rng.int(0...9)) / 1000
                switch rng.int(0...11) {
                case 0...4: // a press or a beacon, retransmitted
                    packetID &+= 1
                    counter += 1
                    let data = advert(rng.chance(0.3) ? 0x00 : rng.pick(buttonCodes))
                    sent.append(data)
                    steps.append((data, key, time))
                    for _ in 0..<rng.int(0...4) {
                        time += Double(rng.int(10...900)) / 1000
                        steps.append((data, key, time))
                    }
                case 5: // out of range for a while: the device went on counting
                    let missed = rng.int(1...300)
                    packetID &+= UInt8(truncatingIfNeeded: missed)
                    counter += UInt32(missed)
                case 6: // the last advert again, late
                    if let last = sent.last { steps.append((last, key, time)) }
                case 7: // an attacker replays an older advert
                    if !sent.isEmpty { steps.append((rng.pick(sent), key, time)) }
                case 8: // an attacker forges: a changed advert, or random bytes behind the header
                    if let last = sent.last, rng.chance(0.5) {
                        steps.append((mutate(last, &rng), key, time))
                    } else {
                        steps.append(([encrypted ? 0x45 : 0x44] + rng.bytes(rng.int(2...14)), key, time))
                    }
                case 9: // a downgrade attempt (or, for a plaintext button, just another press)
                    packetID &+= 1
                    steps.append(([0x44, 0x00, packetID, 0x3A, 0x01], key, time))
                case 10: // battery change: the counter (and packet id) restart
                    if rng.chance(0.05) {
                        counter = UInt32(rng.int(0...99))
                        packetID = UInt8(rng.int(0...255))
                    }
                default: // a clock step of the same advert a moment later
                    if let last = sent.last { steps.append((last, key, time + 0.001)) }
                }
            }
            result.append(steps)
        }
        return result
    }

    @Test("80 button lives, advert by advert: the same events unless a documented difference explains it (seed 0x5EC0)")
    func stateful() async throws {
        let lives = Self.sequences(seed: 0x5EC0, count: 80)
        var requests: [[String: Any]] = []
        for (n, life) in lives.enumerated() {
            for step in life {
                var r: [String: Any] = ["id": requests.count, "device": "life-\(n)", "mac": shellyAddress.description,
                                        "data": hex(step.data), "time": step.time]
                if let key = step.key { r["bindkey"] = key }
                requests.append(r)
            }
        }
        let answers = try await Reference.run(requests)
        var index = 0
        var agreed = 0
        var differences: [String: Int] = [:]
        var pairs: [String: Int] = [:]
        var ourEvents = 0
        var theirEvents = 0
        for (n, life) in lives.enumerated() {
            var state = BTHomeDeviceState(address: shellyAddress, decryptor: life.first?.key.flatMap(BTHomeBindkey.init(hex:)))
            var referenceBefore = ReferenceState()
            for (s, step) in life.enumerated() {
                let before = state
                let reception = state.receive(step.data, at: Date(timeIntervalSince1970: step.time))
                let ours = Observation(ours: reception)
                let reference = Observation(reference: answers[index])
                ourEvents += ours.buttons.count
                theirEvents += reference.buttons.count
                if ours.agrees(with: reference) {
                    agreed += 1
                } else if let difference = documentedDifference(ours: reception, reference: reference, time: step.time,
                                                                ourBefore: before, referenceBefore: referenceBefore) {
                    differences[difference, default: 0] += 1
                    pairs["\(difference): \(ours.reason ?? "parsed") vs \(reference.reason ?? "parsed")", default: 0] += 1
                } else {
                    Issue.record("life \(n) step \(s) t=\(step.time) \(hex(step.data)):\n  ours      \(ours)\n  reference \(reference)\n  our state before: packet \(before.lastPacketID.map { "\($0)" } ?? "nil") heard \(before.lastHeard.map { "\($0.timeIntervalSince1970)" } ?? "nil") counter \(before.lastCounter.map { "\($0)" } ?? "nil"); reference before: \(referenceBefore)")
                }
                referenceBefore = ReferenceState(answers[index]["state"])
                index += 1
            }
        }
        // Most adverts agree exactly; every difference is a documented one, and DoseTap never acts
        // on more presses than the reference.
        #expect(Double(agreed) / Double(requests.count) > 0.9, "agreed \(agreed) of \(requests.count); differences \(differences) \(pairs) events \(ourEvents) \(theirEvents)")
        #expect(ourEvents <= theirEvents)
        #expect(differences.count >= 1, "the lives should exercise the documented differences: \(differences)")
    }
}
