import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("Gestures: Flic's constants on both sides")
struct GestureTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ s: Double) -> Date { t0.addingTimeInterval(s) }

    /// Feeds signals, expiring at each one and at the end; returns the gestures in order.
    func run(_ signals: [KeySignal], noDouble: Bool = false, until end: Double = 10) -> [ButtonGesture] {
        var r = GestureRecognizer(noDouble: noDouble)
        var out: [RecognizedGesture] = []
        for s in signals { out += r.feed(s) }
        out += r.expire(at: at(end))
        return out.map(\.gesture)
    }

    @Test("a click released within 1 s is a single, once the 0.5-s double window has passed")
    func single() {
        var r = GestureRecognizer()
        let v1 = r.feed(.down(at: at(0)))
        #expect(v1.isEmpty)
        let v2 = r.feed(.up(at: at(0.2)))
        #expect(v2.isEmpty)
        #expect(r.deadline == at(0.7))
        let v3 = r.expire(at: at(0.7))
        #expect(v3.isEmpty) // not yet: the window is inclusive
        let v4 = r.expire(at: at(0.71))
        #expect(v4.map(\.gesture) == [.single])
        #expect(r.deadline == nil)
    }

    @Test("second press within 0.5 s: double; just after: two singles", arguments: [(0.5, [ButtonGesture.double]), (0.51, [.single, .single])])
    func double(gap: Double, expected: [ButtonGesture]) {
        #expect(run([.down(at: at(0)), .up(at: at(0.1)), .down(at: at(0.1 + gap)), .up(at: at(0.2 + gap))]) == expected)
    }

    @Test("held 0.99 s is a click; 1 s is a hold, recognised while still held", arguments: [(0.99, ButtonGesture.single), (1.0, .hold), (3.0, .hold)])
    func hold(held: Double, expected: ButtonGesture) {
        #expect(run([.down(at: at(0)), .up(at: at(held))]) == [expected])
        if expected == .hold {
            var r = GestureRecognizer()
            _ = r.feed(.down(at: at(0)))
            #expect(r.deadline == at(1))
            let v5 = r.expire(at: at(1))
            #expect(v5.map(\.gesture) == [.hold])
            let v6 = r.feed(.up(at: at(held + 0.5)))
            #expect(v6.isEmpty) // the release adds nothing
        }
    }

    @Test("no-double mode: a single acts at its release")
    func noDouble() {
        var r = GestureRecognizer(noDouble: true)
        _ = r.feed(.down(at: at(0)))
        let v7 = r.feed(.up(at: at(0.1)))
        #expect(v7.map(\.gesture) == [.single])
        #expect(run([.down(at: at(0)), .up(at: at(0.1)), .down(at: at(0.2)), .up(at: at(0.3))], noDouble: true) == [.single, .single])
    }

    @Test("contact bounce within 50 ms is ignored; 51 ms apart are two edges", arguments: [(0.049, [ButtonGesture.single]), (0.051, [.double])])
    func debounce(bounce: Double, expected: [ButtonGesture]) {
        // Release, then a bounce back down-up shortly after.
        let signals: [KeySignal] = [.down(at: at(0)), .up(at: at(0.1)), .down(at: at(0.1 + bounce)), .up(at: at(0.2 + bounce))]
        #expect(run(signals) == expected)
    }

    @Test("press-only buttons (iTag): single and double from arrival times")
    func pressOnly() {
        #expect(run([.press(at: at(0))]) == [.single])
        #expect(run([.press(at: at(0)), .press(at: at(0.4))]) == [.double])
        #expect(run([.press(at: at(0)), .press(at: at(0.6))]) == [.single, .single])
        #expect(run([.press(at: at(0)), .press(at: at(0.01))]) == [.single]) // bounce
    }

    @Test("key repeats (downs while down) and stray ups change nothing")
    func strays() {
        #expect(run([.up(at: at(0))]).isEmpty)
        #expect(run([.down(at: at(0)), .down(at: at(0.3)), .down(at: at(0.6)), .up(at: at(0.7))]) == [.single])
    }

    @Test("BTHome events map onto the same gestures")
    func bthome() {
        #expect(ButtonGesture(bthome: .press) == .single)
        #expect(ButtonGesture(bthome: .doublePress) == .double)
        #expect(ButtonGesture(bthome: .longPress) == .hold)
        #expect(ButtonGesture(bthome: .holdPress) == .hold)
        #expect(ButtonGesture(bthome: .triplePress) == .triple)
        #expect(ButtonGesture(bthome: .none) == nil)
        #expect(ButtonGesture(bthome: .holdRelease) == nil)
    }

    @Test("default mapping, remapping, and no-double")
    func mapping() {
        var m = ButtonMapping()
        #expect(m.action(for: .single) == .take && m.action(for: .double) == .snooze && m.action(for: .hold) == .undo)
        #expect(m.action(for: .triple) == .none && m.action(for: .longDouble) == .none && m.action(for: .longTriple) == .none)
        m.noDouble = true
        #expect(m.action(for: .double) == .none)
        m.single = .skip
        #expect(m.action(for: .single).command == .skip(nil))
        #expect(ButtonAction.none.command == nil)
    }

    @Test("property: a signal timeline never yields more gestures than presses")
    func bounded() async {
        await propertyCheck(count: 300, input: Gen.double(in: 0.001...1.5).array(of: 1...30), Gen.int(in: 0...1)) { gaps, mode in
            var r = GestureRecognizer(noDouble: mode == 1)
            var t = 0.0
            var down = false
            var presses = 0
            var out: [RecognizedGesture] = []
            for g in gaps {
                t += g
                out += r.feed(down ? .up(at: at(t)) : .down(at: at(t)))
                if !down { presses += 1 }
                down.toggle()
            }
            out += r.expire(at: at(t + 10))
            #expect(out.count <= presses)
            #expect(zip(out, out.dropFirst()).allSatisfy { $0.at <= $1.at })
        }
    }
}

@Suite("Flood protection")
struct FloodGuardTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("60 a minute pass, the 61st is queued, the 201st mutes for 5 minutes with one announcement")
    func limits() {
        var g = ButtonFloodGuard()
        for i in 0..<60 {
            let v = g.admit(at: t0.addingTimeInterval(Double(i) * 0.1))
            #expect(v == .allow)
        }
        let v8 = g.admit(at: t0.addingTimeInterval(6.05))
        #expect(v8 == .queue)
        for i in 61..<200 {
            let v = g.admit(at: t0.addingTimeInterval(6.1 + Double(i) * 0.01))
            #expect(v == .queue)
        }
        let mute = g.admit(at: t0.addingTimeInterval(10))
        #expect(mute == .muted(until: t0.addingTimeInterval(310), announce: true))
        let v9 = g.admit(at: t0.addingTimeInterval(11))
        #expect(v9 == .muted(until: t0.addingTimeInterval(310), announce: false))
        let v10 = g.admit(at: t0.addingTimeInterval(310))
        #expect(v10 == .allow)
    }

    @Test("the window slides: a press a minute later is allowed again")
    func slides() {
        var g = ButtonFloodGuard()
        for i in 0..<61 { _ = g.admit(at: t0.addingTimeInterval(Double(i) * 0.1)) }
        let v11 = g.admit(at: t0.addingTimeInterval(66.1))
        #expect(v11 == .allow)
    }
}
