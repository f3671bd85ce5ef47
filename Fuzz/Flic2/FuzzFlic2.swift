// libFuzzer target: Flic 2's frames and packets. The first byte picks a mode:
// - even: the rest is raw notifications (a length byte, then that many bytes, repeated) into a session waiting for
//   a full verify, one waiting for a quick verify, and the reassembler alone;
// - odd: a session brought to "established" by a quick verify the harness answers with a known pairing key, then
//   the rest as packet bodies (a length byte, then the body) that the harness MACs with the right counter and
//   frames, so the decoders behind the MAC are reached too.
// Invariants: no packet over 128 bytes, nothing after `.ended`, no event count acted on twice or going back.
// Run by scripts/fuzz.sh.
import DoseTapCore
import DoseTapCrypto
import DoseTapFuzzSupport
import Foundation

/// swift-crypto, with fixed "random" bytes (the harness must know the quick verify's client random).
private struct FixedRandom: Flic2Crypto {
    let real = SwiftCryptoFlic2()
    func ed25519Verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        real.ed25519Verify(signature: signature, message: message, publicKey: publicKey)
    }
    func x25519KeyPair() -> (privateKey: [UInt8], publicKey: [UInt8]) { real.x25519KeyPair() }
    func x25519(privateKey: [UInt8], peerPublicKey: [UInt8]) -> [UInt8]? { real.x25519(privateKey: privateKey, peerPublicKey: peerPublicKey) }
    func sha256(_ data: [UInt8]) -> [UInt8] { real.sha256(data) }
    func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] { real.hmacSHA256(key: key, data: data) }
    func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } }
}

private let address = BluetoothAddress("80:E4:DA:70:12:34")!
private let pairing = Flic2Pairing(identifier: 0x0102_0304, key: Array(0..<16))

private func chunks(_ input: inout FuzzInput) -> [[UInt8]] {
    var out: [[UInt8]] = []
    while !input.isAtEnd, out.count < 64 { out.append(input.take(Int(input.byte()))) }
    return out
}

/// Outputs' invariants: nothing after the end, event counts only rising within one boot of the button.
private func check(_ outputs: [Flic2Session.Output], ended: inout Bool, lastCount: inout UInt32, boot: inout UInt32) {
    for output in outputs {
        fuzzCheck(!ended, "an output after the session ended")
        switch output {
        case .ended: ended = true
        case .gesture(_, let count, let age, _):
            fuzzCheck(count > lastCount, "an event count acted on twice or going back")
            fuzzCheck(age >= 0 && age.isFinite, "a negative or non-finite age")
            lastCount = count
        case .progress(let progress):
            if progress.bootID != boot {
                boot = progress.bootID
                lastCount = progress.eventCount
            }
            fuzzCheck(progress.eventCount >= lastCount, "progress went back within a boot")
        case .write(let frame):
            fuzzCheck(frame.count >= 2 && frame.count <= Flic2Frame.defaultMTU - 3, "a frame larger than the MTU allows")
        default: break
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFlic2(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let crypto = FixedRandom()
    if mode & 1 == 0 {
        let frames = chunks(&input)
        var reassembler = Flic2Reassembler()
        for frame in frames {
            if case .success(let packet?) = reassembler.receive(frame) {
                fuzzCheck(!packet.bytes.isEmpty && packet.bytes.count <= Flic2Frame.maxPacket, "a packet over 128 bytes")
                _ = Flic2Packets.ButtonEventNotification(packet.bytes)?.eventCounts
                _ = Flic2Packets.FullVerifyResponse1(packet.bytes)
                _ = Flic2Packets.FullVerifyResponse2(packet.bytes)
                _ = Flic2Packets.InitButtonEventsResponse(packet.bytes)
            }
        }
        for mode in [Flic2Session.Mode.pair, .resume(pairing, Flic2EventProgress())] {
            var session = Flic2Session(mode: mode, address: address, crypto: crypto, factoryKey: Flic2KeySchedule.factoryPublicKey)
            var ended = false
            var last: UInt32 = 0
            var boot: UInt32 = 0
            check(session.start(), ended: &ended, lastCount: &last, boot: &boot)
            for frame in frames { check(session.receive(frame), ended: &ended, lastCount: &last, boot: &boot) }
            fuzzCheck(!session.isEstablished, "unauthenticated frames established a session")
        }
        return 0
    }

    // Established by a quick verify the harness answers.
    var session = Flic2Session(mode: .resume(pairing, Flic2EventProgress(bootID: 1, eventCount: 0)), address: address, crypto: crypto)
    _ = session.start()
    let clientRandom = crypto.randomBytes(7)
    let tmpID = crypto.randomBytes(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    let buttonRandom: [UInt8] = Array(0x70..<0x78)
    guard let sessionKey = Flic2KeySchedule.quickVerifySessionKey(pairingKey: pairing.key, clientRandom: clientRandom, flags: 0,
                                                                  buttonRandom: buttonRandom),
          let keys = ChaskeyKeys(key: sessionKey) else { fuzzCheck(false, "the harness's keys"); return 0 }
    var counter: UInt64 = 0
    func framed(_ body: [UInt8]) -> [[UInt8]] {
        let mac = Flic2KeySchedule.mac(body, keys: keys, direction: .fromButton, counter: counter)
        counter += 1
        var frames = Flic2Frame.split(body + mac, connectionID: 3, mtu: 23)
        if body.first == Flic2Opcode.FromButton.quickVerifyResponse.rawValue { for i in frames.indices { frames[i][0] |= 0x20 } }
        return frames
    }
    var ended = false
    var last: UInt32 = 0
    var boot: UInt32 = 1
    for frame in framed(Flic2Packets.QuickVerifyResponse(buttonRandom: buttonRandom, tmpID: tmpID).encoded) {
        check(session.receive(frame), ended: &ended, lastCount: &last, boot: &boot)
    }
    fuzzCheck(session.isEstablished, "the harness's quick verify did not establish the session")
    for body in chunks(&input) where !body.isEmpty && body.count + 5 <= Flic2Frame.maxPacket {
        for frame in framed(body) { check(session.receive(frame), ended: &ended, lastCount: &last, boot: &boot) }
    }
    return 0
}
