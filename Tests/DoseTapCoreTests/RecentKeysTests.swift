import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("RecentKeys: bounded memory of what a stranger can add (#26 §5)")
struct RecentKeysTests {
    @Test("a new key is news, a recent one is not; the oldest goes first at capacity and is news again")
    func boundary() {
        var keys = RecentKeys<String>(capacity: 3)
        for key in ["a", "b", "c"] { let news = keys.insert(key); #expect(news) }
        var news = keys.insert("a")
        #expect(!news && keys.count == 3)
        news = keys.insert("d")            // "a" goes: the oldest inserted
        #expect(news && keys.count == 3 && !keys.contains("a") && keys.contains("b"))
        news = keys.insert("a")            // forgotten, so news again ("b" goes)
        #expect(news && !keys.contains("b") && keys.contains("c") && keys.contains("d"))
        keys.removeAll { $0 == "c" }
        #expect(keys.count == 2)
        news = keys.insert("c")
        #expect(news && keys.count == 3)
        news = keys.insert("e")            // "d" is the oldest now
        #expect(news && keys.count == 3 && !keys.contains("d") && keys.contains("a"))
        var one = RecentKeys<Int>(capacity: 0)  // a capacity below 1 is 1
        one.insert(1)
        one.insert(2)
        #expect(!one.contains(1) && one.count == 1)
    }

    /// The model: a list of the last `capacity` distinct keys in insertion order.
    @Test("property: it answers exactly as a list of the last `capacity` distinct keys, and never holds more")
    func model() async {
        await propertyCheck(count: 200, input: Gen.int(in: 1...8), Gen.int(in: 0...20).array(of: 0...120), Gen.int(in: 0...30)) { capacity, inserts, forget in
            var keys = RecentKeys<Int>(capacity: capacity)
            var model: [Int] = []
            for (n, key) in inserts.enumerated() {
                if n == inserts.count / 2 {
                    keys.removeAll { $0 == forget }
                    model.removeAll { $0 == forget }
                }
                let fresh = !model.contains(key)
                if fresh {
                    model.append(key)
                    if model.count > capacity { model.removeFirst() }
                }
                let news = keys.insert(key)
                #expect(news == fresh)
                #expect(keys.count == model.count && keys.count <= capacity)
            }
            for key in 0...20 { #expect(keys.contains(key) == model.contains(key)) }
        }
    }
}
