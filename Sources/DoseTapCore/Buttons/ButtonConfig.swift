import Foundation

/// The kinds of button DoseTap understands (design.md §3.3).
public enum ButtonKind: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// BTHome v2 advertisements (Shelly BLU Button1 and friends).
    case bthome
    /// iTag-style GATT buttons (characteristic 0xFFE1 notifications).
    case itag
    /// BLE HID remotes (camera shutters), read through evdev.
    case hid
    /// Flic 2 buttons: their own authenticated protocol over GATT, paired with the button (`Flic2Session`).
    case flic2
}

/// A button the person added. Only these can act: a stranger's button in range does nothing.
public struct ButtonConfig: Sendable, Equatable, Hashable, Codable {
    /// "AA:BB:CC:DD:EE:FF", upper case.
    public var address: String
    public var kind: ButtonKind
    public var name: String
    /// 32 hex digits (BTHome encryption), or nil.
    public var bindkey: String?
    /// A Flic 2's pairing (40 hex digits: its identifier and key), made by pairing with the button. Like a
    /// bindkey it is never printed or logged; a Flic 2 without a usable one never acts.
    public var pairing: String?
    public var mapping: ButtonMapping

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public init(address: String, kind: ButtonKind, name: String? = nil, bindkey: String? = nil, pairing: String? = nil,
                mapping: ButtonMapping = ButtonMapping()) throws(Invalid) {
        let normalized: String
        do { normalized = try BluetoothAddress(parsing: address).description } catch {
            throw Invalid(description: "invalid address '\(DisplayText.escaped(address, maxLength: 40))': \(error)")
        }
        if let bindkey {
            if case .failure(let problem) = Self.parseBindkey(bindkey) {
                throw Invalid(description: problem.description)
            }
            guard kind == .bthome else {
                throw Invalid(description: "a bindkey is only for BTHome buttons")
            }
        }
        if let pairing {
            guard kind == .flic2 else { throw Invalid(description: "a pairing is only for Flic 2 buttons") }
            if case .failure(let problem) = Self.parsePairing(pairing) { throw problem }
        } else if kind == .flic2 {
            throw Invalid(description: "a Flic 2 button is added by pairing with it (dosetap button add --kind flic2)")
        }
        let trimmed = name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard trimmed.count <= 64, !trimmed.contains(where: { $0.isNewline }) else {
            throw Invalid(description: "invalid name: at most 64 characters on one line")
        }
        self.address = normalized
        self.kind = kind
        self.name = trimmed.isEmpty ? "\(kind.rawValue)-\(normalized.suffix(5).replacingOccurrences(of: ":", with: ""))" : trimmed
        self.bindkey = bindkey?.lowercased()
        self.pairing = pairing?.lowercased()
        self.mapping = mapping
    }

    /// A BTHome bindkey's 16 bytes from its 32 hex digits (ASCII only, any case), or the one-line reason
    /// it is not one.
    public static func parseBindkey(_ text: String) -> Result<[UInt8], Invalid> {
        do { return .success(try HexBytes.parse(text, count: 16)) } catch {
            return .failure(Invalid(description: "invalid bindkey: \(error)"))
        }
    }

    /// This button's bindkey as bytes: nil without one, `.failure` when the stored text is not a key
    /// (a button must then never act: it is not run without its key).
    public var bindkeyBytes: Result<[UInt8], Invalid>? {
        bindkey.map(Self.parseBindkey)
    }

    /// A Flic 2 pairing from its 40 hex digits, or the one-line reason it is not one (never showing it).
    public static func parsePairing(_ text: String) -> Result<Flic2Pairing, Invalid> {
        do { return .success(try Flic2Pairing(hex: text)) } catch {
            return .failure(Invalid(description: "the stored Flic 2 pairing is not 40 hex digits"))
        }
    }

    /// This button's Flic 2 pairing: nil without one, `.failure` when the stored text is not one.
    public var flic2Pairing: Result<Flic2Pairing, Invalid>? {
        pairing.map(Self.parsePairing)
    }

    /// A battery sample's power-source name: "button:<name>".
    public var powerSourceName: String { "button:\(name)" }
}
