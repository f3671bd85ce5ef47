import Foundation

/// The kinds of button DoseTap understands (design.md §3.3).
public enum ButtonKind: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// BTHome v2 advertisements (Shelly BLU Button1 and friends).
    case bthome
    /// iTag-style GATT buttons (characteristic 0xFFE1 notifications).
    case itag
    /// BLE HID remotes (camera shutters), read through evdev.
    case hid
}

/// A button the person added. Only these can act: a stranger's button in range does nothing.
public struct ButtonConfig: Sendable, Equatable, Hashable, Codable {
    /// "AA:BB:CC:DD:EE:FF", upper case.
    public var address: String
    public var kind: ButtonKind
    public var name: String
    /// 32 hex digits (BTHome encryption), or nil.
    public var bindkey: String?
    public var mapping: ButtonMapping

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(address: String, kind: ButtonKind, name: String? = nil, bindkey: String? = nil,
                mapping: ButtonMapping = ButtonMapping()) throws(Invalid) {
        guard let normalized = Self.normalize(address: address) else {
            throw Invalid(description: "invalid address '\(address)': expected six hex pairs like AA:BB:CC:DD:EE:FF")
        }
        if let bindkey {
            guard bindkey.count == 32, bindkey.allSatisfy(\.isHexDigit) else {
                throw Invalid(description: "invalid bindkey: expected 32 hex digits (got \(bindkey.count) characters)")
            }
            guard kind == .bthome else {
                throw Invalid(description: "a bindkey is only for BTHome buttons")
            }
        }
        let trimmed = name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard trimmed.count <= 64, !trimmed.contains(where: { $0.isNewline }) else {
            throw Invalid(description: "invalid name: at most 64 characters on one line")
        }
        self.address = normalized
        self.kind = kind
        self.name = trimmed.isEmpty ? "\(kind.rawValue)-\(normalized.suffix(5).replacingOccurrences(of: ":", with: ""))" : trimmed
        self.bindkey = bindkey?.lowercased()
        self.mapping = mapping
    }

    /// "aa-bb-cc-dd-ee-ff" or "AA:BB:…" → "AA:BB:CC:DD:EE:FF"; nil for anything else.
    public static func normalize(address: String) -> String? {
        let parts = address.split(separator: ":", omittingEmptySubsequences: false).count == 6
            ? address.split(separator: ":", omittingEmptySubsequences: false)
            : address.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else { return nil }
        return parts.map { $0.uppercased() }.joined(separator: ":")
    }

    /// A battery sample's power-source name: "button:<name>".
    public var powerSourceName: String { "button:\(name)" }
}
