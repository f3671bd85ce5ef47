import DoseTapCore
import DoseTapTesting
import DoseTapCrypto
import Foundation
import PropertyBased
import Testing

/// Garbage never crashes the parser, and the safety rules hold over random streams. PropertyBased
/// reports the seed of a failing case (`.fixedSeed(...)` reproduces it); structured inputs are
/// built from a generated UInt64 with SplitMix64, so the reported seed is enough.
@Suite("BTHome properties")
struct BTHomePropertyTests {
    static let headers: [UInt8] = [0x40, 0x44, 0x41, 0x45, 0x42, 0x43]

    func check(_ result: Result<BTHomeAdvert, BTHomeRejection>, length: Int) {
        guard case .success(let a) = result else { return }
        #expect(!a.objects.isEmpty)
        #expect(a.objects.map(\.offset) == a.objects.map(\.offset).sorted())
        #expect(Set(a.objects.map(\.offset)).count == a.objects.count)
        #expect(a.objects.allSatisfy { $0.offset < length })
        #expect(a.events.allSatisfy { a.buttons[$0.key] == $0.value && $0.value.isEvent })
        #expect(a.deviceInfo.version == 2)
        #expect((a.encryptionCounter != nil) == a.deviceInfo.isEncrypted)
    }

    @Test("random bytes: a result or a rejection, never a crash")
    func randomBytes() async {
        await propertyCheck(count: 3000, input: Gen.uint8().array(of: 0...40), Gen.int(in: 0...7), Gen.bool) { data, header, keyed in
            var d = data
            if header < Self.headers.count, !d.isEmpty { d[0] = Self.headers[header] }
            let key: BTHomeBindkey? = keyed ? specKey : nil
            check(BTHome.parse(d, address: shellyAddress, decryptor: key), length: d.count)
            var state = BTHomeDeviceState(address: shellyAddress, decryptor: key)
            _ = state.receive(d, at: at(0))
            _ = state.receive(d, at: at(1))
        }
    }

    @Test("mutated valid adverts (plaintext and encrypted): never a crash; a changed encrypted advert is never accepted")
    func mutations() async {
        await propertyCheck(count: 2000, input: Gen.uint64(), Gen.int(in: 1...4)) { seed, rounds in
            var rng = SplitMix64(seed: seed)
            let objects = randomObjects(&rng)
            let encrypted = rng.chance(0.5)
            let original = encrypted
                ? specKey.seal(objects: objects, address: shellyAddress, counter: UInt32(rng.int(100...100_000)),
                               deviceInfo: rng.pick([0x41, 0x45, 0x43]))
                : [rng.pick([0x40, 0x44])] + objects
            var data = original
            for _ in 0..<rounds { data = mutate(data, &rng) }
            let key: BTHomeBindkey? = encrypted ? specKey : nil
            check(BTHome.parse(data, address: shellyAddress, decryptor: key), length: data.count)
            var state = BTHomeDeviceState(address: shellyAddress, decryptor: key)
            _ = state.receive(original, at: at(0))
            let r = state.receive(data, at: at(10))
            if encrypted, data != original, case .accepted = r {
                Issue.record("a mutated encrypted advert was accepted: \(hex(original)) → \(hex(data))")
            }
        }
    }

    @Test("sealed adverts decrypt to exactly their objects")
    func sealRoundTrip() async {
        await propertyCheck(count: 500, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            let objects = randomObjects(&rng)
            let address = BTHomeAddress(bytes: rng.bytes(6))!
            let info: UInt8 = rng.pick([0x41, 0x45, 0x43, 0x47])
            let sealed = specKey.seal(objects: objects, address: address, counter: UInt32(truncatingIfNeeded: rng.next()), deviceInfo: info)
            let plain = BTHome.parseObjects(objects)
            switch BTHome.parse(sealed, address: info & 0x02 != 0 ? shellyAddress : address, decryptor: specKey) {
            case .success(let a): #expect(a.objects == plain.objects)
            case .failure(let r): #expect(plain.objects.isEmpty, "\(r)")
            }
        }
    }

    /// A button pressed `n` times: every press retransmitted 1–6 times within half a second, presses
    /// 0.05 s to 10 s apart, packet ids advancing 1–63. Each press must fire exactly once.
    @Test("a duplicate packet id never yields an event twice; every press fires exactly once")
    func pressesFireOnce() async {
        await propertyCheck(count: 300, input: Gen.uint64(), Gen.bool) { seed, encrypted in
            var rng = SplitMix64(seed: seed)
            var state = BTHomeDeviceState(address: shellyAddress, decryptor: encrypted ? specKey : nil)
            var packetID = UInt8(rng.int(0...255))
            var counter = UInt32(rng.int(100...1000))
            var time = 0.0
            var expected = 0
            var fired = 0
            for _ in 0..<rng.int(1...30) {
                packetID &+= UInt8(rng.int(1...63))
                counter += UInt32(rng.int(1...3))
                let code = rng.pick(buttonCodes)
                let objects: [UInt8] = [0x00, packetID, 0x01, 0x64, 0x3A, code]
                let data = encrypted
                    ? specKey.seal(objects: objects, address: shellyAddress, counter: counter, deviceInfo: 0x45)
                    : [0x44] + objects
                if BTHomeButtonEvent(code: code).isEvent { expected += 1 }
                time += rng.chance(0.2) ? Double(rng.int(0...10_000)) / 1000 : Double(rng.int(50...3900)) / 1000
                for copy in 0..<rng.int(1...6) {
                    if copy > 0 { time += Double(rng.int(0...500)) / 1000 }
                    fired += state.receive(data, at: at(time)).firedEvents
                }
            }
            #expect(fired == expected)
        }
    }

    @Test("encrypted: replays of earlier adverts never fire, whenever they come")
    func replaysNeverFire() async {
        await propertyCheck(count: 300, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            var state = BTHomeDeviceState(address: shellyAddress, decryptor: specKey)
            var history: [[UInt8]] = []
            var packetID: UInt8 = 0
            var counter: UInt32 = 1000
            var time = 0.0
            for _ in 0..<40 {
                time += Double(rng.int(0...20_000)) / 1000
                if !history.isEmpty && rng.chance(0.4) {
                    let replay = rng.pick(history)
                    #expect(state.receive(replay, at: at(time)).firedEvents == 0, "replay of \(hex(replay)) fired")
                } else {
                    packetID &+= 1
                    counter += UInt32(rng.int(1...5))
                    let data = specKey.seal(objects: [0x00, packetID, 0x3A, 0x01], address: shellyAddress, counter: counter, deviceInfo: 0x45)
                    #expect(state.receive(data, at: at(time)).firedEvents == 1)
                    history.append(data)
                }
            }
        }
    }

    @Test("beacons (every button 00) never fire")
    func beaconsNeverFire() async {
        await propertyCheck(count: 300, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            var state = BTHomeDeviceState(address: shellyAddress)
            var time = 0.0
            for _ in 0..<30 {
                time += Double(rng.int(0...10_000)) / 1000
                let buttons: [UInt8] = Array([[UInt8]](repeating: [0x3A, 0x00], count: rng.int(1...4)).joined())
                let data: [UInt8] = [0x44, 0x00, rng.byte(), 0x01, UInt8(rng.int(0...100))] + buttons
                #expect(state.receive(data, at: at(time)).firedEvents == 0)
            }
        }
    }
}

extension BTHomeReception {
    /// How many button events this reception would act on.
    var firedEvents: Int {
        if case .accepted(let a) = self { a.events.count } else { 0 }
    }
}
