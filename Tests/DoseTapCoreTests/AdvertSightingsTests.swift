import DoseTapCore
import Foundation
import PropertyBased
import Testing

@Suite("AdvertSightings: a scan's adverts, one per address, bounded")
struct AdvertSightingsTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func advert(_ address: String, name: String? = nil, rssi: Int? = nil, data: [String: [UInt8]] = [:],
                       uuids: [String] = []) -> BLEAdvert {
        BLEAdvert(address: address, name: name, rssi: rssi, serviceData: data, manufacturerData: [:], uuids: uuids, receivedAt: t0)
    }

    @Test("a later advert brings its strength, name and service data; what it lacks is kept; UUIDs are the union")
    func merge() {
        var sightings = AdvertSightings(capacity: 8)
        sightings.add(Self.advert("AA", name: "Shelly", rssi: -70, data: ["x": [1]], uuids: ["0000fcd2"]))
        sightings.add(Self.advert("AA", rssi: -60, data: ["x": [2], "y": [3]], uuids: ["0000ffe0", "0000fcd2"]))
        sightings.add(Self.advert("AA"))
        let merged = sightings.adverts
        #expect(merged.count == 1)
        #expect(merged.first?.name == "Shelly")      // the later adverts had no name
        #expect(merged.first?.rssi == -60)           // the last one with a strength
        #expect(merged.first?.serviceData == ["x": [2], "y": [3]])
        #expect(merged.first?.uuids == ["0000fcd2", "0000ffe0"])
    }

    @Test("at capacity a new address is not kept, a known one still merges")
    func capacity() {
        var sightings = AdvertSightings(capacity: 2)
        sightings.add(Self.advert("AA", rssi: -80))
        sightings.add(Self.advert("BB"))
        sightings.add(Self.advert("CC", name: "stranger"))
        sightings.add(Self.advert("AA", rssi: -50))
        #expect(sightings.adverts.map(\.address) == ["AA", "BB"])
        #expect(sightings.adverts.first?.rssi == -50)
        var none = AdvertSightings(capacity: -3)
        none.add(Self.advert("AA"))
        #expect(none.adverts.isEmpty)
    }

    @Test("however many adverts arrive, at most `capacity` addresses are kept, each once")
    func bounded() async {
        await propertyCheck(input: Gen.int(in: 0...40).array(of: 0...300)) { addresses in
            var sightings = AdvertSightings(capacity: 16)
            for a in addresses { sightings.add(Self.advert("addr-\(a)")) }
            let kept = sightings.adverts.map(\.address)
            #expect(kept.count == min(16, Set(addresses).count))
            #expect(Set(kept).count == kept.count)
        }
    }
}
