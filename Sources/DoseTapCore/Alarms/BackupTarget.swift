import Foundation

/// A backup target that cannot be used; the message says what is expected.
public struct BackupError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Who rings when this machine cannot (#12): another agent of the household, a person's phone through an
/// ntfy-compatible topic, or an automated phone call.
public enum BackupTarget: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// `device:NAME` — another `dosetap agent` of the household.
    case device(String)
    /// `push:URL` — an ntfy-compatible topic URL.
    case push(String)
    /// `phone:NUMBER` — kept in E.164 (`+15551234567`).
    case phone(String)

    public static let maximumDeviceName = 64

    /// Parses `device:NAME`, `push:URL` or `phone:NUMBER` (spaces, dashes, dots and parentheses in a number
    /// are fine; ten digits are a North American number).
    public init(parsing text: String) throws(BackupError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw BackupError("invalid target '\(DisplayText.escaped(text, maxLength: 80))': use device:NAME, push:URL or phone:NUMBER")
        }
        let kind = text[..<colon]
        let value = String(text[text.index(after: colon)...])
        switch kind {
        case "device":
            self = .device(try Self.deviceName(value))
        case "push":
            self = .push(try Self.topicURL(value))
        case "phone":
            self = .phone(try Self.e164(value))
        default:
            throw BackupError("invalid target '\(DisplayText.escaped(text, maxLength: 80))': use device:NAME, push:URL or phone:NUMBER")
        }
    }

    /// The stored and typed form: `device:bedroom-pi`, `push:https://ntfy.sh/jen`, `phone:+15551234567`.
    public var description: String {
        switch self {
        case .device(let name): "device:\(name)"
        case .push(let url): "push:\(url)"
        case .phone(let number): "phone:\(number)"
        }
    }

    /// How a person reads it: `bedroom-pi`, `jen` (the topic), `(555) 123-4567` or `+44 …` in E.164.
    public var displayName: String {
        switch self {
        case .device(let name): name
        case .push(let url): URL(string: url)?.lastPathComponent ?? url
        case .phone(let number): Self.formatted(number)
        }
    }

    /// The target as the household may read it in a plan: a push URL without its user, password, query or
    /// fragment (where ntfy tokens go: `?auth=`, `user:token@`), which stay on this machine. Other targets as
    /// they are.
    public var published: BackupTarget {
        guard case .push(let url) = self, url.contains(where: { "@?#".contains($0) }) else { return self }
        guard var parts = URLComponents(string: url), let scheme = parts.scheme, let host = parts.host else {
            // Cannot be taken apart: publish nothing of it but a name that cannot reach anything.
            return .push("https://redacted.invalid/redacted")
        }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return .push(parts.string ?? "\(scheme)://\(host)/redacted")
    }

    /// Whether a push URL is on `server` (`https://ntfy.example.org`, port optional): the same scheme, host and
    /// port. A push token is sent only there.
    public static func sameOrigin(_ url: String, _ server: String) -> Bool {
        func origin(_ text: String) -> (String, String, Int)? {
            guard let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(), scheme == "https" || scheme == "http",
                  let host = parts.host?.lowercased(), !host.isEmpty else { return nil }
            return (scheme, host, parts.port ?? (scheme == "https" ? 443 : 80))
        }
        guard let a = origin(url), let b = origin(server) else { return false }
        return a == b
    }

    /// The line under a phone target.
    public var sublabel: String? {
        if case .phone = self { return "Calls with automated backup message" }
        return nil
    }

    /// What the preview says it does: "Alarm on bedroom-pi", "Alarm on jen", "Call (555) 123-4567".
    public var action: String {
        if case .phone = self { return "Call \(displayName)" }
        return "Alarm on \(displayName)"
    }

    public var kind: String {
        switch self {
        case .device: "device"
        case .push: "push"
        case .phone: "phone"
        }
    }

    public static func deviceName(_ text: String) throws(BackupError) -> String {
        guard !text.isEmpty, text.count <= maximumDeviceName,
              text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }),
              let first = text.unicodeScalars.first, first.properties.isAlphabetic || ("0"..."9").contains(first) else {
            throw BackupError("invalid device name '\(DisplayText.escaped(text, maxLength: 80))': letters, digits, - _ and ., at most \(maximumDeviceName), as the device's [household] device")
        }
        return text
    }

    static func topicURL(_ text: String) throws(BackupError) -> String {
        guard text.count <= 2048, let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty, !url.lastPathComponent.isEmpty, url.lastPathComponent != "/",
              text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw BackupError("invalid push URL '\(DisplayText.escaped(text, maxLength: 80))': an http(s) topic URL such as https://ntfy.sh/jen")
        }
        return text
    }

    /// E.164: `+` and 8…15 digits. Ten digits (or eleven starting with 1) are a North American number.
    static func e164(_ text: String) throws(BackupError) -> String {
        let allowed = " -.()"
        var digits = ""
        var plus = false
        for (index, scalar) in text.unicodeScalars.enumerated() {
            if scalar == "+", index == 0 { plus = true; continue }
            if ("0"..."9").contains(scalar) { digits.unicodeScalars.append(scalar); continue }
            if allowed.unicodeScalars.contains(scalar) { continue }
            throw BackupError("invalid phone number '\(DisplayText.escaped(text, maxLength: 80))': digits, or + and the country code (+44 20 7946 0958)")
        }
        if !plus, digits.count == 10 { return "+1" + digits }
        if !plus, digits.count == 11, digits.hasPrefix("1") { return "+" + digits }
        guard plus, (8...15).contains(digits.count), !digits.hasPrefix("0") else {
            throw BackupError("invalid phone number '\(DisplayText.escaped(text, maxLength: 80))': ten digits (5551234567), or + and the country code (+44 20 7946 0958)")
        }
        return "+" + digits
    }

    /// "+15551234567" → "(555) 123-4567"; any other country stays in E.164.
    static func formatted(_ number: String) -> String {
        let digits = Array(number.dropFirst())
        guard number.hasPrefix("+1"), digits.count == 11 else { return number }
        let d = String(digits.dropFirst())
        let a = d.prefix(3), b = d.dropFirst(3).prefix(3), c = d.suffix(4)
        return "(\(a)) \(b)-\(c)"
    }
}

/// The cascade's schedule (#12): the first backup 2 minutes after the occurrence, each next one 2 minutes
/// after the previous.
public enum BackupSchedule {
    public static let step: TimeInterval = 120

    /// When each target fires, in order, for an occurrence at `occurrence`.
    public static func slots(_ targets: [BackupTarget], occurrence: Date) -> [(at: Date, target: BackupTarget)] {
        targets.enumerated().map { (occurrence.addingTimeInterval(step * Double($0.offset + 1)), $0.element) }
    }
}

/// Kept as its text (`device:NAME`, `push:URL`, `phone:NUMBER`), read back through `init(parsing:)`.
extension BackupTarget: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try BackupTarget(parsing: text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a backup target: \(error)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
