import DoseTapCore
import DoseTapCrypto
import DoseTapTesting
import Foundation
import PropertyBased
import Testing

/// The app's Flic 2 session against the simulated button (the button side written from the specification, its
/// certificate signed with a test factory key): pairing, quick verify, events, and everything hostile.
@Suite("Flic 2 session")
struct Flic2SessionTests {
    static let address = BluetoothAddress("80:E4:DA:70:12:34")!

    /// A session and a button joined by their frames; `tamper` sees each frame from the button first.
    struct Link {
        var session: Flic2Session
        var button: SimulatedFlic2Button
        /// Everything but writes, in order.
        var outputs: [Flic2Session.Output] = []
        var tamper: ((inout [[UInt8]]) -> Void)?
        /// Frames the app wrote that the button never got (a lost write), when set.
        var dropWrites: (([UInt8]) -> Bool)?

        init(_ mode: Flic2Session.Mode, button: SimulatedFlic2Button, factoryKey: [UInt8]? = nil, mtu: Int = Flic2Frame.defaultMTU) {
            self.button = button
            session = Flic2Session(mode: mode, address: button.address, crypto: SwiftCryptoFlic2(),
                                   factoryKey: factoryKey ?? button.factory.publicKey, mtu: mtu)
        }

        mutating func start() { deliver(session.start()) }

        /// Hands the app's writes to the button and the button's answers back, until both are quiet.
        mutating func deliver(_ produced: [Flic2Session.Output]) {
            var pending = produced
            while !pending.isEmpty {
                let output = pending.removeFirst()
                guard case .write(let frame) = output else {
                    outputs.append(output)
                    continue
                }
                if dropWrites?(frame) == true { continue }
                var answer = button.receive(frame)
                tamper?(&answer)
                for reply in answer { pending += session.receive(reply) }
            }
        }

        /// Frames the button sends by itself (a press, a ping).
        mutating func fromButton(_ frames: [[UInt8]]) {
            var frames = frames
            tamper?(&frames)
            for frame in frames { deliver(session.receive(frame)) }
        }

        mutating func press(_ gesture: ButtonGesture) { fromButton(button.press(gesture)) }

        var gestures: [ButtonGesture] {
            outputs.compactMap { if case .gesture(let g, _, _, _) = $0 { g } else { nil } }
        }

        var ended: Flic2Failure? {
            outputs.lazy.compactMap { if case .ended(let f) = $0 { f } else { nil } }.first
        }

        var pairing: Flic2Pairing? {
            outputs.lazy.compactMap { if case .paired(let p, _) = $0 { p } else { nil } }.first
        }
    }

    /// An ack written to the button (one frame: header, opcode, count, MAC).
    @Sendable static func isAck(_ frame: [UInt8]) -> Bool {
        frame.count > 1 && frame[1] == Flic2Opcode.ToButton.ackButtonEventsInd.rawValue
    }

    static func paired(_ button: SimulatedFlic2Button = SimulatedFlic2Button(address: address)) throws -> (Link, Flic2Pairing) {
        var link = Link(.pair, button: button)
        link.start()
        guard let pairing = link.pairing else {
            throw Flic2Failure.malformed("pairing failed: \(String(describing: link.ended))")
        }
        return (link, pairing)
    }

    @Test("pairing: full verify, the button's facts, events initialized, and a press is a single", arguments: [UInt8(0), 1, 2, 3])
    func pairing(variant: UInt8) throws {
        var link = Link(.pair, button: SimulatedFlic2Button(address: Self.address, signatureVariant: variant))
        link.start()
        #expect(link.ended == nil)
        let info = try #require(link.outputs.lazy.compactMap { if case .paired(_, let i) = $0 { i } else { nil } }.first)
        #expect(info.name == Array("F2 test".utf8))
        #expect(info.serialNumber == Array("BG00-T00001".utf8))
        #expect(link.outputs.contains(.battery(millivolts: 2999)))
        #expect(link.session.isEstablished)
        #expect(link.button.isConnected)
        #expect(link.button.pairings.count == 1)
        link.press(.single)
        #expect(link.gestures == [.single])
        #expect(link.ended == nil)
    }

    @Test("gestures come from the button's own classification: single, double, hold")
    func gestures() throws {
        var (link, _) = try Self.paired()
        link.press(.single)
        link.press(.double)
        link.press(.hold)
        link.press(.single)
        #expect(link.gestures == [.single, .double, .hold, .single])
        let counts = link.outputs.compactMap { if case .gesture(_, let c, let age, let queued) = $0, age == 0, !queued { c } else { nil } }
        #expect(counts.count == 4)
        #expect(counts == counts.sorted() && Set(counts).count == 4)
    }

    @Test("a reconnect: quick verify with the stored pairing, then presses as before")
    func quickVerify() throws {
        var (first, pairing) = try Self.paired()
        first.press(.single)
        var button = first.button
        button.disconnect()
        var again = Link(.resume(pairing, first.session.progress), button: button)
        again.start()
        #expect(again.outputs.first == .verified)
        #expect(again.gestures.isEmpty)
        again.press(.double)
        #expect(again.gestures == [.double])
        #expect(again.ended == nil)
    }

    @Test("presses while disconnected arrive queued with their age, and are acted on once across reconnects")
    func queuedOnce() throws {
        var (first, pairing) = try Self.paired()
        first.press(.single)
        var button = first.button
        button.disconnect()
        _ = button.press(.single)
        button.advance(seconds: 90)
        _ = button.press(.double)
        button.advance(seconds: 2)
        // Reconnect, but the ack never reaches the button: it keeps the events queued.
        var second = Link(.resume(pairing, first.session.progress), button: button)
        second.dropWrites = Self.isAck
        second.start()
        let queued = second.outputs.compactMap { if case .gesture(let g, _, let age, let q) = $0 { (g, age, q) } else { nil } }
        #expect(queued.map(\.0) == [.single, .double])
        #expect(queued.allSatisfy { $0.2 })
        #expect(abs(queued[0].1 - 92.1) < 0.5)
        #expect(abs(queued[1].1 - 2.2) < 0.5)
        #expect(!second.button.queue.isEmpty)
        // A button that replays what was not acknowledged sends the same events again: counted once.
        button = second.button
        button.disconnect()
        button.replaysUnacknowledged = true
        var stale = Link(.resume(pairing, Flic2EventProgress(bootID: second.session.progress.bootID, eventCount: 0)), button: button)
        stale.start()
        #expect(stale.gestures == [.single, .double], "the replay does come: only the stored progress stops it")
        var third = Link(.resume(pairing, second.session.progress), button: button)
        third.start()
        #expect(third.outputs.first == .verified)
        #expect(third.gestures.isEmpty)
        third.press(.hold)
        #expect(third.gestures == [.hold])
    }

    @Test("a queued event whose age cannot be worked out (stamped after the button's clock at InitButtonEvents) counts as old")
    func unknownAge() throws {
        var (link, _) = try Self.paired()
        let later = link.button.clock + 10 * 32768
        let notification = Flic2Packets.ButtonEventNotification(pressCounter: 3, items: [
            Flic2Packets.EventItem(timestamp: later, encoded: 1, wasQueued: true),
            Flic2Packets.EventItem(timestamp: later, encoded: 10, wasQueued: true, wasQueuedLast: true),
        ])
        link.fromButton(link.button.notify(notification))
        let ages = link.outputs.compactMap { if case .gesture(_, _, let age, let queued) = $0, queued { age } else { nil } }
        #expect(ages == [Flic2Session.unknownQueuedAge])
        #expect(link.ended == nil)
    }

    @Test("the button restarted: a new boot id, its counter from zero, and its presses act again")
    func reboot() throws {
        var (first, pairing) = try Self.paired()
        first.press(.single)
        first.press(.single)
        var button = first.button
        button.reboot(bootID: 99)
        var again = Link(.resume(pairing, first.session.progress), button: button)
        again.start()
        #expect(again.outputs.contains(.progress(Flic2EventProgress(bootID: 99, eventCount: 0))))
        again.press(.single)
        #expect(again.gestures == [.single])
    }

    @Test("battery: asked for, answered in millivolts")
    func battery() throws {
        var (link, _) = try Self.paired()
        link.button.batteryRaw = 700
        link.deliver(link.session.requestBattery())
        #expect(link.outputs.last == .battery(millivolts: 2461))
        #expect(Flic2Packets.batteryMillivolts(1024) == 3600)
        #expect(Flic2Packets.batteryMillivolts(0) == 0)
    }

    @Test("a ping is answered with a MAC the button accepts")
    func ping() throws {
        var (link, _) = try Self.paired()
        link.fromButton(link.button.ping())
        link.press(.single)
        #expect(link.gestures == [.single])
        #expect(link.ended == nil)
        #expect(link.button.isConnected)
    }

    // MARK: Refused pairings

    @Test("a certificate for another address ends pairing, with the address it names")
    func wrongAddress() {
        var button = SimulatedFlic2Button(address: Self.address)
        button.certificateAddress = BluetoothAddress("80:E4:DA:70:99:99")!
        var link = Link(.pair, button: button)
        link.start()
        #expect(link.ended == .addressMismatch(certificate: "80:E4:DA:70:99:99"))
        #expect(link.pairing == nil)
        #expect(link.button.pairings.isEmpty)
    }

    @Test("a certificate not signed by the factory key the session trusts (here: Flic's real one) is refused")
    func notGenuine() {
        var link = Link(.pair, button: SimulatedFlic2Button(address: Self.address), factoryKey: Flic2KeySchedule.factoryPublicKey)
        link.start()
        #expect(link.ended == .badCertificate)
        #expect(link.pairing == nil)
    }

    @Test("a button not in public mode says so; the error tells the person what to do")
    func notInPublicMode() {
        var link = Link(.pair, button: SimulatedFlic2Button(address: Self.address, publicMode: false))
        link.start()
        #expect(link.ended == .notInPublicMode)
        #expect(link.ended?.description.contains("hold it for 7 seconds") == true)
    }

    @Test("a pairing the button no longer knows (reset, or paired elsewhere) ends quick verify")
    func pairingUnknown() throws {
        var (first, pairing) = try Self.paired()
        var button = first.button
        button.disconnect()
        button.forgetPairings()
        first = Link(.resume(pairing, Flic2EventProgress()), button: button)
        first.start()
        #expect(first.ended == .pairingUnknown)
        first.press(.single)
        #expect(first.gestures.isEmpty)
    }

    @Test("a stored pairing with the wrong key: the button's answer fails its MAC, nothing is acted on")
    func wrongPairingKey() throws {
        let (first, pairing) = try Self.paired()
        var button = first.button
        button.disconnect()
        var wrong = pairing
        wrong.key[0] ^= 1
        var link = Link(.resume(wrong, Flic2EventProgress()), button: button)
        link.start()
        #expect(link.ended == .badMAC(opcode: Flic2Opcode.FromButton.quickVerifyResponse.rawValue))
        link.press(.single)
        #expect(link.gestures.isEmpty)
    }

    @Test("no answer in time ends a verify; an established session does not time out")
    func timeout() throws {
        var session = Flic2Session(mode: .pair, address: Self.address, crypto: SwiftCryptoFlic2())
        _ = session.start()
        #expect(session.timedOut() == [.ended(.timeout)])
        var (link, _) = try Self.paired()
        #expect(link.session.timedOut().isEmpty)
        link.press(.single)
        #expect(link.gestures == [.single])
    }

    // MARK: Hostile packets in a session

    @Test("a bad MAC ends the session: that press and every later one are never acted on")
    func badMAC() throws {
        var (link, _) = try Self.paired()
        link.tamper = { frames in frames[frames.count - 1][frames[frames.count - 1].count - 1] ^= 0x01 }
        link.press(.single)
        link.tamper = nil
        link.press(.single)
        #expect(link.gestures.isEmpty)
        #expect(link.ended == .badMAC(opcode: Flic2Opcode.FromButton.buttonEventNotification.rawValue))
    }

    @Test("a replayed packet fails its MAC (the counter moved on)")
    func replay() throws {
        var (link, _) = try Self.paired()
        let frames = link.button.press(.single)
        link.fromButton(frames)
        #expect(link.gestures == [.single])
        link.fromButton(frames)
        #expect(link.gestures == [.single])
        #expect(link.ended == .badMAC(opcode: Flic2Opcode.FromButton.buttonEventNotification.rawValue))
    }

    @Test("packets out of order (a counter rolled back) fail their MAC")
    func reordered() throws {
        var (link, _) = try Self.paired()
        let first = link.button.press(.single)
        let second = link.button.press(.double)
        link.fromButton(second)
        link.fromButton(first)
        #expect(link.gestures.isEmpty)
        #expect(link.ended != nil)
    }

    @Test("a forged event from another connection id is not ours: ignored, and the session goes on")
    func otherConnection() throws {
        var (link, _) = try Self.paired()
        var forged = link.button.press(.single)
        let real = forged
        for i in forged.indices { forged[i][0] = (forged[i][0] & 0xE0) | ((forged[i][0] & 0x1F) % 31 + 1) }
        link.fromButton(forged)
        #expect(link.gestures.isEmpty)
        link.fromButton(real)
        #expect(link.gestures == [.single])
    }

    @Test("another app's verify traffic on connection 0 (no free slots, a refusal) does not touch an established session")
    func connectionZero() throws {
        var (link, _) = try Self.paired()
        link.fromButton([[0x00, Flic2Opcode.FromButton.noLogicalConnectionSlotsInd.rawValue, 1, 2, 3, 4]])
        link.fromButton([[0x00, Flic2Opcode.FromButton.fullVerifyFailResponse.rawValue, 1]])
        #expect(link.ended == nil)
        link.press(.single)
        #expect(link.gestures == [.single])
    }

    @Test("fragments out of order: the certificate or the MAC refuses the packet they make", arguments: [0, 1])
    func fragmentsOutOfOrder(which: Int) {
        var link = Link(.pair, button: SimulatedFlic2Button(address: Self.address))
        var seen = 0
        link.tamper = { frames in
            guard frames.count > 2 else { return }
            // The first fragmented packet (FullVerifyResponse1), or the second (FullVerifyResponse2).
            if seen == which { frames.swapAt(0, 1) }
            seen += 1
        }
        link.start()
        #expect(link.pairing == nil)
        // The certificate's packet is garbage (not a response: it waits, then times out); the signed answer's MAC fails.
        link.deliver(link.session.timedOut())
        if which == 0 {
            #expect(link.ended == .timeout)
        } else {
            #expect({ if case .badMAC? = link.ended { true } else { false } }(), "\(String(describing: link.ended))")
        }
        #expect(link.button.pairings.isEmpty == (which == 0))
    }

    @Test("truncated frames, oversized packets and malformed notifications end the session")
    func badFrames() throws {
        var (link, _) = try Self.paired()
        link.fromButton([[0x01]])
        #expect(link.ended == .frame(.truncated(1)))

        var (big, _) = try Self.paired()
        let header = Flic2FrameHeader(connectionID: 1, moreFragments: true).byte
        big.fromButton([[header] + [UInt8](repeating: 0, count: 100), [header] + [UInt8](repeating: 0, count: 40)])
        #expect(big.ended == .frame(.oversized(140)))

        var reassembler = Flic2Reassembler()
        #expect(reassembler.receive([0x81, 1, 2]) == .success(nil))
        #expect(reassembler.receive([0x22, 3]) == .failure(.interleaved))
        #expect(reassembler.receive([0x01, 3]) == .success(Flic2Packet(header: Flic2FrameHeader(connectionID: 1), bytes: [3])))
        #expect(reassembler.receive([]) == .failure(.truncated(0)))
    }

    @Test("decoders refuse short and ragged packets without trapping")
    func decoders() {
        let notification = Flic2Packets.ButtonEventNotification(pressCounter: 3, items: [
            Flic2Packets.EventItem(timestamp: 5, encoded: 1), Flic2Packets.EventItem(timestamp: 9, encoded: 10),
        ])
        #expect(Flic2Packets.ButtonEventNotification(notification.encoded) == notification)
        #expect(notification.eventCounts == [1, 3])
        for cut in 0..<notification.encoded.count where cut != notification.encoded.count - 7 {
            #expect(Flic2Packets.ButtonEventNotification(Array(notification.encoded.prefix(cut))) == nil)
        }
        #expect(Flic2Packets.ButtonEventNotification(notification.encoded + [0]) == nil)
        #expect(Flic2Packets.FullVerifyResponse1([0]) == nil)
        #expect(Flic2Packets.FullVerifyResponse2([1, 1]) == nil)
        #expect(Flic2Packets.QuickVerifyResponse([8]) == nil)
        #expect(Flic2Packets.InitButtonEventsResponse([10, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]) == nil)
        #expect(Flic2Packets.InitButtonEventsResponse([11, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0])
            == Flic2Packets.InitButtonEventsResponse(hasQueuedEvents: true, timestamp: 0, eventCount: 1, newBootID: nil))
        #expect(Flic2Packets.batteryLevel([20, 1]) == nil)
    }

    @Test("InitButtonEvents puts its fields where the specification's bit layout says")
    func initLayout() {
        let packet = Flic2Packets.initButtonEvents(eventCount: 0x0102_0304, bootID: 0x0A0B_0C0D)
        #expect(packet.count == 14)
        #expect(Array(packet[1..<9]) == [4, 3, 2, 1, 0x0D, 0x0C, 0x0B, 0x0A])
        let bits = packet[9...].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        #expect(bits & 0x1FF == 511)
        #expect((bits >> 9) & 0x1F == 31)
        #expect((bits >> 14) & 0xFFFFF == 0xFFFFF)
        #expect(bits >> 34 == 0)
    }

    @Test("a pairing's 40 hex digits round-trip; anything else is refused")
    func pairingText() throws {
        let pairing = Flic2Pairing(identifier: 0x1234_5678, key: Array(0..<16))
        #expect(pairing.hex == "78563412000102030405060708090a0b0c0d0e0f")
        #expect(try Flic2Pairing(hex: pairing.hex) == pairing)
        #expect(throws: HexBytes.Invalid.self) { try Flic2Pairing(hex: String(pairing.hex.dropLast())) }
        #expect(throws: HexBytes.Invalid.self) { try Flic2Pairing(hex: "７８" + pairing.hex.dropFirst(2)) }
    }

    /// Any mix of presses, disconnects, lost acks and reconnects: every press is acted on exactly once, in order
    /// (none twice, none lost), as long as the app keeps the progress each session reports.
    @Test("property: across reconnects and lost acks, every press is acted on exactly once")
    func exactlyOnce() async throws {
        await propertyCheck(count: 40, input: Gen.uint8(in: 0...5).array(of: 1...24), Gen.bool) { steps, replays in
            guard case (var link, let pairing)? = try? Self.paired() else {
                Issue.record("pairing failed")
                return
            }
            link.button.replaysUnacknowledged = replays
            var made: [ButtonGesture] = []
            var acted: [ButtonGesture] = []
            var progress = link.session.progress
            func collect(_ link: Link) { acted += link.gestures }
            for step in steps {
                switch step {
                case 0, 1, 2:
                    let gesture: ButtonGesture = [.single, .double, .hold][Int(step)]
                    made.append(gesture)
                    if link.session.isEstablished {
                        link.press(gesture)
                    } else {
                        _ = link.button.press(gesture)
                    }
                case 3:
                    link.button.advance(seconds: 1)
                default:
                    // Disconnect (step 5: the last ack is lost too) and reconnect with the stored progress.
                    collect(link)
                    progress = link.session.progress
                    var button = link.button
                    button.disconnect()
                    link = Link(.resume(pairing, progress), button: button)
                    if step == 5 { link.dropWrites = Self.isAck }
                    link.start()
                }
            }
            collect(link)
            if !link.session.isEstablished {
                var button = link.button
                button.disconnect()
                var last = Link(.resume(pairing, link.session.progress), button: button)
                last.start()
                collect(last)
            }
            #expect(acted == made, "steps \(steps), replays \(replays)")
            #expect(link.ended == nil)
            _ = pairing
        }
    }
}
