import DoseTapCore
import Foundation
import PropertyBased
import Testing

/// `zeroPadded` replaced `String(format: "%0Nd")` in the text the one-shot commands write (#29): it must write
/// exactly what printf writes.
@Suite("zero-padded numbers, as printf's %0Nd")
struct ZeroPaddedTests {
    @Test("the edges: zero, one digit short, exactly the width, wider, negative, the extremes")
    func edges() {
        #expect(0.zeroPadded(2) == "00")
        #expect(7.zeroPadded(2) == "07")
        #expect(10.zeroPadded(2) == "10")
        #expect(123.zeroPadded(2) == "123")
        #expect(2026.zeroPadded(4) == "2026")
        #expect(99.zeroPadded(4) == "0099")
        #expect((-5).zeroPadded(4) == "-005")
        #expect((-1234).zeroPadded(4) == "-1234")
        #expect(5.zeroPadded(0) == "5")
        #expect(Int.min.zeroPadded(2) == "\(Int.min)")
        #expect(Int.max.zeroPadded(30) == String(repeating: "0", count: 30 - "\(Int.max)".count) + "\(Int.max)")
        #expect(UInt8(9).zeroPadded(3) == "009")
    }

    @Test("any number at any width reads as String(format:) writes it")
    func matchesPrintf() async {
        await propertyCheck(count: 2000, input: Gen.int(in: -1_000_000...1_000_000), Gen.int(in: 0...12)) { n, width in
            #expect(n.zeroPadded(width) == String(format: "%0\(width)d", n), "\(n) at \(width)")
        }
    }
}
