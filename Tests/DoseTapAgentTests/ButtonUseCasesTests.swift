import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import GRDB
import Testing

/// Button management: the rules `dosetap button …` and the coming web page share.
@Suite("ButtonUseCases")
struct ButtonUseCasesTests {
    static let address = "A4:C1:38:8D:18:B2"
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    static let otherKey = "00112233445566778899aabbccddeeff"

    func useCases(events: EventBus? = nil) throws -> (ButtonUseCases, DoseTapDatabase) {
        let database = try DoseTapDatabase(directory: freshDataFolder())
        return (ButtonUseCases(store: DataStore(database: database), events: events), database)
    }

    @Test("a new button gets the default mapping and nothing is said about a key")
    func addNew() throws {
        let (cases, _) = try useCases()
        let result = try cases.add(address: "a4-c1-38-8d-18-b2", kind: .bthome, name: nil, bindkey: Self.key.uppercased())
        #expect(!result.updated)
        #expect(result.keyChange == nil)
        #expect(result.button.address == Self.address)
        #expect(result.button.bindkey == Self.key)
        #expect(result.button.mapping == ButtonMapping())
        #expect(try cases.list().buttons == [result.button])
    }

    @Test("a repeated add keeps the stored key and the mapping unless told otherwise, and says so")
    func addAgainKeepsKey() throws {
        let (cases, _) = try useCases()
        _ = try cases.add(address: Self.address, kind: .bthome, name: "Bed", bindkey: Self.key)
        _ = try cases.map(address: Self.address, .init(single: .snooze))
        let again = try cases.add(address: Self.address, kind: .bthome, name: "Bed", bindkey: nil)
        #expect(again.updated)
        #expect(again.keyChange == .kept)
        #expect(again.button.bindkey == Self.key)
        #expect(again.button.mapping.single == .snooze)
        #expect(try cases.list().buttons.first?.bindkey == Self.key)
        #expect(again.keyChange?.description == "Kept its bindkey (--bindkey KEY replaces it, --remove-bindkey removes it).")
    }

    @Test("the other side: --remove-bindkey removes it, a new key replaces it, the same key says nothing")
    func addAgainChangesKey() throws {
        let (cases, _) = try useCases()
        _ = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: Self.key)
        let same = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: Self.key.uppercased())
        #expect(same.keyChange == nil)
        let replaced = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: Self.otherKey)
        #expect(replaced.keyChange == .replaced)
        #expect(try cases.list().buttons.first?.bindkey == Self.otherKey)
        let removed = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: nil, removeBindkey: true)
        #expect(removed.keyChange == .removed)
        #expect(removed.button.bindkey == nil)
        #expect(try cases.list().buttons.first?.bindkey == nil)
        // Nothing stored: removing says nothing.
        let again = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: nil, removeBindkey: true)
        #expect(again.keyChange == nil)
    }

    @Test("a button that is no longer BTHome loses its key, and says so")
    func kindChangeDropsKey() throws {
        let (cases, _) = try useCases()
        _ = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: Self.key)
        let itag = try cases.add(address: Self.address, kind: .itag, name: nil, bindkey: nil)
        #expect(itag.keyChange == .dropped)
        #expect(itag.button.bindkey == nil)
    }

    @Test("refused inputs: bad address, bad key, key for a non-BTHome button, both key options; nothing stored")
    func addRefusals() async throws {
        let bus = EventBus()
        let stream = bus.subscribe()
        let (cases, _) = try useCases(events: bus)
        #expect(throws: UseCaseError("invalid address '00:00:00:00:00:00': the all-zero address is not a device")) {
            try cases.add(address: "00:00:00:00:00:00", kind: .bthome, name: nil, bindkey: nil)
        }
        #expect(throws: UseCaseError("invalid bindkey: expected 32 hex digits, got 4 characters")) {
            try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: "abcd")
        }
        #expect(throws: UseCaseError("a bindkey is only for BTHome buttons")) {
            try cases.add(address: Self.address, kind: .itag, name: nil, bindkey: Self.key)
        }
        #expect(throws: UseCaseError.self) {
            try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: Self.key, removeBindkey: true)
        }
        #expect(try cases.list().buttons.isEmpty)
        #expect(await drained(bus, stream).isEmpty)
    }

    @Test("add, map and remove publish settingsChanged; a failed remove does not")
    func publishes() async throws {
        let bus = EventBus()
        let stream = bus.subscribe()
        let (cases, _) = try useCases(events: bus)
        _ = try cases.add(address: Self.address, kind: .itag, name: nil, bindkey: nil)
        _ = try cases.map(address: Self.address, .init(noDouble: true))
        #expect(try cases.remove(address: Self.address.lowercased()) == Self.address)
        #expect(throws: UseCaseError.notFound("no button \(Self.address)")) { try cases.remove(address: Self.address) }
        #expect(await drained(bus, stream) == [.settingsChanged, .settingsChanged, .settingsChanged])
    }

    @Test("map changes only the gestures given; double presses off and on again; unknown and invalid addresses refused")
    func map() throws {
        let (cases, _) = try useCases()
        _ = try cases.add(address: Self.address, kind: .hid, name: "Shutter", bindkey: nil)
        var button = try cases.map(address: Self.address, .init(hold: .skip, noDouble: true))
        #expect(button.mapping.single == .take && button.mapping.hold == .skip && button.mapping.noDouble)
        #expect(button.mapping.summary == "single → take, double → off, hold → skip")
        button = try cases.map(address: Self.address, .init(double: ButtonAction.none, noDouble: false))
        #expect(button.mapping.summary == "single → take, double → none, hold → skip")
        #expect(throws: UseCaseError.notFound("no button A4:C1:38:8D:18:B3")) { try cases.map(address: "a4:c1:38:8d:18:b3", .init()) }
        #expect(throws: UseCaseError("invalid address 'nope': expected six pairs of hex digits like AA:BB:CC:DD:EE:FF")) {
            try cases.map(address: "nope", .init())
        }
    }

    @Test("rows that cannot be used are listed with their reason, never as buttons, and can be removed")
    func unusableRows() throws {
        let (cases, database) = try useCases()
        _ = try cases.add(address: Self.address, kind: .bthome, name: nil, bindkey: nil)
        // Written by hand or by an older version: an unknown kind, and the all-zero address.
        let pool = try DatabasePool(path: database.path)
        try pool.write { db in
            try db.execute(sql: "INSERT INTO button (address, kind, name, bindkey, mapping, added_at) VALUES ('11:22:33:44:55:66', 'flic', 'x', NULL, '{}', 1)")
            try db.execute(sql: "INSERT INTO button (address, kind, name, bindkey, mapping, added_at) VALUES ('00:00:00:00:00:00', 'itag', 'z', NULL, ?, 2)",
                           arguments: [String(decoding: try JSONEncoder().encode(ButtonMapping()), as: UTF8.self)])
        }
        let (buttons, unusable) = try cases.list()
        #expect(buttons.map(\.address) == [Self.address])
        #expect(unusable.map(\.address) == ["11:22:33:44:55:66", "00:00:00:00:00:00"])
        #expect(unusable.first?.reason == "unknown kind")
        #expect(unusable.first?.json.text == #"{"address":"11:22:33:44:55:66","unusable":"unknown kind"}"#)
        // A well-formed address that is refused today can still be removed; a malformed one is refused.
        #expect(try cases.remove(address: "00-00-00-00-00-00") == "00:00:00:00:00:00")
        #expect(throws: UseCaseError("invalid address 'zz': expected six pairs of hex digits like AA:BB:CC:DD:EE:FF")) {
            try cases.remove(address: "zz")
        }
        #expect(try cases.list().unusable.count == 1)
    }

    @Test("scan candidates: BTHome by service data, iTag and HID by service, connected remotes last, one per address")
    func candidates() {
        let now = Date()
        func advert(_ address: String, rssi: Int?, serviceData: [String: [UInt8]] = [:], uuids: [String] = []) -> BLEAdvert {
            BLEAdvert(address: address, name: nil, rssi: rssi, serviceData: serviceData, manufacturerData: [:], uuids: uuids, receivedAt: now)
        }
        let found = ButtonUseCases.candidates(
            adverts: [
                advert("AA:AA:AA:AA:AA:01", rssi: -80, serviceData: [BLEAdvert.bthomeUUID: [0x40]]),
                advert("AA:AA:AA:AA:AA:02", rssi: -50, uuids: ["0000FFE0-0000-1000-8000-00805f9b34fb"]),
                advert("AA:AA:AA:AA:AA:03", rssi: -40, uuids: ["0000180f-0000-1000-8000-00805f9b34fb"]), // battery only
                advert("AA:AA:AA:AA:AA:04", rssi: -60, uuids: ["00001812-0000-1000-8000-00805f9b34fb"]),
            ],
            remotes: [("AA:AA:AA:AA:AA:04", "Shutter"), ("AA:AA:AA:AA:AA:05", "Remote"), ("AA:AA:AA:AA:AA:05", "Remote")])
        #expect(found.map(\.address) == ["AA:AA:AA:AA:AA:02", "AA:AA:AA:AA:AA:04", "AA:AA:AA:AA:AA:01", "AA:AA:AA:AA:AA:05"])
        #expect(found.map(\.kind) == [.itag, .hid, .bthome, .hid])
        #expect(found.map(\.connected) == [false, true, false, true])
        #expect(found.last?.json.text == #"{"kind":"hid","address":"AA:AA:AA:AA:AA:05","name":"Remote","rssi":null,"connected":true}"#)
    }

    @Test("scan candidates: a Flic 2 by its service (any case); a look-alike UUID is not one")
    func flic2Candidate() {
        let now = Date()
        func advert(_ address: String, _ uuid: String) -> BLEAdvert {
            BLEAdvert(address: address, name: "F2", rssi: -55, serviceData: [:], manufacturerData: [:], uuids: [uuid], receivedAt: now)
        }
        let found = ButtonUseCases.candidates(adverts: [
            advert("80:E4:DA:70:12:34", "00420000-8F59-4420-870D-84F3B617E493"),
            advert("80:E4:DA:70:12:35", "00420001-8f59-4420-870d-84f3b617e493"),  // a characteristic's UUID, not the service
            advert("80:E4:DA:70:12:36", "00c90000-2cbd-4f2a-a725-5ccd960ffb7d"),  // a Flic Twist: another protocol
        ], remotes: [])
        #expect(found.map(\.address) == ["80:E4:DA:70:12:34"])
        #expect(found.map(\.kind) == [.flic2])
    }

    /// A scanner that hears what it is told (or fails as BlueZ's absence does), and records what it was asked.
    final class ListScanner: ButtonScanner, @unchecked Sendable {
        let heard: [BLEAdvert]
        let remotes: [(address: String, name: String?)]
        let failure: UseCaseError?
        private(set) var asked: (seconds: Int, keeping: Int)?

        init(heard: [BLEAdvert] = [], remotes: [(address: String, name: String?)] = [], failure: UseCaseError? = nil) {
            self.heard = heard
            self.remotes = remotes
            self.failure = failure
        }

        func adverts(seconds: Int, keeping: Int) async throws -> [BLEAdvert] {
            asked = (seconds, keeping)
            if let failure { throw failure }
            var sightings = AdvertSightings(capacity: keeping)
            heard.forEach { sightings.add($0) }
            return sightings.adverts
        }

        func connectedRemotes() -> [(address: String, name: String?)] { remotes }
    }

    @Test("scan goes through the scanner port: its adverts and remotes become candidates; its one-line failure is the scan's")
    func scanThroughPort() async throws {
        let now = Date()
        let shelly = BLEAdvert(address: "3C:2E:F5:00:11:22", name: "SBBT", rssi: -60, serviceData: [BLEAdvert.bthomeUUID: [0x44]],
                               manufacturerData: [:], uuids: [], receivedAt: now)
        let tag = BLEAdvert(address: "FF:FF:10:00:00:01", name: "iTAG", rssi: -75, serviceData: [:], manufacturerData: [:],
                            uuids: ["0000ffe0-0000-1000-8000-00805f9b34fb"], receivedAt: now)
        let speaker = BLEAdvert(address: "10:00:00:00:00:09", name: "speaker", rssi: -40, serviceData: [:], manufacturerData: [:],
                                uuids: [], receivedAt: now)
        let scanner = ListScanner(heard: [shelly, tag, speaker, tag], remotes: [("AA:AA:AA:AA:AA:05", "Remote")])
        let found = try await ButtonUseCases.scan(seconds: 7, with: scanner)
        #expect(scanner.asked?.seconds == 7)
        #expect(scanner.asked?.keeping == 512)
        #expect(found.map(\.address) == ["3C:2E:F5:00:11:22", "FF:FF:10:00:00:01", "AA:AA:AA:AA:AA:05"])
        #expect(found.map(\.kind) == [.bthome, .itag, .hid])
        let down = ListScanner(failure: .unavailable("cannot reach BlueZ on the system bus — is bluetoothd running?"))
        await #expect(throws: UseCaseError.unavailable("cannot reach BlueZ on the system bus — is bluetoothd running?")) {
            try await ButtonUseCases.scan(seconds: 3, with: down)
        }
    }
}
