import DoseTapAgent
import DoseTapApp
import DoseTapCore
import Foundation
import Testing

@Suite("Per-button gesture recognizers (HID remotes, iTags): deadlines, boundaries, remapping")
struct ButtonRecognizersTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ s: Double) -> Date { t0.addingTimeInterval(s) }

    func itag(noDouble: Bool = false, address: String = "FF:FF:10:0E:8A:2C") throws -> ButtonConfig {
        var mapping = ButtonMapping()
        mapping.noDouble = noDouble
        return try ButtonConfig(address: address, kind: .itag, name: "bedside", mapping: mapping)
    }

    @Test("a press waits for the double window: due at +0.5 s, a single only once past it")
    func single() throws {
        let r = ButtonRecognizers()
        let b = try itag()
        let fed = r.feed(.press(at: at(0)), button: b)
        #expect(fed.gestures.isEmpty)
        #expect(fed.deadline == at(0.5))
        #expect(r.expire(address: b.address, at: at(0.5)).isEmpty)
        #expect(r.expire(address: b.address, at: at(0.501)).map(\.gesture) == [.single])
        #expect(r.expire(address: b.address, at: at(2)).isEmpty)
    }

    @Test("a second press at +0.5 s is a double; at +0.501 s it is a new press", arguments: [(0.5, true), (0.501, false)])
    func double(gap: Double, isDouble: Bool) throws {
        let r = ButtonRecognizers()
        let b = try itag()
        _ = r.feed(.press(at: at(0)), button: b)
        let second = r.feed(.press(at: at(gap)), button: b)
        if isDouble {
            #expect(second.gestures.map(\.gesture) == [.double])
            #expect(second.gestures.first?.at == at(gap))
            #expect(second.deadline == nil)
        } else {
            // The first became a single; the second waits for its own window.
            #expect(second.gestures.map(\.gesture) == [.single])
            #expect(second.deadline == at(gap).addingTimeInterval(0.5))
        }
    }

    @Test("no-double mode acts at once, and a remap applies to the next press")
    func noDouble() throws {
        let r = ButtonRecognizers()
        #expect(r.feed(.press(at: at(0)), button: try itag()).gestures.isEmpty)
        _ = r.expire(address: try itag().address, at: at(1))
        let fed = r.feed(.press(at: at(2)), button: try itag(noDouble: true))
        #expect(fed.gestures.map(\.gesture) == [.single])
        #expect(fed.deadline == nil)
    }

    @Test("buttons are independent; reset forgets a pending press")
    func independent() throws {
        let r = ButtonRecognizers()
        let a = try itag(), b = try itag(address: "FF:FF:C2:11:04:9B")
        _ = r.feed(.press(at: at(0)), button: a)
        #expect(r.feed(.press(at: at(0.2)), button: b).gestures.isEmpty) // not a double of a's press
        r.reset(address: a.address)
        #expect(r.expire(address: a.address, at: at(1)).isEmpty)
        #expect(r.expire(address: b.address, at: at(1)).map(\.gesture) == [.single])
    }
}
