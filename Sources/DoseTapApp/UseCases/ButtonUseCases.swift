import DoseTapCore
import DoseTapStore
import Foundation
import Logging

/// Button management as every face does it: add (with the bindkey rules), list, remove, map, scan, and
/// watching the pipeline without acting. Only added buttons can act (the allowlist); an address is read
/// through Core's `BluetoothAddress`, a bindkey through `HexBytes` (in `ButtonConfig`). A change to the
/// allowlist is published as `.settingsChanged`.
public struct ButtonUseCases: Sendable {
    /// Addresses a scan keeps: a crowded room has dozens; more is a transmitter rotating random ones.
    static let scanKept = 512
    private let store: DataStore
    private let events: EventBus?

    public init(store: DataStore, events: EventBus? = nil) {
        self.store = store
        self.events = events
    }

    /// What a repeated `add` did with the stored bindkey. `nil` in `AddResult` means nothing to say
    /// (a new button, no stored key, or the same key given again).
    public enum KeyChange: Sendable, Equatable, CustomStringConvertible {
        /// No new key given: the stored one stays (never dropped by leaving the key out).
        case kept
        /// Removed on request: plaintext adverts act now.
        case removed
        /// A different key given.
        case replaced
        /// The button is no longer BTHome: its key cannot stay.
        case dropped

        public var description: String {
            switch self {
            case .kept: "Kept its bindkey (--bindkey KEY replaces it, --remove-bindkey removes it)."
            case .removed: "Removed its bindkey: plaintext adverts from it act now."
            case .replaced: "Replaced its bindkey."
            case .dropped: "Its bindkey was dropped: only BTHome buttons have one."
            }
        }
    }

    public struct AddResult: Sendable, Equatable {
        /// The button as saved.
        public var button: ButtonConfig
        /// It was added before: its mapping is kept.
        public var updated: Bool
        public var keyChange: KeyChange?
    }

    /// Adds a button, or updates one added before (keeping its mapping). A stored bindkey stays unless
    /// `bindkey` gives a new one or `removeBindkey` removes it; the result says which.
    /// A Flic 2 comes with the `pairing` just made with it (40 hex digits; `Flic2Pairer`): a new pairing replaces
    /// the stored one, and its events start afresh.
    public func add(address: String, kind: ButtonKind, name: String?, bindkey: String?,
                    removeBindkey: Bool = false, pairing: String? = nil) throws -> AddResult {
        if bindkey != nil && removeBindkey {
            throw UseCaseError("a new bindkey and removing the bindkey exclude each other")
        }
        do { _ = try ButtonConfig(address: address, kind: kind, name: name, bindkey: bindkey, pairing: pairing) } catch {
            throw UseCaseError(error.description)
        }
        let repository = try repository()
        let existing = (try? repository.find(address: address)) ?? nil
        var key = bindkey
        var change: KeyChange?
        if let stored = existing?.bindkey {
            if removeBindkey {
                change = .removed
            } else if bindkey == nil {
                if kind == .bthome {
                    key = stored
                    change = .kept
                } else {
                    change = .dropped
                }
            } else if bindkey?.lowercased() != stored {
                change = .replaced
            }
        }
        var button: ButtonConfig
        do { button = try ButtonConfig(address: address, kind: kind, name: name, bindkey: key, pairing: pairing) } catch {
            throw UseCaseError(error.description)
        }
        if let existing { button.mapping = existing.mapping }
        try save(button, in: repository)
        return AddResult(button: button, updated: existing != nil, keyChange: change)
    }

    /// The usable buttons and the rows that cannot be used (which never act), in the order they were added.
    public func list() throws -> (buttons: [ButtonConfig], unusable: [UnusableButton]) {
        try repository().load()
    }

    /// Removes a button; returns its address as stored. A well-formed address an older version accepted
    /// (now refused: all-zero, broadcast, multicast) can still be removed.
    @discardableResult
    public func remove(address: String) throws -> String {
        guard let spelled = BluetoothAddress.canonicalSpelling(address) else {
            throw UseCaseError("invalid address '\(DisplayText.escaped(address, maxLength: 40))': \(BluetoothAddress.Invalid.syntax)")
        }
        guard try repository().remove(address: address) else { throw UseCaseError.notFound("no button \(spelled)") }
        events?.publish(.settingsChanged)
        return spelled
    }

    /// A change of a button's mapping: nil leaves a gesture as it is.
    public struct MappingChange: Sendable, Equatable {
        public var single: ButtonAction?
        public var double: ButtonAction?
        public var hold: ButtonAction?
        /// true: no double press (single presses act at once); false: recognise double presses; nil: as is.
        public var noDouble: Bool?

        public init(single: ButtonAction? = nil, double: ButtonAction? = nil, hold: ButtonAction? = nil, noDouble: Bool? = nil) {
            self.single = single
            self.double = double
            self.hold = hold
            self.noDouble = noDouble
        }
    }

    /// Changes what a button's gestures do; returns the button as saved.
    public func map(address: String, _ change: MappingChange) throws -> ButtonConfig {
        let repository = try repository()
        let canonical: String
        do { canonical = try BluetoothAddress(parsing: address).description } catch {
            throw UseCaseError("invalid address '\(DisplayText.escaped(address, maxLength: 40))': \(error)")
        }
        guard var button = (try? repository.find(address: address)) ?? nil else { throw UseCaseError.notFound("no button \(canonical)") }
        if let single = change.single { button.mapping.single = single }
        if let double = change.double { button.mapping.double = double }
        if let hold = change.hold { button.mapping.hold = hold }
        if let noDouble = change.noDouble { button.mapping.noDouble = noDouble }
        try save(button, in: repository)
        return button
    }

    /// A button seen nearby by a scan.
    public struct Candidate: Sendable, Equatable {
        public var kind: ButtonKind
        public var address: String
        public var name: String?
        public var rssi: Int?
        /// A HID remote already connected (it no longer advertises; the kernel has its input nodes).
        public var connected: Bool

        public init(kind: ButtonKind, address: String, name: String?, rssi: Int?, connected: Bool) {
            self.kind = kind
            self.address = address
            self.name = name
            self.rssi = rssi
            self.connected = connected
        }
    }

    /// Listens for buttons for `seconds` through `scanner` (BlueZ discovery on a real machine), and adds the
    /// HID remotes the kernel already has. Errors: the scanner's one line ("cannot reach BlueZ on the system
    /// bus — is bluetoothd running? …", "scan failed: …").
    public static func scan(seconds: Int, with scanner: any ButtonScanner) async throws -> [Candidate] {
        candidates(adverts: try await scanner.adverts(seconds: seconds, keeping: scanKept), remotes: scanner.connectedRemotes())
    }

    /// The buttons among merged adverts (one per address) and connected HID remotes: BTHome by its service
    /// data, Flic 2 by its service (it advertises it in pairing mode and when it wants its app), iTag by service
    /// 0xFFE0, HID by service 0x1812. One line per address (a shutter has two input
    /// nodes); strongest first, connected ones last.
    public static func candidates(adverts: [BLEAdvert], remotes: [(address: String, name: String?)]) -> [Candidate] {
        var candidates = adverts.compactMap { a -> Candidate? in
            let kind: ButtonKind
            if a.serviceData[BLEAdvert.bthomeUUID] != nil { kind = .bthome }
            else if a.uuids.contains(where: { $0.lowercased() == GATTFlic2.serviceUUID }) { kind = .flic2 }
            else if a.uuids.contains(where: { $0.lowercased().hasPrefix("0000ffe0") }) { kind = .itag }
            else if a.uuids.contains(where: { $0.lowercased().hasPrefix("00001812") }) { kind = .hid }
            else { return nil }
            return Candidate(kind: kind, address: a.address, name: a.name, rssi: a.rssi, connected: false)
        }
        for remote in remotes {
            if let i = candidates.firstIndex(where: { $0.address == remote.address }) {
                candidates[i].kind = .hid
                candidates[i].connected = true
            } else if !candidates.contains(where: { $0.address == remote.address }) {
                candidates.append(Candidate(kind: .hid, address: remote.address, name: remote.name, rssi: nil, connected: true))
            }
        }
        var unique: [String: Candidate] = [:]
        for c in candidates where unique[c.address] == nil { unique[c.address] = c }
        return unique.values.sorted { ($0.rssi ?? -999, $1.address) > ($1.rssi ?? -999, $0.address) }
    }

    public func repository() throws -> ButtonRepository {
        ButtonRepository(database: try store.open())
    }

    private func save(_ button: ButtonConfig, in repository: ButtonRepository) throws {
        do { try repository.save(button) } catch { throw UseCaseError.unavailable("could not save: \(error)") }
        events?.publish(.settingsChanged)
    }
}
