import Foundation

/// One observation of a BLE device: an advertisement (or a property change) as BlueZ reports it.
public struct BLEAdvert: Sendable, Equatable {
    /// "AA:BB:CC:DD:EE:FF".
    public var address: String
    public var name: String?
    public var rssi: Int?
    /// Service data by 128-bit UUID (lower case), e.g. BTHome under "0000fcd2-0000-1000-8000-00805f9b34fb".
    public var serviceData: [String: [UInt8]]
    public var manufacturerData: [Int: [UInt8]]
    public var uuids: [String]
    /// When DoseTap received it (the press's age is measured from here).
    public var receivedAt: Date

    public static let bthomeUUID = "0000fcd2-0000-1000-8000-00805f9b34fb"

    public init(address: String, name: String?, rssi: Int?, serviceData: [String: [UInt8]], manufacturerData: [Int: [UInt8]],
                uuids: [String], receivedAt: Date) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
        self.uuids = uuids
        self.receivedAt = receivedAt
    }

    /// This advert with a later one of the same address folded in: the newer signal strength and name when
    /// it has them, service data by UUID, and the union of the service UUIDs.
    public func merged(with later: BLEAdvert) -> BLEAdvert {
        var merged = self
        merged.rssi = later.rssi ?? rssi
        merged.name = later.name ?? name
        merged.serviceData.merge(later.serviceData) { $1 }
        merged.uuids = Array(Set(uuids + later.uuids)).sorted()
        return merged
    }
}

/// The adverts heard during a scan, one per address, each merged from every advert of that address; at
/// most `capacity` addresses (a crowded room has dozens; more is a transmitter rotating random ones, and
/// the later strangers are not kept).
public struct AdvertSightings: Sendable {
    public let capacity: Int
    private var byAddress: [String: BLEAdvert] = [:]

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    public mutating func add(_ advert: BLEAdvert) {
        if let known = byAddress[advert.address] {
            byAddress[advert.address] = known.merged(with: advert)
        } else if byAddress.count < capacity {
            byAddress[advert.address] = advert
        }
    }

    /// One advert per address, in address order.
    public var adverts: [BLEAdvert] { byAddress.values.sorted { $0.address < $1.address } }
}
